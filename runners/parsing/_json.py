"""Strict readers for JSON values, whose errors name the offending field path."""

from __future__ import annotations

import json
import math

from runners.parsing.model import ParseError


def load_json(text: str, what: str) -> object:
    """Decode JSON text, turning decoder errors into a :class:`ParseError` that says where."""
    if not text.strip():
        raise ParseError(f"{what} is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"{what} is not valid JSON (truncated?) at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:  # absurdly deep nesting is garbage, not a dump
        raise ParseError(f"{what} is not valid JSON: nested too deeply") from exc


def as_object(value: object, path: str) -> dict[str, object]:
    """Require a JSON object."""
    if not isinstance(value, dict):
        raise ParseError(f"{path}: must be an object (got {_kind(value)})")
    return {str(key): item for key, item in value.items()}


def as_list(value: object, path: str) -> list[object]:
    """Require a JSON array."""
    if not isinstance(value, list):
        raise ParseError(f"{path}: must be a list (got {_kind(value)})")
    return value


def duration(value: object, path: str) -> float:
    """Require a finite number >= 0 (a duration or a memory size)."""
    # bool is an int subclass in Python, but `true` is never a duration.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"{path}: must be a finite number >= 0 (got {_kind(value)})")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ParseError(f"{path}: must be a finite number >= 0 (got {value!r})")
    return number


def optional_duration(value: object, path: str) -> float | None:
    """Like :func:`duration`, but ``null`` or absent is allowed."""
    return None if value is None else duration(value, path)


def index(value: object, path: str) -> int:
    """Require an integer >= 0 (a step index)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError(f"{path}: must be an integer >= 0 (got {value!r})")
    return value


def name(value: object, path: str) -> str:
    """Require a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"{path}: must be a non-empty string (got {value!r})")
    return value


def optional_text(value: object, path: str) -> str | None:
    """Require a string or ``null``; sglang's "N/A" placeholder (no git checkout) becomes ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParseError(f"{path}: must be a string (got {_kind(value)})")
    return None if value.strip() in ("", "N/A") else value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
