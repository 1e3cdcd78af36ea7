"""Waiting on a page's state under the dashboard's Content-Security-Policy.

Playwright's ``wait_for_function`` checks a string predicate once through the debugger and then
re-evaluates it inside the page with ``eval``, which ``script-src 'self'`` refuses: a condition not
already true on the first look fails with an ``EvalError`` instead of being waited for. Polling from
here with ``page.evaluate`` goes through the debugger every time, which no page policy governs.
"""

from __future__ import annotations

from typing import Any

from tests.waiting import wait_until


def wait_for_js(page: Any, expression: str, timeout_s: float = 30.0) -> Any:
    """Evaluate ``expression`` in ``page`` until it is truthy; return that value."""
    return wait_until(lambda: page.evaluate(expression), timeout_s, what=expression, every_s=0.05)
