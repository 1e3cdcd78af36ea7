"""Bounds every upload and request body is held to: id and number ranges, patch refs, JSON depth, times.

Constants only, and the iterative depth check that must run before anything recursive walks a body.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

SHA_PATTERN = re.compile(r"^[0-9a-f]{7,40}$")
# A patch: a commit sha (7-40 hex digits, or 64 in a SHA-256 repository) or a pull request, "#N" or
# "refs/pull/N/head", optionally pinned to its head commit ("@SHA", as tracker.vcs.commits writes it). N is
# checked against MAX_INT32 apart: PR numbers are INTEGER columns.
PATCH_REF_PATTERN = re.compile(
    r"^(?:[0-9a-f]{7,40}|[0-9a-f]{64}|(?:refs/pull/([0-9]+)/head|#([0-9]+))(?:@(?:[0-9a-f]{40}|[0-9a-f]{64}))?)$"
)
MAX_PATCHES = 64
MAX_PATCH_REF_LENGTH = 100  # the longest valid shape is "refs/pull/2147483647/head@" and a 64-digit sha

MAX_INT32 = 2**31 - 1  # PostgreSQL INTEGER: PR numbers, counts
# The largest id a path or query accepts. Ids are BIGINT, but no deployment nears 2**31 rows; one
# bound every integer column and every backend holds means an id beyond it answers "no such thing"
# instead of overflowing a driver (SQLite's 64-bit binding, a 32-bit column, ...).
MAX_ID = MAX_INT32

# How deep a JSON value (``environment``, ``perf_dump``, a whole body) may nest. Real ones nest a
# few levels; deeper input is refused before any recursive code (pydantic, the NUL scrubber, the
# JSON column serialiser, the digest) walks it, so it can never raise RecursionError.
MAX_JSON_DEPTH = 32

# Items of one batch (``POST /api/v1/results/batch``, ``POST /api/v1/jobs/results``): a request
# holds one write transaction, so a batch stays well under the time a lock may be held.
MAX_BATCH_ITEMS = 500

# A runner's labels (``--label KEY=VALUE``): shown on the fleet page, so bounded in number and size.
MAX_RUNNER_LABELS = 32
MAX_LABEL_KEY = 64
MAX_LABEL_VALUE = 256

MAX_FAILURE_REASON = 4000  # characters of a failed run's reason; its log is kept whole apart

# Times a result or commit may carry: anything outside is a typo or hostile, and a year-1 or
# year-9999 time with an offset cannot even be converted to UTC.
EARLIEST_TIME = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST_TIME = dt.datetime(2100, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


def json_too_deep(value: Any, *, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Where ``value`` nests lists and dicts more than ``limit`` deep (``"environment"``), else None.

    Iterative on purpose: a 100,000-level value must not raise RecursionError while being measured.
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict):
            children: Any = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        else:
            continue
        if depth > limit:
            return where or "body"
        for key, child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1, where or str(key)[:64]))
    return None


def reject_deep_json(data: Any) -> None:
    """Raise ``ValueError`` naming the top-level field when ``data`` nests over :data:`MAX_JSON_DEPTH`."""
    field = json_too_deep(data)
    if field is not None:
        raise ValueError(f"{field}: nested more than {MAX_JSON_DEPTH} levels deep")
