"""The GitHub webhook: ``/perf`` commands in pull-request comments (see tracker.github)."""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, BackgroundTasks, Depends, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session, sessionmaker

from tracker.github.client import GithubClient, client_from_settings
from tracker.github.events import MalformedDelivery, read_event
from tracker.github.inbox import process_pending, receive
from tracker.github.outbox import flush_outbox
from tracker.github.webhook import signature_valid
from tracker.observability.metrics import record_webhook
from tracker.settings import Settings
from web.deps import SettingsDep, WriteSessionDep, get_state
from web.metrics import webhook_outcome
from web.schemas.errors import errors
from web.state import AppState
from wire import unencodable_text

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
        202: {"description": "Stored, to be carried out right after this answer; or not for the bot"},
        **errors(
            400,
            401,
            413,
            422,
            503,
            notes={
                400: "Not a JSON object (or a form with a JSON payload), a payload the bot cannot "
                "read (text that is not Unicode included), or no X-GitHub-Delivery header",
                401: "Missing or wrong X-Hub-Signature-256",
                422: "A NUL character in the query string",
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
    content_type: Annotated[str, Header()] = "",
    x_github_event: Annotated[str, Header()] = "",
    x_github_delivery: Annotated[str, Header()] = "",
    x_hub_signature_256: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    """Verify and store a GitHub delivery (``issue_comment`` and ``pull_request`` on PRs, a
    ``check_run``'s Re-run, ``ping``);
    the bot carries it out after the answer, so GitHub never waits on GitHub."""
    if settings.github_webhook_secret is None:
        return _answer(503, "the GitHub webhook is not set up: configure PERFTRACK_GITHUB_WEBHOOK_SECRET")
    # The signature is checked on the raw bytes before anything parses them.
    if not signature_valid(settings.github_webhook_secret.get_secret_value(), body, x_hub_signature_256):
        return _answer(401, "missing or wrong X-Hub-Signature-256")
    payload = _payload(body, content_type)
    if not isinstance(payload, dict):
        return _answer(400, "the body is not a JSON object (nor a form whose payload field is one)")
    if not x_github_delivery:
        return _answer(400, "a delivery needs an X-GitHub-Delivery header")
    if len(x_github_delivery) > _MAX_DELIVERY_ID:
        return _answer(400, f"X-GitHub-Delivery is over {_MAX_DELIVERY_ID} characters")
    unsound = unencodable_text(payload)  # GitHub never sends one; nothing that holds one is stored
    if unsound is not None:
        return _answer(400, f"the {x_github_event} payload cannot be read: {unsound}")
    try:
        event = read_event(x_github_event, payload)
    except MalformedDelivery as error:
        return _answer(400, f"the {x_github_event} payload cannot be read: {error}")
    if event is not None and client is None:
        return _answer(
            503, "GitHub credentials are not set up: configure a GitHub App or PERFTRACK_GITHUB_TOKEN"
        )
    action = payload.get("action")
    receipt = receive(
        session=session,
        settings=settings,
        delivery_id=x_github_delivery,
        event_name=x_github_event,
        action=action if isinstance(action, str) else "",
        event=event,
    )
    if receipt.pending_id is not None and client is not None:
        background.add_task(_carry_out, state, settings, client, receipt.pending_id)
    return _answer(receipt.status_code, receipt.outcome)


def _payload(body: bytes, content_type: str) -> Any:
    """The delivery's JSON: the body, or the ``payload`` field of a form-encoded one."""
    try:
        if content_type.split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded":
            fields = parse_qs(body.decode("utf-8"), strict_parsing=True, max_num_fields=16)
            values = fields.get("payload", [])
            return json.loads(values[0]) if len(values) == 1 else None
        return json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


def _answer(code: int, outcome: str) -> JSONResponse:
    record_webhook(webhook_outcome(code, outcome))
    key = "outcome" if code < 400 else "detail"
    return JSONResponse({key: outcome}, status_code=code)


def _carry_out(state: AppState, settings: Settings, client: GithubClient, row_id: int) -> None:
    """After the answer: carry out the delivery, then send what it queued (the scheduler retries)."""
    try:
        process_pending(
            sessions=state.sessions,
            read_sessions=state.read_sessions,
            settings=settings,
            client=client,
            only=row_id,
        )
        _flush(state.sessions, settings, client)
    except Exception:  # a background task must not fail the request; the scheduler tries again
        logger.exception("GitHub delivery %d: carrying it out after the answer failed", row_id)


def _flush(sessions: sessionmaker[Session], settings: Settings, client: GithubClient) -> None:
    with sessions() as session:
        flush_outbox(session=session, settings=settings, client=client)


__all__ = ["get_github_client", "router"]
