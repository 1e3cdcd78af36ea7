"""Waiting in tests: on a condition with a deadline, never on a fixed sleep.

A test that sleeps and then asserts passes by luck on a fast machine and fails on a slow one.
Wait for what should happen (``wait_until``); for "nothing more happens", wait for the state that
rules it out (a stored next fire time moved on, a worker stopped) instead of sleeping a while.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], timeout_s: float, what: str = "the condition", every_s: float = 0.1
) -> T:
    """Poll ``condition`` until it returns something true and return that; fail after ``timeout_s``.

    The deadline is generous on purpose: it only bounds a test that is going to fail anyway, so a
    busy machine makes a passing test slower, never a failing one.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(every_s)
