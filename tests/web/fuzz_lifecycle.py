"""A runner's life in generated sequences: register, enqueue (admin), claim, heartbeat, upload a result,
read the run, release; any step in any order, with generated bodies.

A Hypothesis ``RuleBasedStateMachine`` rather than schemathesis's OpenAPI links: links cannot say
"this runner's own token" (a runner token is bound to one runner name) nor keep a queued job's
hardware and GPU count within what a registered runner advertises, so sequences built from links
would rarely get a job leased. Each call is still a schemathesis case of the operation it calls,
checked like the OpenAPI campaign: no 5xx, a declared status, a body matching its schema.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import seed
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, rule
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Err
from schemathesis.schemas import APIOperation, BaseSchema

from tests.web.campaign import Figures, Tokens, bounded_settings, first_line
from tests.web.fuzz_openapi import CHECKS, fuzz_schema

API = "/api/v1"
_GPU_COUNTS = st.sampled_from([8, 8, 2, 1]) | st.integers(min_value=1, max_value=1024)
_step_ms = st.floats(min_value=0.5, max_value=5000, allow_nan=False)
_INDEX = st.integers(min_value=0, max_value=2**16)
_SHAS = st.sampled_from(["669a9bd", "4739f2e"]) | st.text("0123456789abcdef", min_size=7, max_size=40)
_RUNNER_EXTRA = st.fixed_dictionaries(
    {},
    optional={
        "labels": st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
        "version": st.text(max_size=64),
        "host": st.text(max_size=255),
    },
)
_ENQUEUE_EXTRA = st.fixed_dictionaries(
    {},
    optional={
        "priority": st.integers(-1000, 1000),
        "reason": st.sampled_from(["manual", "nightly", "pr", "bisect", "confirm"]),
        "purpose": st.text(max_size=64),
    },
)
_HEARTBEAT = "POST /api/v1/jobs/{job_id}/heartbeat"
_RESULT = "POST /api/v1/jobs/{job_id}/result"
_RELEASE = "POST /api/v1/jobs/{job_id}/release"


@dataclass(frozen=True)
class RunnerSlot:
    """A registered runner: its name, its own token, and what it advertised."""

    name: str
    token: str
    hardware: str


@dataclass(frozen=True)
class Lease:
    """A job a runner claimed, and the attempt it holds."""

    runner: RunnerSlot
    job_id: int
    attempt: int


def _plausible_result(attempt: int = 1) -> st.SearchStrategy[dict[str, Any]]:
    """Result bodies a runner could send: ok with step times or a mean, or failed with a reason."""
    ok = st.fixed_dictionaries(
        {
            "attempt": st.just(attempt),
            "status": st.just("ok"),
            "step_times_ms": st.lists(_step_ms, min_size=1, max_size=60),
        },
        optional={
            "e2e_ms": _step_ms,
            "peak_memory_mb": st.floats(min_value=1, max_value=1e6),
            "warnings": st.lists(st.text(max_size=40), max_size=3),
            "environment": st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=4),
            "raw_log": st.text(max_size=400),
            "stages": st.lists(
                st.fixed_dictionaries({"name": st.text(min_size=1, max_size=20), "duration_ms": _step_ms}),
                max_size=4,
            ),
        },
    )
    mean_only = st.fixed_dictionaries({"attempt": st.just(attempt), "denoise_step_mean_ms": _step_ms})
    failed = st.fixed_dictionaries(
        {
            "attempt": st.just(attempt),
            "status": st.just("failed"),
            "failure_reason": st.text(min_size=1, max_size=200),
        }
    )
    return st.one_of(ok, mean_only, failed)


class _Api:
    """Calls operations as schemathesis cases and checks every answer against the schema."""

    def __init__(self, schema: BaseSchema, figures: Figures) -> None:
        self.figures = figures
        self.operations: dict[str, APIOperation[Any, Any, Any, Any]] = {}
        for result in schema.get_all_operations():
            if isinstance(result, Err):
                raise result.err()  # the schema itself is broken
            operation = result.ok()
            self.operations[f"{operation.method.upper()} {operation.path}"] = operation
        self.called: set[str] = set()

    def call(
        self,
        label: str,
        token: str,
        *,
        path: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        """Call one operation; record anything the checks refuse. ``None`` when the app raised."""
        operation = self.operations[label]
        case = operation.Case(
            path_parameters=dict(path or {}),
            query=dict(query or {}),
            **({"body": body, "media_type": "application/json"} if body is not None else {}),
        )
        headers = {"Authorization": f"Bearer {token}"}
        self.figures.examples += 1
        self.called.add(label)
        try:
            response = case.call(headers=headers)
            self.figures.statuses[response.status_code] += 1
            case.validate_response(response, checks=CHECKS, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                self.figures.found(
                    f"{label} {failure.code} {failure.title}",
                    f"{failure}\n\n{case.as_curl_command(headers=headers)}",
                )
            return response
        except Exception as error:  # an exception out of the app is a finding too
            self.figures.statuses[500] += 1
            report = "".join(traceback.format_exception(error)[-12:])
            self.figures.found(
                f"{label} {first_line(error)}", f"{case.as_curl_command(headers=headers)}\n\n{report}"
            )
            return None
        return response


def lifecycle_machine(
    app: FastAPI, tokens: Tokens, figures: Figures, cases: Mapping[str, list[str]]
) -> tuple[type[RuleBasedStateMachine], _Api]:
    """The state machine class over ``app``; ``cases`` maps each case slug to its hardware kinds."""
    api = _Api(fuzz_schema(app), figures)
    generated = api.operations[_RESULT].as_strategy().map(lambda case: case.body)
    _RESULTS = _plausible_result() | generated  # noqa: N806 - a strategy, named like the others
    names = sorted(tokens.runners)
    pairs = [(case, hardware) for case, kinds in cases.items() for hardware in kinds]
    kinds = sorted({hardware for _, hardware in pairs})

    class RunnerLifecycle(RuleBasedStateMachine):
        RUNNER_NAMES = names
        HARDWARE = kinds

        # Plain lists, not bundles: what a call leased or stored depends on the database, and every
        # rule draws the same values whatever is in them (an index, taken modulo), so Hypothesis
        # sees the same data generation on every run.
        def __init__(self) -> None:
            super().__init__()
            self.runners: dict[str, RunnerSlot] = {}
            self.leases: list[Lease] = []
            self.runs: list[int] = []

        @rule(
            name=st.sampled_from(names),
            hardware=st.sampled_from(kinds),
            gpus=_GPU_COUNTS,
            extra=_RUNNER_EXTRA,
        )
        def register(self, name: str, hardware: str, gpus: int, extra: dict[str, Any]) -> None:
            body = {"name": name, "hardware": hardware, "gpu_count": gpus, **extra}
            response = api.call("POST /api/v1/runners", tokens.runners[name], body=body)
            if response is not None and response.status_code == 200:
                self.runners[name] = RunnerSlot(name=name, token=tokens.runners[name], hardware=hardware)

        @rule(pick=_INDEX, sha=_SHAS, extra=_ENQUEUE_EXTRA)
        def enqueue(self, pick: int, sha: str, extra: dict[str, Any]) -> None:
            # Mostly a case for a registered runner's hardware, so its next claim leases it.
            runners = sorted(self.runners)
            fitting = [
                pair
                for pair in pairs
                if runners and pair[1] == self.runners[runners[pick % len(runners)]].hardware
            ]
            case, hardware = (fitting or pairs)[pick % len(fitting or pairs)]
            body = {"case": case, "hardware": hardware, "commit": {"sha": sha}, **extra}
            api.call("POST /api/v1/jobs", tokens.admin, body=body)

        @rule(pick=_INDEX)
        def claim(self, pick: int) -> None:
            if not self.runners:
                return
            runner = self.runners[sorted(self.runners)[pick % len(self.runners)]]
            response = api.call("POST /api/v1/runners/{name}/claim", runner.token, path={"name": runner.name})
            if response is not None and response.status_code == 200:
                spec = response.json()
                self.leases.append(Lease(runner=runner, job_id=spec["job_id"], attempt=spec["attempt"]))

        @rule(pick=_INDEX, other_attempt=st.none() | st.integers(1, 1000))
        def heartbeat(self, pick: int, other_attempt: int | None) -> None:
            if self.leases:
                lease = self.leases[pick % len(self.leases)]
                body = {"attempt": other_attempt or lease.attempt}
                api.call(
                    _HEARTBEAT,
                    lease.runner.token,
                    path={"job_id": lease.job_id},
                    query={"runner": lease.runner.name},
                    body=body,
                )

        @rule(pick=_INDEX, result=_RESULTS)
        def upload(self, pick: int, result: Any) -> None:
            if not self.leases:
                return
            lease = self.leases.pop(pick % len(self.leases))
            body = {**result, "attempt": lease.attempt} if isinstance(result, dict) else result
            response = api.call(
                _RESULT,
                lease.runner.token,
                path={"job_id": lease.job_id},
                query={"runner": lease.runner.name},
                body=body,
            )
            if response is not None and response.status_code in (200, 201):
                self.runs.append(response.json()["run_id"])

        @rule(pick=_INDEX)
        def read_run(self, pick: int) -> None:
            if self.runs:
                run_id = self.runs[pick % len(self.runs)]
                api.call("GET /api/v1/runs/{run_id}", tokens.admin, path={"run_id": run_id})
                api.call("GET /api/v1/runs/{run_id}/log", tokens.admin, path={"run_id": run_id})

        @rule(pick=_INDEX, reason=st.text(max_size=200))
        def release(self, pick: int, reason: str) -> None:
            if self.leases:
                lease = self.leases.pop(pick % len(self.leases))
                body = {"attempt": lease.attempt, "reason": reason}
                api.call(
                    _RELEASE,
                    lease.runner.token,
                    path={"job_id": lease.job_id},
                    query={"runner": lease.runner.name},
                    body=body,
                )

    return RunnerLifecycle, api


def case_hardware(app: FastAPI) -> dict[str, list[str]]:
    """Each current case's slug and the hardware kinds it runs on, read through the API."""
    with TestClient(app) as client:
        return {
            case["slug"]: [kind["name"] for kind in case["hardware"]]
            for case in client.get(f"{API}/cases").json()
        }


