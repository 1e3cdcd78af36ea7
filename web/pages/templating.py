"""The Jinja2 environment shared by every page: autoescaping on, a few display filters."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fastapi.templating import Jinja2Templates

from web.auth import template_context

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"

templates = Jinja2Templates(directory=TEMPLATE_DIR)
# Jinja2Templates autoescapes .html; make it explicit so a renamed template cannot lose it.
templates.env.autoescape = True


def format_ms(value: float | None, unit: str = "ms") -> str:
    """``263.7 ms``; three significant decimals under 10."""
    if value is None:
        return "—"
    if abs(value) < 10:
        return f"{value:.3f} {unit}".strip()
    if abs(value) < 10_000:
        return f"{value:.1f} {unit}".strip()
    return f"{value:,.0f} {unit}".strip()


def format_pct(value: float | None) -> str:
    """``+9.1 %`` with an explicit sign."""
    if value is None:
        return "—"
    return f"{value:+.1f} %"


def change_class(value: float | None, threshold: float | None = None) -> str:
    """CSS class for a change: slower beyond the threshold is a regression."""
    if value is None:
        return "neutral"
    limit = threshold if threshold is not None else 0.0
    if value > limit:
        return "regression"
    if value < -limit:
        return "improvement"
    return "neutral"


def format_time(value: dt.datetime | None) -> str:
    """UTC timestamp to the minute."""
    if value is None:
        return "—"
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


templates.env.filters["ms"] = format_ms
templates.env.filters["pct"] = format_pct
templates.env.filters["change_class"] = change_class
templates.env.filters["utc"] = format_time
templates.env.filters["short"] = lambda sha: (sha or "")[:7]

# Every page's top bar shows who is signed in; forms get the CSRF field from here.
templates.context_processors.append(template_context)
