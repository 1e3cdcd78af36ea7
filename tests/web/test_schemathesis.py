"""The fuzz campaigns, bounded for the normal suite (seeded, no shrinking): every OpenAPI operation,
the signed GitHub webhook, the HTML pages, the runner's stateful sequences and schemathesis's own
linked sequences. No 5xx anywhere.

``python -m tests.web.schemathesis_run`` runs the longer campaigns and prints their figures.
"""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from tests.factories import regression_payloads
from tests.tracker.notifications.receiver import Receiver
from tests.web.app_routes import Guard, app_routes, page_routes
from tests.web.campaign import Figures, Tokens
from tests.web.fuzz_lifecycle import run_lifecycle_campaign
from tests.web.fuzz_openapi import run_campaign
from tests.web.fuzz_pages import CSRF_INPUT, page_values, run_pages_campaign
from tests.web.fuzz_stateful import run_stateful_campaign
from tests.web.fuzz_webhook import run_webhook_campaign
from tracker.access.tokens import create_token
from tracker.enums import TokenRole
from tracker.settings import Settings
from web.api.notifications import notification_client
from web.app import create_app

pytestmark = pytest.mark.slow  # fuzz campaigns against the whole API: a minute of CPU

SEED = 20260519
EXAMPLES_PER_OPERATION = 15
WEBHOOK_DELIVERIES = 150
PAGE_EXAMPLES = 15
SEQUENCES = 25
WEBHOOK_SECRET = "campaign-webhook-secret"


@pytest.fixture
def fuzzed_app(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> FastAPI:
    """The app on the test's transaction, with the webhook set up (so it answers 401, not 503)."""
    configured = settings.model_copy(
        update={
            "github_webhook_secret": SecretStr(WEBHOOK_SECRET),
            "public_url": "https://perftrack.example.org",
        }
    )
    app = create_app(configured, engine, sessions=sessions, prepare=False)
    # A subscription the campaign creates and tests reaches a local receiver, never the network.
    app.dependency_overrides[notification_client] = Receiver().client
    return app


def _no_findings(figures: Figures) -> None:
    assert not figures.server_errors(), figures.summary()
    assert not figures.failures, figures.summary() + "\n\n" + "\n\n".join(figures.failures.values())


def test_every_operation_answers_as_its_schema_declares(
    fuzzed_app: FastAPI, admin_token: str, runner_token: str
) -> None:
    figures = run_campaign(
        fuzzed_app,
        Tokens(admin=admin_token, runner=runner_token),
        max_examples=EXAMPLES_PER_OPERATION,
        seed_value=SEED,
    )
    guarded = {route.path for route in app_routes(fuzzed_app) if route.guard in (Guard.ADMIN, Guard.RUNNER)}
    assert figures.operations >= len(guarded)
    assert figures.examples >= figures.operations * 2
    _no_findings(figures)
    # The tokens worked: handlers ran past authentication, and answered more than auth failures.
    assert set(figures.statuses) - {401, 403}


def test_signed_webhook_deliveries_never_fail_the_server(fuzzed_app: FastAPI) -> None:
    figures = run_webhook_campaign(
        fuzzed_app, secret=WEBHOOK_SECRET, max_examples=WEBHOOK_DELIVERIES, seed_value=SEED
    )
    assert figures.examples == WEBHOOK_DELIVERIES
    # The signatures held: deliveries reached the handler and were handled, not refused.
    assert 401 not in figures.statuses
    assert figures.statuses[200] + figures.statuses[202] > 0
    _no_findings(figures)


def test_every_page_answers_html_or_a_redirect(
    fuzzed_app: FastAPI, admin_token: str, runner_token: str
) -> None:
    with TestClient(fuzzed_app) as client:  # runs to show, so the real ids lead somewhere
        for body in regression_payloads():
            stored = client.post(
                "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
            )
            assert stored.status_code == 201, stored.text
    figures = run_pages_campaign(
        fuzzed_app,
        admin_token,
        page_values(fuzzed_app, admin_token),
        max_examples=PAGE_EXAMPLES,
        seed_value=SEED,
    )
    assert figures.operations == len(page_routes(fuzzed_app))
    assert figures.statuses[200]
    assert figures.statuses[303]
    _no_findings(figures)


def test_runner_sequences_never_fail_the_server(
    fuzzed_app: FastAPI, session: Session, admin_token: str
) -> None:
    runners = {
        name: create_token(session=session, name=name, role=TokenRole.RUNNER).secret
        for name in ("fuzz-runner-1", "fuzz-runner-2", "fuzz-runner-3")
    }
    session.commit()
    figures = run_lifecycle_campaign(
        fuzzed_app,
        Tokens(admin=admin_token, runner="", runners=runners),
        max_examples=SEQUENCES,
        seed_value=SEED,
    )
    # The sequences went the whole way: jobs leased, results stored, runs read.
    assert figures.statuses[201] > 0
    assert figures.operations >= 6
    _no_findings(figures)


def test_linked_sequences_never_fail_the_server(
    fuzzed_app: FastAPI, admin_token: str, runner_token: str
) -> None:
    figures = run_stateful_campaign(
        fuzzed_app,
        Tokens(admin=admin_token, runner=runner_token),
        max_examples=SEQUENCES,
        seed_value=SEED,
    )
    # Schemathesis's inferred links led past the first call: ids read from answers were used.
    assert figures.operations >= 15
    assert figures.statuses[200] > 0
    _no_findings(figures)


def test_a_bad_page_parameter_is_answered_with_a_page(fuzzed_app: FastAPI) -> None:
    # Found by the page campaign: a bad filter or form field was a JSON 422 in the browser.
    with TestClient(fuzzed_app) as client:
        csrf = CSRF_INPUT.search(client.get("/login").text)
        assert csrf is not None
        answers = [
            client.get("/series/qwen-image-t2i-1024/H200?limit=abc"),
            client.post("/login", data={"token": "x" * 300, "csrf_token": csrf.group(1)}),
        ]
    for response in answers:
        assert response.status_code == 422
        assert response.headers["content-type"].startswith("text/html")