def run_lifecycle_campaign(
    app: FastAPI, tokens: Tokens, *, max_examples: int, steps: int = 20, seed_value: int = 0
) -> Figures:
    """``max_examples`` sequences of up to ``steps`` calls each; collect the findings."""
    figures = Figures(title="Runner sequences (stateful)")
    machine, api = lifecycle_machine(app, tokens, figures, case_hardware(app))
    _walk_every_step(machine)
    test = get_state_machine_test(machine, settings=bounded_settings(max_examples, stateful_step_count=steps))
    seed(seed_value)(test)()
    figures.operations = len(api.called)
    return figures.stop()


def _walk_every_step(machine: type[RuleBasedStateMachine]) -> None:
    """One scripted sequence through every operation (register, enqueue, claim, heartbeat, upload,
    read, release), checked like the generated ones, before them: what the generated sequences
    reach depends on the seed and on the string constants Hypothesis draws from loaded modules,
    so the coverage of every step must not."""
    walk: Any = machine()
    name, hardware = walk.RUNNER_NAMES[0], walk.HARDWARE[0]
    walk.register(name=name, hardware=hardware, gpus=8, extra={})  # enough GPUs for any case
    for sha in ("a" * 40, "b" * 40):
        walk.enqueue(pick=0, sha=sha, extra={})
    walk.claim(pick=0)
    walk.heartbeat(pick=0, other_attempt=None)
    walk.upload(pick=0, result={"status": "ok", "step_times_ms": [120.0, 121.5, 119.8]})
    walk.read_run(pick=0)
    walk.claim(pick=0)
    walk.release(pick=0, reason="walk: handing the job back")
    walk.teardown()
