"""The GitHub webhook: ``/perf`` commands in pull-request comments (see tracker.github)."""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from tracker.github.bot import comment_event, handle_comment, handle_pull_request, pull_request_event
from tracker.github.client import GithubClient, GithubError, client_from_settings
from tracker.github.outbox import flush_outbox
from tracker.github.webhook import signature_valid
from tracker.metrics import record_webhook
from tracker.models import GithubDelivery
from tracker.settings import Settings
from web.deps import SettingsDep, WriteSessionDep, get_state
from web.metrics import webhook_outcome
from web.schemas.errors import errors
from web.state import AppState

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/github", tags=["github"])
_MAX_DELIVERY_ID = 64  # github_deliveries.delivery_id is String(64)


async def raw_body(request: Request) -> bytes:
    """The request body exactly as sent: the signature covers these bytes."""
    return await request.body()


def get_github_client(request: Request, settings: SettingsDep) -> GithubClient | None:
    """The app's GitHub client (one per app, so installation tokens are reused); ``None`` without credentials."""
    cached: GithubClient | None = getattr(request.app.state, "github_client", None)
    if cached is None:
        cached = client_from_settings(settings)
        request.app.state.github_client = cached
    return cached


RawBodyDep = Annotated[bytes, Depends(raw_body)]
GithubClientDep = Annotated[GithubClient | None, Depends(get_github_client)]
StateDep = Annotated[AppState, Depends(get_state)]


@router.post(
    "/webhook",
    responses={
        202: {"description": "Event or action the bot does not handle"},
        **errors(
            400,
            401,
            413,
            422,
            502,
            503,
            notes={
                400: "Not a JSON object, or no X-GitHub-Delivery header",
                401: "Missing or wrong X-Hub-Signature-256",
                422: "A NUL character in the query string",
                502: "GitHub did not answer as expected; the delivery may be retried",
                503: "No webhook secret or GitHub credentials configured",
            },
        ),
    },
)
def receive_webhook(
    body: RawBodyDep,
    background: BackgroundTasks,
    session: WriteSessionDep,
    settings: SettingsDep,
    state: StateDep,
    client: GithubClientDep,
    x_github_event: Annotated[str, Header()] = "",
    x_github_delivery: Annotated[str, Header()] = "",
    x_hub_signature_256: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    """Verify, de-duplicate and handle a GitHub delivery (``issue_comment`` and ``pull_request``
    on PRs, ``ping``)."""
    if settings.github_webhook_secret is None:
        return _answer(503, "the GitHub webhook is not set up: configure PERFTRACK_GITHUB_WEBHOOK_SECRET")
    # The signature is checked on the raw bytes before anything parses them.
    if not signature_valid(settings.github_webhook_secret.get_secret_value(), body, x_hub_signature_256):
        return _answer(401, "missing or wrong X-Hub-Signature-256")
    try:
        payload: Any = json.loads(body)
    except ValueError:
        return _answer(400, "the body is not JSON")
    if not isinstance(payload, dict) or not x_github_delivery:
        return _answer(400, "a delivery needs a JSON object body and an X-GitHub-Delivery header")
    if len(x_github_delivery) > _MAX_DELIVERY_ID:
        return _answer(400, f"X-GitHub-Delivery is over {_MAX_DELIVERY_ID} characters")
    if _seen(session, x_github_delivery):
        return _answer(200, "already handled")
    action = str(payload.get("action") or "")
    if x_github_event == "ping":
        return _record(session, x_github_delivery, x_github_event, action, "pong", 200)
    event = comment_event(payload) if x_github_event == "issue_comment" else None
    pushed = pull_request_event(payload) if x_github_event == "pull_request" else None
    if event is None and pushed is None:
        return _record(session, x_github_delivery, x_github_event, action, "ignored", 202)
    if client is None:
        return _answer(
            503, "GitHub credentials are not set up: configure a GitHub App or PERFTRACK_GITHUB_TOKEN"
        )
    try:
        if event is not None:
            outcome = handle_comment(session=session, settings=settings, client=client, event=event)
        else:
            assert pushed is not None
            outcome = handle_pull_request(session=session, settings=settings, client=client, event=pushed)
    except GithubError as error:
        # Not recorded: GitHub may redeliver once GitHub answers again.
        session.rollback()
        logger.warning("GitHub webhook %s: %s", x_github_delivery, error)
        return _answer(502, f"GitHub did not answer as expected: {error}")
    answer = _record(session, x_github_delivery, x_github_event, action, outcome, 200)
    if answer.status_code == 200:
        background.add_task(_flush, state.sessions, settings, client)
    return answer


def _seen(session: Session, delivery_id: str) -> bool:
    return (
        session.scalar(select(GithubDelivery.id).where(GithubDelivery.delivery_id == delivery_id)) is not None
    )


def _record(
    session: Session, delivery_id: str, event: str, action: str, outcome: str, code: int
) -> JSONResponse:
    session.add(
        GithubDelivery(delivery_id=delivery_id, event=event[:64], action=action[:64], outcome=outcome)
    )
    try:
        session.commit()
    except IntegrityError:  # the same delivery, handled concurrently by another worker
        session.rollback()
        return _answer(200, "already handled")
    return _answer(code, outcome)


def _answer(code: int, outcome: str) -> JSONResponse:
    record_webhook(webhook_outcome(code, outcome))
    key = "outcome" if code < 400 else "detail"
    return JSONResponse({key: outcome}, status_code=code)


def _flush(sessions: sessionmaker[Session], settings: Settings, client: GithubClient) -> None:
    try:
        with sessions() as session:
            flush_outbox(session=session, settings=settings, client=client)
    except Exception:  # a background flush must not fail the request; the periodic flush retries
        logger.exception("GitHub outbox flush after a webhook failed")


__all__ = ["get_github_client", "router"]
