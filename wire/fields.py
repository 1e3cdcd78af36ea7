"""Field types shared by the bodies: commit shas, times with offsets, patch refs, strict measurements,
free-form JSON objects."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, Strict

from wire.limits import (
    EARLIEST_TIME,
    LATEST_TIME,
    MAX_INT32,
    MAX_PATCH_REF_LENGTH,
    MAX_PATCHES,
    PATCH_REF_PATTERN,
    SHA_PATTERN,
)

# Measurements are JSON numbers only (ints welcome): strict, so ``true`` or ``"12"`` is refused
# rather than read as 1.0 or 12.0. At least a nanosecond: detection takes logs of ratios, which a
# subnormal (5e-324) turns into log(0).
PositiveMs = Annotated[float, Strict(), Field(ge=1e-6, allow_inf_nan=False, le=1e9)]
NonNegativeMs = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False, le=1e10)]
Count = Annotated[int, Strict(), Field(ge=0, le=10_000_000)]


def _sha(value: str) -> str:
    value = value.strip().lower()
    if not SHA_PATTERN.match(value):
        raise ValueError("must be a git commit sha: 7 to 40 hexadecimal digits")
    return value


def _aware(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        raise ValueError("must include a timezone offset, e.g. 2026-03-01T12:00:00Z")
    # Compared before converting: astimezone() overflows for year 1 or 9999 with an offset.
    if not EARLIEST_TIME <= value <= LATEST_TIME:
        raise ValueError(f"must be between {EARLIEST_TIME:%Y-%m-%d} and {LATEST_TIME:%Y-%m-%d} (UTC)")
    return value.astimezone(dt.UTC)


def _pull_number(match: re.Match[str]) -> int | None:
    number = match[1] or match[2]
    return int(number) if number is not None else None


def _patch_ref(ref: str) -> str:
    match = PATCH_REF_PATTERN.fullmatch(ref)
    if match is None:
        raise ValueError(
            "must be a commit sha (7 to 40, or 64, hexadecimal digits) "
            "or a pull request (#N or refs/pull/N/head, optionally @SHA)"
        )
    number = _pull_number(match)
    if number is not None and not 1 <= number <= MAX_INT32:
        raise ValueError(f"pull request number {number} is not between 1 and {MAX_INT32}")
    return ref


def _distinct_patches(refs: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    for index, ref in enumerate(refs):
        match = PATCH_REF_PATTERN.fullmatch(ref)
        number = _pull_number(match) if match is not None else None
        key = f"#{number}" if number is not None else ref  # "#12" is "refs/pull/12/head"
        if key in seen:
            raise ValueError(f"[{index}] {ref!r} repeats [{seen[key]}]; each patch is stacked once")
        seen[key] = index
    return refs


def _finite_or_null(value: Any) -> Any:
    """``value`` with NaN and ±Infinity as ``None`` (depth is bounded before: :class:`wire.InModel`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite_or_null(item) for item in value]
    return value


Sha = Annotated[str, AfterValidator(_sha)]
# A free-form JSON object (the environment, a perf dump). NaN and ±Infinity, which Python's json
# writes but JSON (and PostgreSQL's JSONB) cannot hold, become null, as a JSON answer shows them and
# as the upload's digest already reads them: the upload is kept, not refused over one odd number.
FreeFormObject = Annotated[dict[str, Any], AfterValidator(_finite_or_null)]
AwareDatetime = Annotated[dt.datetime, AfterValidator(_aware)]
PatchRef = Annotated[str, Field(max_length=MAX_PATCH_REF_LENGTH), AfterValidator(_patch_ref)]
PatchRefs = Annotated[
    list[PatchRef],
    Field(
        max_length=MAX_PATCHES,
        description="refs stacked on the commit, in order: shas, #N or refs/pull/N/head",
    ),
    AfterValidator(_distinct_patches),
]
