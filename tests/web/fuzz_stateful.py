"""Schemathesis's own stateful testing: sequences of calls chained by the links it infers from the
OpenAPI schema (a job's id from ``POST /jobs`` into ``GET /jobs/{job_id}``, a comparison's from
``POST /comparisons`` into its cancel, an alert's from the list into triage, ...).

Where :mod:`tests.web.fuzz_lifecycle` walks the runner's protocol with bodies it shapes itself, this
lets schemathesis choose the sequences: every operation it can reach from another's answer. Each
call carries the token its route asks for and is checked like the OpenAPI campaign (no 5xx, a
declared status, a body matching its schema); failures are recorded, not raised, so a run stays
bounded and reports every distinct one.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI
from hypothesis import Verbosity, reject, seed
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.stateful import get_state_machine_test
from schemathesis import Case
from schemathesis.core.failures import FailureGroup
from schemathesis.core.transport import Response
from schemathesis.generation.stateful.state_machine import APIStateMachine, StepInput, StepOutput
from schemathesis.schemas import BaseSchema

from tests.web.app_routes import Guard, app_routes
from tests.web.campaign import Figures, Tokens, bounded_settings, first_line
from tests.web.fuzz_openapi import CHECKS, fuzz_schema, headers_for

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# The most rounds a campaign restarts in (see run_stateful_campaign).
MAX_ROUNDS = 20


class Surviving:
    """``app`` as the sequences call it: an exception it raises after answering (Starlette answers
    500, then raises again) is kept in ``errors``, so the 500 is checked like any answer and the
    sequence goes on.

    Its lifespan is the app's own, started once when schemathesis loaded the schema from it; this
    wrapper only acknowledges a lifespan of its own, so the app never starts twice.
    """

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.errors: list[BaseException] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _acknowledge_lifespan(receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except Exception as error:
            self.errors.append(error)

    def traceback(self) -> str:
        """The last lines of each exception kept since the previous call, which it forgets."""
        reports = ["".join(traceback.format_exception(error)[-12:]) for error in self.errors]
        self.errors.clear()
        return "\n".join(reports)


async def _acknowledge_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def stateful_machine(
    app: FastAPI,
    tokens: Tokens,
    figures: Figures,
    schema: BaseSchema | None = None,
    sequences: list[int] | None = None,
) -> type[APIStateMachine]:
    """Schemathesis's state machine over ``app`` (its steered schema unless ``schema`` is given),
    authenticating and recording into ``figures``; each finished sequence appends to ``sequences``."""
    guards = {(route.method, route.path): route.guard for route in app_routes(app)}
    base = (schema or fuzz_schema(app)).as_state_machine()
    surviving = Surviving(app)
    called: set[str] = set()

    def headers(case: Case[Any]) -> dict[str, str]:
        guard = guards.get((case.operation.method.upper(), case.operation.path), Guard.NONE)
        return headers_for(guard, tokens)

    def label(case: Case[Any]) -> str:
        return f"{case.operation.method.upper()} {case.operation.path}"

    class Linked(base):  # type: ignore[valid-type, misc]
        def teardown(self) -> None:
            super().teardown()
            if sequences is not None:
                sequences.append(figures.examples)

        def get_call_kwargs(self, case: Case[Any]) -> dict[str, Any]:
            return {"headers": headers(case), "app": surviving}

        def step(self, input: StepInput) -> StepOutput:
            called.add(label(input.case))
            figures.operations = len(called)
            figures.examples += 1
            try:
                return super().step(input)  # type: ignore[no-any-return]
            except Exception as error:  # no answer at all: a finding, and the end of this sequence
                figures.statuses[500] += 1
                report = "".join(traceback.format_exception(error)[-12:])
                curl = input.case.as_curl_command(headers=headers(input.case))
                figures.found(f"{label(input.case)} {first_line(error)}", f"{curl}\n\n{report}")
                reject()

        def validate_response(
            self, response: Response, case: Case[Any], additional_checks: Any = None, **kwargs: Any
        ) -> None:
            figures.statuses[response.status_code] += 1
            raised = surviving.traceback()
            try:
                case.validate_response(response, checks=CHECKS, headers=kwargs.get("headers"))
            except FailureGroup as group:
                curl = case.as_curl_command(headers=kwargs.get("headers"))
                for failure in group.exceptions:
                    key = f"{label(case)} {failure.code} {failure.title}"
                    figures.found(key, f"{failure}\n\n{curl}\n\n{raised}".rstrip())

    return Linked


def run_stateful_campaign(
    app: FastAPI,
    tokens: Tokens,
    *,
    max_examples: int,
    steps: int = 10,
    seed_value: int = 0,
    schema: BaseSchema | None = None,
) -> Figures:
    """``max_examples`` sequences of up to ``steps`` linked calls each; collect the findings.

    Which calls a sequence may make next depends on what earlier ones stored (the links follow
    real answers), and the database outlives each sequence, so Hypothesis sometimes sees a replayed
    prefix draw differently and stops with ``Flaky`` (or gives up with ``Unsatisfiable``). As
    schemathesis's own runner does, the campaign then goes on in a new round, with the next seed,
    until the sequences are run or a round runs none.
    """
    figures = Figures(title="OpenAPI links (schemathesis stateful)")
    sequences: list[int] = []
    machine = stateful_machine(app, tokens, figures, schema, sequences)
    for round_ in range(MAX_ROUNDS):
        before = len(sequences)
        left = max_examples - before
        if left <= 0:
            break
        bounds = bounded_settings(left, stateful_step_count=steps, verbosity=Verbosity.quiet)
        test = get_state_machine_test(machine, settings=bounds)
        with contextlib.suppress(Flaky, Unsatisfiable):
            seed(seed_value + round_)(test)()
        if len(sequences) == before:
            break
    return figures.stop()
