"""The app's routes as the auth and fuzz tests see them: every route, with the role it requires.

Read from the live app (not a hand-kept list), so a new endpoint is covered automatically.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts

from web.deps import require_admin, require_dashboard_admin, require_runner

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Guard(enum.Enum):
    """What a route asks of its caller."""

    NONE = "none"
    RUNNER = "runner"  # a runner or admin bearer token
    ADMIN = "admin"  # an admin bearer token
    DASHBOARD = "dashboard"  # a signed-in admin session and the form's CSRF field
    CSRF = "csrf"  # only the form's CSRF field (sign-in and sign-out)


@dataclass(frozen=True)
class AppRoute:
    """One method of one route."""

    method: str
    path: str
    guard: Guard


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def _guard_of(route: APIRoute) -> Guard:
    calls = set(_calls(route.dependant))
    if require_admin in calls:
        return Guard.ADMIN
    if require_runner in calls:
        return Guard.RUNNER
    if require_dashboard_admin in calls:
        return Guard.DASHBOARD
    if any(getattr(call, "__name__", "") == "require_csrf" for call in calls):
        return Guard.CSRF
    return Guard.NONE


def app_routes(app: FastAPI) -> list[AppRoute]:
    """Every (method, path) of the app's API routes with its guard, including included routers."""
    found: list[AppRoute] = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or context.path is None:
            continue
        for method in sorted(context.methods or ()):
            found.append(AppRoute(method=method, path=context.path, guard=_guard_of(route)))
    return found


def mutating_routes(app: FastAPI) -> list[AppRoute]:
    """Every POST, PUT, PATCH and DELETE route."""
    return [route for route in app_routes(app) if route.method in MUTATING]
