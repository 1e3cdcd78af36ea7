"""Schemathesis against every operation of the OpenAPI schema, in-process on the ASGI app.

Each operation is called with the token its route asks for (admin, runner, none), so the generated
requests get past authentication into the real handlers. Every response must not be a 5xx, must
have a status code the schema declares, and must match the declared response schema.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import Any

import schemathesis
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Err
from schemathesis.schemas import APIOperation, BaseSchema
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.web.app_routes import Guard, app_routes
from tests.web.campaign import Figures, Tokens, bounded, first_line

RUNNER_NAME = "campaign-runner-1"
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
# What every response must satisfy, valid request or not. Left out on purpose: whether a
# schema-valid request is accepted (a well-formed but unknown case name is a 422 by design).
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def headers_for(guard: Guard, tokens: Tokens) -> dict[str, str]:
    """The bearer token a route with ``guard`` asks for (none for an open route)."""
    secret = {Guard.ADMIN: tokens.admin, Guard.RUNNER: tokens.runner}.get(guard)
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def _exercise(
    operation: APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    headers: dict[str, str],
    figures: Figures,
    *,
    max_examples: int,
    seed_value: int,
) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    # Failures are recorded, not raised: Hypothesis then never shrinks, so the run stays bounded.
    @bounded(max_examples, seed_value)
    @given(case=operation.as_strategy(generation_mode=mode))
    def exercise(case: schemathesis.Case[Any]) -> None:
        figures.examples += 1
        try:
            response = case.call(headers=headers)
            figures.statuses[response.status_code] += 1
            case.validate_response(response, checks=CHECKS, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                key = f"{label} [{mode.value}] {failure.code} {failure.title}"
                figures.found(key, f"{failure}\n\n{case.as_curl_command(headers=headers)}")
        except Exception as error:  # an exception out of the app is a finding too
            report = "".join(traceback.format_exception(error)[-12:])
            figures.found(f"{label} [{mode.value}] {first_line(error)}", report)

    # Unsatisfiable: nothing to negate (an operation without parameters or body has no invalid requests).
    with contextlib.suppress(Unsatisfiable):
        exercise()


Known = dict[str, list[Any]]


def _substitutions(value: Any, known: Known, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Where in a generated dict (two levels deep) a field named in ``known`` sits."""
    found: list[tuple[str, ...]] = []
    if isinstance(value, dict) and len(path) < 2:
        for key, item in value.items():
            if key in known:
                found.append((*path, key))
            else:
                found.extend(_substitutions(item, known, (*path, key)))
    return found


def _replaced(value: dict[str, Any], where: tuple[str, ...], new: Any) -> dict[str, Any]:
    head, *rest = where
    copy = dict(value)
    copy[head] = _replaced(copy[head], tuple(rest), new) if rest else new
    return copy


def _steered(value: Any, known: Known) -> st.SearchStrategy[Any]:
    """Half the time, put real names (cases, hardware kinds, shas, the runner) where the schema has
    free strings, so generated requests also reach the handlers' success paths."""
    spots = _substitutions(value, known)
    if not spots:
        return st.just(value)

    def fill(choices: tuple[Any, ...]) -> Any:
        steered = value
        for where, choice in zip(spots, choices, strict=True):
            steered = _replaced(steered, where, choice)
        return steered

    real = st.tuples(*(st.sampled_from(known[where[-1]]) for where in spots)).map(fill)
    return st.one_of(st.just(value), real)


def _steer(schema: BaseSchema, known: Known) -> None:
    @schema.hook
    def flatmap_body(_context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
        return _steered(body, known)

    @schema.hook
    def flatmap_query(_context: schemathesis.HookContext, query: Any) -> st.SearchStrategy[Any]:
        return _steered(query, known)

    @schema.hook
    def flatmap_path_parameters(_context: schemathesis.HookContext, path: Any) -> st.SearchStrategy[Any]:
        return _steered(path, known)


def known_values(app: FastAPI) -> Known:
    """Real case and hardware names (read through the API), shas, and the campaign's runner name."""
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        cases = [case["slug"] for case in client.get("/api/v1/cases").json()]
        hardware = [kind["name"] for kind in client.get("/api/v1/hardware").json()]
    shas = ["669a9bd", "4739f2e", "9c1d5e2" + "0" * 33]
    return {
        "case": cases,
        "cases": [[case] for case in cases],
        "hardware": hardware,
        "sha": shas,
        "name": [RUNNER_NAME, *cases],
        "runner": [RUNNER_NAME],
        "metric": ["denoise_step_ms", "e2e_ms"],
    }


def fuzz_schema(app: FastAPI) -> BaseSchema:
    """The app's OpenAPI schema, its generated values steered half the time to real names."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    _steer(schema, known_values(app))
    return schema


def run_campaign(
    app: FastAPI, tokens: Tokens, *, max_examples: int, seed_value: int = 0, only: str = ""
) -> Figures:
    """Generate ``max_examples`` requests per operation and generation mode; collect the findings."""
    guards = {(route.method, route.path): route.guard for route in app_routes(app)}
    schema = fuzz_schema(app)
    figures = Figures()
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()  # the schema itself is broken
        operation = result.ok()
        if only not in f"{operation.method.upper()} {operation.path}":
            continue
        figures.operations += 1
        guard = guards.get((operation.method.upper(), operation.path), Guard.NONE)
        for mode in MODES:
            _exercise(
                operation,
                mode,
                headers_for(guard, tokens),
                figures,
                max_examples=max_examples,
                seed_value=seed_value,
            )
    return figures.stop()
