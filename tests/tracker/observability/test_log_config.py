"""Structured logs: JSON lines with the caller's context, one access line per request with its id,
and no secret in any line (tokens, Authorization headers, configured secrets, tracebacks)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr, ValidationError
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from tracker.access.tokens import TOKEN_PREFIX
from tracker.observability.log_config import (
    REDACTED,
    configure_from_settings,
    configure_logging,
    request_id,
    secret_values,
)
from tracker.settings import Settings
from web.app import create_app

TOKEN = TOKEN_PREFIX + "Q" * 20 + "-abc_" + "z" * 18  # the shape perftrack issues: pt_ + 43
ADMIN_SECRET = "admin-bootstrap-secret-0123456789"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put the root logger and uvicorn's loggers back as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    access_disabled = logging.getLogger("uvicorn.access").disabled
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("uvicorn.access").disabled = access_disabled


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


@pytest.mark.usefixtures("restore_logging")
def test_json_line_carries_context() -> None:
    stream = io.StringIO()
    configure_logging(log_format="json", stream=stream)
    logging.getLogger("perftrack.test").info(
        "job %d leased", 12, extra={"job_id": 12, "runner": "h200-1", "labels": {"rack": "a"}}
    )
    [entry] = lines(stream)
    assert entry["level"] == "INFO"
    assert entry["logger"] == "perftrack.test"
    assert entry["message"] == "job 12 leased"
    assert entry["timestamp"].endswith("Z")
    assert (entry["job_id"], entry["runner"], entry["labels"]) == (12, "h200-1", {"rack": "a"})
    assert "request_id" not in entry  # outside a request there is none


@pytest.mark.usefixtures("restore_logging")
def test_level_filters_and_second_configure_replaces_the_first() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging(log_format="json", stream=first)
    configure_logging(level="WARNING", log_format="text", stream=second)
    ours = [
        handler for handler in logging.getLogger().handlers if getattr(handler, "_perftrack_handler", False)
    ]
    assert len(ours) == 1
    logger = logging.getLogger("perftrack.test")
    logger.info("quiet")
    logger.warning("loud", extra={"case": "qwen"})
    assert first.getvalue() == ""
    [line] = second.getvalue().splitlines()
    assert " WARNING perftrack.test loud case=qwen" in line


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("log_format", ["json", "text"])
def test_secrets_never_reach_a_line(log_format: Any) -> None:
    stream = io.StringIO()
    configure_logging(log_format=log_format, secrets=[ADMIN_SECRET, "short"], stream=stream)
    logger = logging.getLogger("perftrack.test")
    logger.warning("upload with %s refused", TOKEN)
    logger.warning("headers %s", {"authorization": f"Bearer {ADMIN_SECRET}", "accept": "*/*"})
    logger.warning(
        "retrying", extra={"token": "anything", "url": f"http://x/?t={TOKEN}", "note": ADMIN_SECRET}
    )
    logger.warning("Authorization: Basic dXNlcjpwYXNz sent")
    logger.warning("a short note")
    try:
        raise RuntimeError(f"bad token {TOKEN} with {ADMIN_SECRET}")
    except RuntimeError:
        logger.exception("failed")
    text = stream.getvalue()
    for secret in (TOKEN, ADMIN_SECRET, TOKEN[3:], "dXNlcjpwYXNz"):
        assert secret not in text
    assert text.count(REDACTED) >= 7
    assert "accept" in text
    assert "*/*" in text
    assert "a short note" in text  # a configured value too short to be a secret is left alone
    assert "RuntimeError" in text  # the traceback is kept, only scrubbed


@pytest.mark.usefixtures("restore_logging")
def test_configured_short_values_and_words_are_left_alone() -> None:
    stream = io.StringIO()
    configure_logging(log_format="json", secrets=["test"], stream=stream)
    logging.getLogger("perftrack.test").info("the test tokenizer ran", extra={"prefix": "pt_abc"})
    [entry] = lines(stream)
    assert entry["message"] == "the test tokenizer ran"
    assert entry["prefix"] == "pt_abc"  # a token's short public prefix is no secret


def test_secret_values_come_from_every_secret_setting(tmp_path: Any) -> None:
    settings = Settings(
        data_dir=tmp_path,
        environment="test",
        database_url="postgresql://perftrack:db-password-0123@db.example:5432/perftrack",
        admin_token=SecretStr(ADMIN_SECRET),
        github_webhook_secret=SecretStr("whsec-0123456789"),
        metrics_token=SecretStr("metrics-0123456789"),
    )
    values = secret_values(settings)
    assert settings.session_secret is not None
    for expected in (
        ADMIN_SECRET,
        "whsec-0123456789",
        "metrics-0123456789",
        "db-password-0123",
        settings.session_secret.get_secret_value(),
    ):
        assert expected in values


def test_log_settings_validated(tmp_path: Any) -> None:
    assert Settings(data_dir=tmp_path, log_level="debug").log_level == "DEBUG"
    assert Settings(data_dir=tmp_path).log_format == "text"
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path, log_format="xml")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path, log_level="chatty")  # type: ignore[arg-type]


@pytest.mark.usefixtures("restore_logging")
def test_one_access_line_per_request_with_its_id(
    settings: Settings, engine: Engine, sessions: sessionmaker[Session], admin_token: str
) -> None:
    stream = io.StringIO()
    configured = settings.model_copy(update={"log_format": "json", "admin_token": SecretStr(ADMIN_SECRET)})
    configure_from_settings(configured, stream=stream)
    app = create_app(configured, engine, sessions=sessions, prepare=False)

    @app.get("/_test/log")
    def log_inside() -> dict[str, str]:
        logging.getLogger("perftrack.test").info("inside the handler", extra={"authorization": "x"})
        return {}

    @app.get("/_test/crash")
    def crash() -> dict[str, str]:
        raise RuntimeError("boom")

    with TestClient(app, raise_server_exceptions=False) as client:
        given = client.get(
            "/_test/log", headers={"X-Request-ID": "req-7", "Authorization": f"Bearer {TOKEN}"}
        )
        made = client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {admin_token}"})
        assert client.get("/_test/crash").status_code == 500
    assert given.headers["X-Request-ID"] == "req-7"
    entries = lines(stream)
    text = stream.getvalue()
    assert TOKEN not in text
    assert admin_token not in text
    inside = [entry for entry in entries if entry["message"] == "inside the handler"]
    assert [(entry["request_id"], entry["authorization"]) for entry in inside] == [("req-7", REDACTED)]
    access = [entry for entry in entries if entry["logger"] == "perftrack.access"]
    assert [(entry["method"], entry["path"], entry["status"]) for entry in access] == [
        ("GET", "/_test/log", 200),
        ("GET", "/api/v1/jobs", 200),
        ("GET", "/_test/crash", 500),  # a request that raised is logged too
    ]
    assert access[0]["request_id"] == "req-7"
    assert access[1]["request_id"] == made.headers["X-Request-ID"]
    assert len(access[1]["request_id"]) == 32
    assert all(isinstance(entry["duration_ms"], float) and entry["duration_ms"] >= 0 for entry in access)


@pytest.mark.usefixtures("restore_logging")
def test_a_request_path_cannot_forge_a_text_line(
    settings: Settings, engine: Engine, sessions: sessionmaker[Session]
) -> None:
    stream = io.StringIO()
    configured = settings.model_copy(update={"log_format": "text"})
    configure_from_settings(configured, stream=stream)
    app = create_app(configured, engine, sessions=sessions, prepare=False)
    forged = "2026-12-01T00:00:00.000Z INFO perftrack.access GET /admin 200"
    with TestClient(app) as client:
        client.get("/x%0A" + forged.replace(" ", "%20") + "%0D%1B[2J%E2%80%A8end")
    access = [line for line in stream.getvalue().splitlines() if " perftrack.access " in line]
    assert len(access) == 1, access
    assert (
        "/x\\n2026-12-01T00:00:00.000Z INFO perftrack.access GET /admin 200\\r\\x1b[2J\\u2028end" in access[0]
    )
    assert not any(line.startswith("2026-12-01T00:00:00.000Z") for line in stream.getvalue().splitlines())


@pytest.mark.usefixtures("restore_logging")
def test_text_lines_escape_controls_in_every_field_and_indent_tracebacks() -> None:
    stream = io.StringIO()
    configure_logging(log_format="text", stream=stream)
    logger = logging.getLogger("perftrack.test")
    logger.warning("case %s", "a\nFAKE b", extra={"detail": "c\r\nFAKE d", "items": ["e\nFAKE f"]})
    try:
        raise ValueError("bad\nFAKE line")
    except ValueError:
        logger.exception("failed")
    text = stream.getvalue()
    assert not any(line.startswith("FAKE") for line in text.splitlines())
    first = text.splitlines()[0]
    assert "case a\\nFAKE b detail=c\\r\\nFAKE d items=['e\\nFAKE f']" in first
    traceback = text.splitlines()[2:]
    assert traceback[0] == "  Traceback (most recent call last):"
    assert all(line.startswith("  ") for line in traceback)


@pytest.mark.usefixtures("restore_logging")
def test_json_lines_escape_unicode_line_separators() -> None:
    stream = io.StringIO()
    configure_logging(log_format="json", stream=stream)
    logging.getLogger("perftrack.test").info("a\u2028b\u2029c\x85d\ne")
    assert len(stream.getvalue().splitlines()) == 1
    [entry] = lines(stream)
    assert entry["message"] == "a\u2028b\u2029c\x85d\ne"


class _Described:
    def __str__(self) -> str:
        return f"connection with {TOKEN}"


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("log_format", ["json", "text"])
def test_redaction_covers_every_field(log_format: Any) -> None:
    stream = io.StringIO()
    configure_logging(log_format=log_format, stream=stream)
    rid = request_id.set(TOKEN)
    try:
        logging.getLogger("perftrack.test").warning(
            "x", extra={"peer": _Described(), "by_key": {TOKEN: 1}, "pair": (1, TOKEN)}
        )
    finally:
        request_id.reset(rid)
    text = stream.getvalue()
    assert TOKEN not in text
    assert TOKEN[3:] not in text
    assert text.count(REDACTED) >= 4


@pytest.mark.usefixtures("restore_logging")
def test_a_token_shaped_request_id_is_replaced_never_logged_or_echoed(
    settings: Settings, engine: Engine, sessions: sessionmaker[Session]
) -> None:
    stream = io.StringIO()
    configured = settings.model_copy(update={"log_format": "json"})
    configure_from_settings(configured, stream=stream)
    app = create_app(configured, engine, sessions=sessions, prepare=False)
    with TestClient(app) as client:
        answered = [
            client.get("/healthz", headers={"X-Request-ID": rid}).headers["X-Request-ID"]
            for rid in (TOKEN, "trace_" + "a" * 40, "a" * 65, "-leading-dash", "ok-123.4:5")
        ]
    assert answered[-1] == "ok-123.4:5"
    assert all(len(rid) == 32 and rid.isalnum() for rid in answered[:-1]), answered
    assert TOKEN not in stream.getvalue()
    access = [entry["request_id"] for entry in lines(stream) if entry["logger"] == "perftrack.access"]
    assert access == answered


@pytest.mark.usefixtures("restore_logging")
def test_log_records_go_through_the_one_redactor() -> None:
    stream = io.StringIO()
    configure_logging(log_format="text", stream=stream, secrets=[ADMIN_SECRET])
    github = "ghp_" + "Zz9" * 12
    logging.getLogger("perftrack.test").warning(
        "clone failed for %s: password: hunter2 via https://u:pw-123@host %s", github, ADMIN_SECRET
    )
    text = stream.getvalue()
    for secret in (github, "hunter2", "pw-123", ADMIN_SECRET):
        assert secret not in text
