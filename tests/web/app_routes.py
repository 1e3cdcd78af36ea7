"""The app's routes as the auth and fuzz tests see them: every route, with the role it requires and
the parameters it declares.

Read from the live app (not a hand-kept list), so a new endpoint or page is covered automatically.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.params import Form
from fastapi.routing import APIRoute, iter_route_contexts

from web.deps import require_admin, require_dashboard_admin, require_runner, runner_secret

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Guard(enum.Enum):
    """What a route asks of its caller."""

    NONE = "none"
    RUNNER = "runner"  # a runner or admin bearer token
    ADMIN = "admin"  # an admin bearer token
    DASHBOARD = "dashboard"  # a signed-in admin session and the form's CSRF field
    CSRF = "csrf"  # only the form's CSRF field (sign-in and sign-out)


@dataclass(frozen=True)
class Parameter:
    """A parameter a route declares: where it goes (``path``, ``query``, ``form``), its name as
    sent, and its type (``int``, ``str``, ``int | None``...)."""

    location: str
    name: str
    annotation: Any


@dataclass(frozen=True)
class AppRoute:
    """One method of one route."""

    method: str
    path: str
    guard: Guard
    parameters: tuple[Parameter, ...] = field(default=(), compare=False)
    page: bool = False  # an HTML page (web/pages), left out of the OpenAPI schema


def _parameters(dependant: Dependant) -> Iterator[Parameter]:
    for location, fields in (("path", dependant.path_params), ("query", dependant.query_params)):
        for param in fields:
            yield Parameter(location, param.alias, param.field_info.annotation)
    for param in dependant.body_params:
        if isinstance(param.field_info, Form):
            yield Parameter("form", param.alias, param.field_info.annotation)
    for sub in dependant.dependencies:
        yield from _parameters(sub)


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def _guard_of(route: APIRoute) -> Guard:
    calls = set(_calls(route.dependant))
    if require_admin in calls:
        return Guard.ADMIN
    if require_runner in calls or runner_secret in calls:
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
        parameters = tuple(dict.fromkeys(_parameters(route.dependant)))  # shared dependencies once
        page = route.endpoint.__module__.startswith("web.pages.")
        for method in sorted(context.methods or ()):
            found.append(
                AppRoute(
                    method=method, path=context.path, guard=_guard_of(route), parameters=parameters, page=page
                )
            )
    return found


def page_routes(app: FastAPI) -> list[AppRoute]:
    """Every method of every HTML page route."""
    return [route for route in app_routes(app) if route.page]


def mutating_routes(app: FastAPI) -> list[AppRoute]:
    """Every POST, PUT, PATCH and DELETE route."""
    return [route for route in app_routes(app) if route.method in MUTATING]
