"""Loaded by every Python started with this folder on ``PYTHONPATH``: its wall clock is off by
``FAULT_CLOCK_OFFSET_S`` seconds (``time.time``, ``time.time_ns`` and ``datetime.now`` /
``utcnow`` / ``today``), like a host whose NTP is broken. Monotonic clocks are left alone, as a
wrong wall clock leaves them.

``libfaketime`` would do this for any program, but it is not installed everywhere the tests run.
"""

from __future__ import annotations

import datetime as _dt
import os
import time as _time

_OFFSET_S = float(os.environ.get("FAULT_CLOCK_OFFSET_S", "0") or 0)

if _OFFSET_S:
    _real_time = _time.time
    _real_time_ns = _time.time_ns

    def _time_skewed() -> float:
        return _real_time() + _OFFSET_S

    def _time_ns_skewed() -> int:
        return _real_time_ns() + int(_OFFSET_S * 1e9)

    _time.time = _time_skewed
    _time.time_ns = _time_ns_skewed

    class _SkewedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz: _dt.tzinfo | None = None) -> _SkewedDatetime:
            return super().now(tz) + _dt.timedelta(seconds=_OFFSET_S)

        @classmethod
        def utcnow(cls) -> _SkewedDatetime:
            return super().utcnow() + _dt.timedelta(seconds=_OFFSET_S)

        @classmethod
        def today(cls) -> _SkewedDatetime:
            return cls.now()

    _dt.datetime = _SkewedDatetime  # type: ignore[misc]
