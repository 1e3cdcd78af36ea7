"""``GET /metrics``: Prometheus text format, optionally behind a bearer token; outside the OpenAPI schema."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from tracker.observability.metrics import app_registry
from web.deps import SettingsDep, get_state
from web.state import AppState

router = APIRouter(include_in_schema=False)


def get_registry(request: Request, state: Annotated[AppState, Depends(get_state)]) -> CollectorRegistry:
    """The app's registry (this process' counters and a database collector), made on first use."""
    registry: CollectorRegistry | None = getattr(request.app.state, "metrics_registry", None)
    if registry is None:
        registry = app_registry(state.read_sessions)
        request.app.state.metrics_registry = registry
    return registry


def token_matches(expected: str, authorization: str | None) -> bool:
    """Whether ``Authorization: Bearer <token>`` carries ``expected`` (compared in constant time)."""
    scheme, _, presented = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), expected.encode())


@router.get("/metrics")
def metrics(
    settings: SettingsDep,
    registry: Annotated[CollectorRegistry, Depends(get_registry)],
    authorization: Annotated[str | None, Header()] = None,
) -> Response:
    """Every metric in Prometheus text format (401 without the token when ``metrics_token`` is set)."""
    if settings.metrics_token is not None and not token_matches(
        settings.metrics_token.get_secret_value(), authorization
    ):
        return Response(
            '{"detail": "authorization: /metrics needs the metrics bearer token"}',
            status_code=401,
            media_type="application/json",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def webhook_outcome(code: int, outcome: str) -> str:
    """The metric class of a webhook answer (status code and outcome text of ``web.api.github``)."""
    by_code = {401: "bad_signature", 400: "bad_request", 503: "not_configured"}
    if code in by_code:
        return by_code[code]
    if code >= 400:
        return "error"
    for prefix, name in (
        ("already handled", "duplicate"),
        ("already queued", "duplicate"),
        ("queued", "queued"),
        ("pong", "ping"),
        ("ignored", "ignored"),
        ("refused", "refused"),
        ("invalid command", "rejected"),
        ("rejected", "rejected"),
    ):
        if outcome.startswith(prefix):
            return name
    return "accepted"
