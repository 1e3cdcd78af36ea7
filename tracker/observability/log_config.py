"""Logging set-up in one place: text or JSON lines on stderr, a request id, and no secret ever.

:func:`configure_logging` is called once by each long-running command (``perftrack serve`` in
every worker process, ``perftrack scheduler``, ``perftrack runner``); library code only asks
``logging.getLogger(__name__)`` and passes context with ``extra={...}``.

Every record goes through :class:`RedactingFilter` on the way out: the one redactor,
:class:`tracker.access.redaction.Redactor` over the configured secret values (admin token, session
secret, GitHub credentials, the database password, ...), replaces token shapes, credential headers
and URLs, secret-named assignments, extra fields named like secrets and those values themselves by
``[redacted]`` in the message, the request id, the extra fields (whatever their type) and the
traceback.

A line is one record: the text format writes control characters (CR, LF, TAB, ESC, ...) and
Unicode line separators in the message, the request id and the extra fields as escapes (``\\n``,
``\\x1b``), and indents a traceback's lines, so a request path cannot forge a line; the JSON format
escapes them as JSON does.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any, Literal, TextIO

from tracker.access.redaction import REDACTED as REDACTED
from tracker.access.redaction import Redactor
from tracker.access.redaction import secret_values as secret_values
from tracker.settings import Settings

# The request being answered, for every record logged while it is (set by the web middleware).
request_id: ContextVar[str | None] = ContextVar("perftrack_request_id", default=None)

# The attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "request_id",
    "taskName",
    "color_message",  # uvicorn's copy of its message with terminal colours
}
# Characters that could end a line or rewrite a terminal: C0 and C1 controls, DEL, and the Unicode
# line and paragraph separators (str.splitlines() breaks on them).
_CONTROL_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HANDLER_MARK = "_perftrack_handler"


class RedactingFilter(logging.Filter):
    """Scrubs each record (message, extra fields, traceback) before any formatter sees it."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor
        self._exceptions = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact in place; never drops a record."""
        record.msg = self.redactor.text(record.getMessage())
        record.args = None
        for key, value in extra_fields(record).items():
            setattr(record, key, self.redactor.value(key, value))
        if record.exc_info and not record.exc_text:
            record.exc_text = self._exceptions.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.text(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor.text(record.stack_info)
        rid = getattr(record, "request_id", None) or request_id.get()
        record.request_id = self.redactor.text(str(rid)) if rid is not None else None
        return True


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """What the caller passed with ``extra=`` (the attributes a plain LogRecord does not have)."""
    return {key: value for key, value in record.__dict__.items() if key not in _STANDARD_ATTRS}


def _timestamp(record: logging.LogRecord) -> str:
    moment = dt.datetime.fromtimestamp(record.created, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: timestamp, level, logger, message, request_id, extras, exception."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON line (values JSON cannot hold are written as text)."""
        entry: dict[str, Any] = {
            "timestamp": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = getattr(record, "request_id", None)
        if rid:
            entry["request_id"] = rid
        for key, value in extra_fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        # JSON escapes C0 controls itself; these three are valid raw but split lines for some readers.
        return (
            json.dumps(entry, default=str, ensure_ascii=False)
            .replace("\x85", "\\u0085")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")
        )


def escape_controls(text: str) -> str:
    """``text`` with control characters and line separators written as escapes (one line, always)."""
    return _CONTROL_TEXT.sub(_escape_control, text)


def _escape_control(match: re.Match[str]) -> str:
    char = match[0]
    return _CONTROL_ESCAPES.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


class TextFormatter(logging.Formatter):
    """``time LEVEL logger [request id] message key=value ...`` for a terminal.

    A traceback follows on lines indented by two spaces, so no line of it (an exception message
    quoting a request, say) can pass for a record of its own.
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as one readable line (plus its indented traceback, if any)."""
        parts = [_timestamp(record), record.levelname, record.name]
        rid = getattr(record, "request_id", None)
        if rid:
            parts.append(f"[{escape_controls(str(rid))}]")
        parts.append(escape_controls(record.getMessage()))
        parts.extend(f"{key}={escape_controls(str(value))}" for key, value in extra_fields(record).items())
        line = " ".join(parts)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + _indented(record.exc_text)
        if record.stack_info:
            line += "\n" + _indented(record.stack_info)
        return line


def _indented(text: str) -> str:
    return "\n".join(f"  {escape_controls(part)}" for part in text.split("\n"))


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up: a command run
    in-process (a test's CLI runner) may swap stderr and close its copy afterwards."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(
    *,
    level: str = "INFO",
    log_format: Literal["text", "json"] = "text",
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send every logger's records (perftrack's, uvicorn's, libraries') to one redacting handler.

    Idempotent: a second call replaces the handler the first one installed, leaving others alone.
    Returns the handler (tests read what it writes).
    """
    handler = logging.StreamHandler(stream if stream is not None else _CurrentStderr())
    handler.addFilter(RedactingFilter(Redactor(secrets)))
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, _HANDLER_MARK, False):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn's loggers send to the root handler; its own access log is replaced by perftrack.access.
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    return handler


def configure_from_settings(
    settings: Settings, *, extra_secrets: Iterable[str] = (), stream: TextIO | None = None
) -> logging.Handler:
    """:func:`configure_logging` with the settings' level, format and secrets (plus ``extra_secrets``:
    a token given on the command line, say)."""
    return configure_logging(
        level=settings.log_level,
        log_format=settings.log_format,
        secrets=[*secret_values(settings), *extra_secrets],
        stream=stream,
    )
