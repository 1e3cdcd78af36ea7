"""An upload's digest, in versions of its canonical form, so a retry matches what was stored.

The digest (SHA-256 of the canonical JSON of an upload, without its idempotency key) tells a retry
from a key reused for another result. Each stored digest names the version of the canonical form
it hashes, and a retry is digested in that version: a field added since does not turn the retry of
an upload stored before it into a conflict.

Adding a field to an upload, or to any record an upload holds (``stages``, ``output``, ...):

1. give it a default: uploads stored before it are read as holding it;
2. mark it with the next version, ``new: Annotated[int | None, Since(3)] = None``, and raise
   :data:`DIGEST_VERSION` to that version (``tests/wire/test_digest.py`` fails on a marker above
   it, or on a marked field without a default).

A field without a marker is part of the first form; an unmarked new one changes the digest of every
upload, and every retry of one stored before it would be refused (``tests/wire/test_digest.py``
holds digests of fixed uploads that catch it).

The canonical form of version ``N >= 2`` holds every field known in version ``N``, defaults
included. A field that came after ``N`` is left out while it holds its default; holding another
value, the upload has no form in version ``N`` (its digest there is ``None``): no upload stored in
that version can be it.

Version 1 is the form of the digests stored before they named a version: the first form's fields,
and a field that came later only while it holds something else than its default (as ``output`` and
``files`` were then). Every upload has a version-1 form, and it stays the same when a field is
added, so it also names an upload that brings no idempotency key.

Stored, version 1 is 64 hex digits (as it always was); version ``N >= 2`` is ``vN:`` and the hash in
unpadded base64url (46 characters for version 2: ``runs.payload_digest`` holds 64).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import typing
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

DIGEST_VERSION = 2  # the canonical form new digests are in
LEGACY_DIGEST_VERSION = 1  # the unprefixed digests stored before versions were named

_LEGACY_TEXT = re.compile(r"[0-9a-f]{64}")
_VERSIONED_TEXT = re.compile(r"v([1-9][0-9]{0,5}):[A-Za-z0-9_-]{43}")


@dataclass(frozen=True)
class Since:
    """Marks a field of an upload record with the digest version it came in (``Annotated[..., Since(2)]``)."""

    version: int

    def __post_init__(self) -> None:
        if self.version <= LEGACY_DIGEST_VERSION:
            raise ValueError(
                f"Since({self.version}): an unmarked field is of version 1; a new one comes in 2 or later"
            )


class _NoForm(Exception):
    """The record holds a value the version being built does not know."""


def upload_digest(record: BaseModel, version: int, *, exclude: Collection[str] = ()) -> str | None:
    """The stored text of ``record``'s digest in canonical form ``version`` (``None``: it has none).

    ``exclude``: top-level fields never digested (the idempotency key).
    """
    if not LEGACY_DIGEST_VERSION <= version <= DIGEST_VERSION:
        return None
    dumped = record.model_dump(mode="json", exclude=set(exclude))
    if _newest_field(type(record)) <= version:
        form = dumped  # no field is newer than the form: nothing to cut (the current form's case)
    else:
        try:
            form = _form(record, dumped, version)
        except _NoForm:
            return None
    hashed = hashlib.sha256(json.dumps(form, sort_keys=True, separators=(",", ":")).encode())
    if version == LEGACY_DIGEST_VERSION:
        return hashed.hexdigest()
    return f"v{version}:" + base64.urlsafe_b64encode(hashed.digest()).rstrip(b"=").decode("ascii")


def digest_version(stored: str) -> int | None:
    """The canonical form version a stored digest names (``None``: not a digest)."""
    if _LEGACY_TEXT.fullmatch(stored):
        return LEGACY_DIGEST_VERSION
    match = _VERSIONED_TEXT.fullmatch(stored)
    if match is None or int(match[1]) == LEGACY_DIGEST_VERSION:
        return None
    return int(match[1])


def field_version(info: FieldInfo) -> int:
    """The digest version a field came in (1: a field of the first form)."""
    marks = [mark.version for mark in info.metadata if isinstance(mark, Since)]
    return max(marks, default=LEGACY_DIGEST_VERSION)


@functools.cache
def _newest_field(model: type[BaseModel]) -> int:
    """The newest digest version of any field of ``model`` or of a record it may hold."""
    return max(
        (
            max([field_version(info), *(_newest_field(held) for held in _records_in(info.annotation))])
            for info in model.model_fields.values()
        ),
        default=LEGACY_DIGEST_VERSION,
    )


def _records_in(annotation: Any) -> list[type[BaseModel]]:
    """The record types an annotation may hold (``list[StageIn] | None``: ``StageIn``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [held for argument in typing.get_args(annotation) for held in _records_in(argument)]


def _form(record: BaseModel, dumped: dict[str, Any], version: int) -> dict[str, Any]:
    """``dumped`` (``record``'s JSON) cut to the fields of ``version``, nested records included."""
    form: dict[str, Any] = {}
    for name, info in type(record).model_fields.items():
        if name not in dumped:
            continue  # excluded
        value = getattr(record, name)
        if field_version(info) > version:
            if value == info.get_default(call_default_factory=True):
                continue
            if version != LEGACY_DIGEST_VERSION:
                raise _NoForm(name)
        form[name] = _value(value, dumped[name], version)
    return form


def _value(value: object, dumped: Any, version: int) -> Any:
    if isinstance(value, BaseModel):
        return _form(value, dumped, version)
    if isinstance(value, list | tuple):
        if not any(isinstance(item, BaseModel) for item in value):
            return dumped  # numbers, strings: nothing to cut (a step-time vector stays one copy)
        return [_value(item, item_dumped, version) for item, item_dumped in zip(value, dumped, strict=True)]
    if isinstance(value, dict) and any(isinstance(item, BaseModel) for item in value.values()):
        return {
            key: _value(item, item_dumped, version)
            for item, (key, item_dumped) in zip(value.values(), dumped.items(), strict=True)
        }
    return dumped
