"""Schemathesis over every operation of the OpenAPI schema: no 5xx, every answer as declared.

Bounded for the normal suite (a few dozen examples per operation and mode, seeded, no shrinking);
``python -m tests.web.schemathesis_run`` runs the longer campaign and prints its figures.
"""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from tests.web.app_routes import Guard, app_routes
from tests.web.schemathesis_run import WEBHOOK_SECRET, Tokens, run_campaign
from tracker.settings import Settings
from web.app import create_app

EXAMPLES_PER_OPERATION = 25


@pytest.fixture
def fuzzed_app(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> FastAPI:
    """The app on the test's transaction, with the webhook set up (so it answers 401, not 503)."""
    configured = settings.model_copy(update={"github_webhook_secret": SecretStr(WEBHOOK_SECRET)})
    return create_app(configured, engine, sessions=sessions, prepare=False)


def test_every_operation_answers_as_its_schema_declares(
    fuzzed_app: FastAPI, admin_token: str, runner_token: str
) -> None:
    figures = run_campaign(
        fuzzed_app,
        Tokens(admin=admin_token, runner=runner_token),
        max_examples=EXAMPLES_PER_OPERATION,
        seed_value=20260519,
    )
    guarded = {route.path for route in app_routes(fuzzed_app) if route.guard in (Guard.ADMIN, Guard.RUNNER)}
    assert figures.operations >= len(guarded)
    assert figures.examples >= figures.operations * 2
    assert not [status for status in figures.statuses if status >= 500]
    assert not figures.failures, figures.summary() + "\n\n" + "\n\n".join(figures.failures.values())
    # The tokens worked: handlers ran past authentication, and answered more than auth failures.
    assert set(figures.statuses) - {401, 403}
