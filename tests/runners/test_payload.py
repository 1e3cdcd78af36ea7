"""The runner's bodies are the wire format's classes, dumped: what the tracker validates is what was
built, a body the tracker would refuse fails on the runner, and a claim is read as the tracker's job spec."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from runners.candidates import BuiltCandidate
from runners.client import InvalidMessage, TrackerClient
from runners.jobspec import JobSpec
from runners.parsing import ParsedRun, RunStatus, StageTiming
from runners.payload import CommitInfo, as_body, import_result, job_result
from runners.workloads.base import CompileCounters, WorkloadResult
from wire import (
    MAX_FAILURE_REASON,
    ClaimedCandidate,
    ClaimedCarried,
    ClaimedCase,
    ClaimedRepository,
    JobResultIn,
    JobSpecOut,
    ResultIn,
)

PARSED = ParsedRun(
    status=RunStatus.OK,
    denoise_step_count=3,
    step_times_ms=(250.0, 263.0, 264.0),
    denoise_step_mean_ms=259.0,
    stages=(StageTiming("DenoisingStage", 777.0),),
    sources=("log",),
)
COMMIT = CommitInfo(sha="669a9bd", committed_at="2026-03-01T11:00:00+01:00", title="Baseline")


def test_a_job_result_survives_json_and_the_tracker_reads_the_same_upload(tmp_path: Path) -> None:
    workload = WorkloadResult(
        command="sglang generate --model-path Qwen/Qwen-Image",
        log_text="[DenoisingStage] finished\n",
        perf_dump_text='{"steps": [250.0, 263.0, 264.0], "note": null}',
        compile=CompileCounters(graph_breaks=2),
        environment={"conditions": {"quiet_wait": {"busy_cores": None}}},
        request_latencies_ms=(0.0, 812.5),
    )
    built = BuiltCandidate(
        path=tmp_path,
        base_sha="669a9bd" * 5 + "12345",
        head_sha="abcdef1" * 5 + "12345",
        tree_sha="1234567" * 5 + "12345",
        patches_applied=("refs/pull/7/head",),
        patches_already_in=(),
        applied_shas=("fedcba9" * 5 + "12345",),
    )
    upload = job_result(PARSED, attempt=2, workload=workload, built=built, commit=COMMIT)
    body = as_body(upload)
    assert "failure_reason" not in body  # None is left out, not sent as null
    assert body["environment"] == {"conditions": {"quiet_wait": {"busy_cores": None}}}  # kept whole
    assert body["perf_dump"] == {"steps": [250.0, 263.0, 264.0], "note": None}
    assert body["request_latencies_ms"] == [812.5]
    assert body["commit"]["committed_at"] == "2026-03-01T10:00:00Z"
    received = JobResultIn.model_validate(json.loads(json.dumps(body)))
    assert received == upload
    assert received.digest() == upload.digest()
    assert received.build.patches_applied == ["refs/pull/7/head"]
    assert received.compile.graph_breaks == 2


def test_a_failure_is_a_valid_upload_with_its_reason_cut_to_the_limit() -> None:
    failed = ParsedRun(status=RunStatus.FAILED, failure_reason="x" * (MAX_FAILURE_REASON + 50))
    upload = job_result(failed, attempt=1, raw_log="Traceback ...")
    assert upload.failure_reason == "x" * MAX_FAILURE_REASON
    assert upload.raw_log == "Traceback ..."
    assert as_body(upload) == {
        **as_body(JobResultIn(attempt=1, status="failed", failure_reason="x" * MAX_FAILURE_REASON)),
        "raw_log": "Traceback ...",
    }


def test_an_import_is_refused_on_the_runner_with_the_message_the_tracker_would_give() -> None:
    with pytest.raises(ValidationError) as refused:
        import_result(
            PARSED,
            case="qwen-image-t2i-1024",
            hardware="H200",
            commit=CommitInfo(sha="zzzzzzz"),
            idempotency_key="import:0123456789",
            patches=["#12", "refs/pull/12/head"],
        )
    problems = {".".join(str(part) for part in error["loc"]) for error in refused.value.errors()}
    assert problems == {"commit.sha", "patches"}


def test_an_import_body_is_what_post_results_validates() -> None:
    fields: dict[str, Any] = {
        "case": "qwen-image-t2i-1024",
        "hardware": "H200",
        "commit": COMMIT,
        "idempotency_key": "import:0123456789",
        "patches": ["#12"],
        "raw_log": "  a log\x00  ",
    }
    built = import_result(PARSED, **fields)
    assert built.raw_log == "a log\ufffd"  # trimmed and without NUL, as the tracker would store it
    body = as_body(import_result(PARSED, **fields))
    assert ResultIn.model_validate(json.loads(json.dumps(body))) == built


def job_spec_json() -> dict[str, object]:
    spec = JobSpecOut(
        job_id=7,
        attempt=1,
        reason="manual",
        hardware="cpu",
        lease_seconds=60,
        lease_expires_at=dt.datetime(2026, 3, 1, tzinfo=dt.UTC),
        repository=ClaimedRepository(name="toy", url="/srv/toy.git", default_branch="main"),
        candidate=ClaimedCandidate(
            base_sha="669a9bd", patches=["#12"], carried=[ClaimedCarried(ref="#3", reason="fix")]
        ),
        case=ClaimedCase(
            slug="toy-dit",
            version=2,
            model="toy",
            task="t2i",
            workload="toy",
            mode="generate",
            num_gpus=1,
            requests=1,
            timeout_s=60,
            params={"steps": 4},
            flags={"enable-torch-compile": True},
        ),
    )
    answer: dict[str, object] = json.loads(spec.model_dump_json())
    return answer


def test_a_claim_is_read_as_the_trackers_job_spec() -> None:
    job = JobSpec.from_json(job_spec_json())
    assert (job.job_id, job.lease_seconds, job.repository.url) == (7, 60, "/srv/toy.git")
    assert job.candidate.patches == ("#12",)
    assert job.candidate.carried[0].reason == "fix"
    assert job.case.flags == {"enable-torch-compile": True}


def test_a_claim_that_is_no_job_spec_and_a_name_the_tracker_would_refuse() -> None:
    sent: list[str] = []

    def tracker(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        answer = job_spec_json()
        del answer["case"]
        return httpx.Response(200, json=answer)

    client = TrackerClient("http://tracker", "pt_token", retries=0, transport=httpx.MockTransport(tracker))
    with pytest.raises(InvalidMessage, match="case: Field required"):
        client.claim("cpu-1")
    with pytest.raises(InvalidMessage, match="name: String should match pattern") as refused:
        client.register(name="-bad name", hardware="cpu", gpu_count=1, labels={}, version="", host="")
    assert refused.value.status == 0
    assert sent == ["/api/v1/runners/cpu-1/claim"]  # the refused registration was never sent
