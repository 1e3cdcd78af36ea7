"""The bases of every request body, and readable validation messages.

Each body is checked for depth before anything recursive walks it; text UTF-8 cannot encode (a lone
UTF-16 surrogate, in any string or key at any depth) is refused, naming where it is
(:mod:`wire.text`); and U+0000 (which PostgreSQL's text and JSONB cannot hold) becomes U+FFFD, as
the runner's log reader does: an upload must not be lost over a binary log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from wire.limits import reject_deep_json
from wire.text import escape_unencodable, reject_unencodable


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


class InModel(BaseModel):
    """A request body: too deep refused, text UTF-8 cannot encode refused, U+0000 replaced by U+FFFD."""

    @model_validator(mode="before")
    @classmethod
    def _sound_text(cls, data: Any) -> Any:
        reject_deep_json(data)  # before the recursive scrub (or anything else) walks it
        reject_unencodable(data)  # free-form fields (environment, perf_dump) included, keys too
        return _without_nul(data)


class RecordIn(InModel):
    """A record a runner or an import uploads: unknown fields refused, surrounding whitespace trimmed."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


_NAMES_ITS_FIELD = re.compile(r"^[a-z_][a-z0-9_\[\].]*: ")


def describe_errors(problems: Sequence[Mapping[str, Any]]) -> str:
    """One readable clause per problem, each naming its field (``step_times_ms[3]: ...``)."""
    lines = []
    for problem in problems:
        field = ""
        for part in problem.get("loc", ()):
            if part in ("body", "query", "path"):
                continue
            if isinstance(part, int):
                field += f"[{part}]"
                continue
            name = escape_unencodable(str(part))  # a key as sent: it may hold a lone surrogate
            field += f".{name}" if field else name
        message = escape_unencodable(str(problem.get("msg", "invalid"))).removeprefix("Value error, ")
        # A model-level check already starts with the field it is about.
        lines.append(message if _NAMES_ITS_FIELD.match(message) else f"{field or 'body'}: {message}")
    return "; ".join(lines) or "invalid input"


def validation_message(error: ValidationError) -> str:
    """:func:`describe_errors` for a pydantic ``ValidationError``."""
    return describe_errors(error.errors(include_url=False))
