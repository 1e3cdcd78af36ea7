"""Text a request may carry: only what UTF-8 can encode, checked in every string and key of a body.

JSON may spell a lone UTF-16 surrogate (``"\\udfff"``); Python's ``json`` reads it into a string that
no UTF-8 encoder, database driver or JSON response can write. Every request body is checked once,
at the boundary (:class:`wire.InModel`), so that such a value is refused with a 422 naming where it
is, instead of being stored and failing every page that shows it. :func:`replace_unencodable` is
the read side's counterpart, for values stored before the check existed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}")
_KEY_SHOWN = 64  # characters of an odd key quoted in a message


def _first_surrogate(text: str) -> str | None:
    """The first code point of ``text`` that UTF-8 cannot encode, if any (ASCII is checked in C)."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return found[0] if found is not None else None


def escape_unencodable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\udfff``), safe to send back."""
    if _first_surrogate(text) is None:
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def _step(path: str, key: object) -> str:
    """``path`` extended by one key: ``environment.gpu``, ``warnings[0]``, ``perf_dump['a b']``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if _PLAIN_KEY.fullmatch(text):
        return f"{path}.{text}" if path else text
    quoted = ascii(text[:_KEY_SHOWN] + ("…" if len(text) > _KEY_SHOWN else ""))
    return f"{path}[{quoted}]"


@dataclass(frozen=True)
class Unencodable:
    """Where a body holds text UTF-8 cannot encode: the top-level field, the path, the character."""

    field: str  # the top-level field ("" for the body itself)
    path: str  # ``environment.gpu``, ``perf_dump['a b']``, ``warnings[0]``
    character: str
    in_key: bool

    def __str__(self) -> str:
        where = f"a key of {self.path or 'the body'}" if self.in_key else (self.path or "the body")
        return (
            f"{where} holds a lone UTF-16 surrogate (U+{ord(self.character):04X}), which is not Unicode "
            "text and cannot be stored; send UTF-8 text (a surrogate escape only as part of a pair)"
        )


def unencodable_text(value: Any) -> Unencodable | None:
    """The first string (or key) in ``value`` that UTF-8 cannot encode, else ``None``.

    Iterative, so any depth is walked without recursion (the depth check bounds it first anyway).
    """
    stack: list[tuple[Any, str, str]] = [(value, "", "")]
    while stack:
        item, path, field = stack.pop()
        if isinstance(item, str):
            character = _first_surrogate(item)
            if character is not None:
                return Unencodable(field, path, character, in_key=False)
        elif isinstance(item, dict):
            for key, child in item.items():
                character = _first_surrogate(key) if isinstance(key, str) else None
                if character is not None:
                    return Unencodable(field, path, character, in_key=True)
                step = _step(path, key)
                stack.append((child, step, field or step))
        elif isinstance(item, list | tuple):
            for index, child in enumerate(item):
                step = _step(path, index)
                stack.append((child, step, field or step))
    return None


def reject_unencodable(data: Any) -> None:
    """Raise ``ValueError`` naming the field (``environment: environment.gpu holds ...``) when
    ``data`` holds text that UTF-8 cannot encode."""
    problem = unencodable_text(data)
    if problem is not None:
        raise ValueError(f"{problem.field}: {problem}" if problem.field else str(problem))


def replace_unencodable(value: Any) -> Any:
    """``value`` with every lone surrogate, in strings and keys, replaced by U+FFFD (a stored value
    from before the boundary refused them must still be shown)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _first_surrogate(value) is not None else value
    if isinstance(value, dict):
        return {replace_unencodable(key): replace_unencodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [replace_unencodable(item) for item in value]
    return value
