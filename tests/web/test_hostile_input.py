"""Hostile input answers a clear 4xx, stores nothing and logs no traceback: nesting bombs, out-of-range
times, ids and PR numbers, malformed webhook signatures, booleans and strings as measurements; and
tokens inside uploaded logs, commands and environments are never served back."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from pydantic import SecretStr
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.factories import result_body
from tests.web.app_routes import app_routes
from tracker.models import Candidate, Commit, Comparison, Job, Run, RunArtifacts
from tracker.settings import Settings
from wire import MAX_ID, MAX_JSON_DEPTH

WEBHOOK_SECRET = "whsec-hostile-0123456789"
BEYOND_ANY_ID = "99999999999999999999999"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"github_webhook_secret": SecretStr(WEBHOOK_SECRET)})


@pytest.fixture
def quiet(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The log records of the test; asserting on them proves no traceback was written."""
    caplog.set_level(logging.WARNING)
    return caplog


def _counts(session: Session) -> tuple[int, ...]:
    return tuple(
        session.scalar(select(func.count()).select_from(model)) or 0
        for model in (Run, RunArtifacts, Commit, Candidate, Job, Comparison)
    )


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert not [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR]
    assert "Traceback" not in caplog.text


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _post_result(client: TestClient, token: str, body: object) -> Response:
    return client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})


def _enqueue(client: TestClient, token: str, **overrides: Any) -> Response:
    body = {"case": "qwen-image-t2i-1024", "hardware": "H200", "commit": {"sha": "669a9bd"}, **overrides}
    return client.post("/api/v1/jobs", json=body, headers={"Authorization": f"Bearer {token}"})


# 1. Nesting depth


@pytest.mark.parametrize(("field", "depth"), [("environment", 900), ("perf_dump", 400), ("environment", 40)])
def test_deeply_nested_upload_is_refused(
    client: TestClient,
    runner_token: str,
    session: Session,
    quiet: pytest.LogCaptureFixture,
    field: str,
    depth: int,
) -> None:
    before = _counts(session)
    response = _post_result(client, runner_token, result_body(**{field: _nested(depth)}))
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == f"{field}: nested more than {MAX_JSON_DEPTH} levels deep"
    assert _counts(session) == before
    _no_traceback(quiet)


def test_nesting_within_the_limit_is_stored(client: TestClient, runner_token: str) -> None:
    # The body is level 1 and the environment level 2: MAX_JSON_DEPTH - 1 levels fit inside it.
    response = _post_result(client, runner_token, result_body(environment=_nested(MAX_JSON_DEPTH - 1)))
    assert response.status_code == 201, response.text


def test_deeply_nested_job_upload_and_runner_labels_are_refused(
    client: TestClient, runner_token: str, admin_token: str, quiet: pytest.LogCaptureFixture
) -> None:
    upload = client.post(
        "/api/v1/jobs/1/result?runner=r1",
        json={"attempt": 1, "step_times_ms": [1.0], "environment": _nested(900)},
        headers={"Authorization": f"Bearer {runner_token}"},
    )
    assert upload.status_code == 422, upload.text
    assert "environment: nested more than" in upload.json()["detail"]
    # A body on the plain InModel base (RunnerIn): the depth is checked before its NUL scrub walks it.
    runner = client.post(
        "/api/v1/runners",
        json={"name": "r1", "hardware": "H200", "gpu_count": 1, "labels": _nested(900)},
        headers={"Authorization": f"Bearer {admin_token}"},
    )
    assert runner.status_code == 422, runner.text
    assert "labels: nested more than" in runner.json()["detail"]
    _no_traceback(quiet)


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_body_too_deep_for_the_json_parser_is_refused(
    client: TestClient, runner_token: str, session: Session, quiet: pytest.LogCaptureFixture, opening: str
) -> None:
    closing = "]" if opening == "[" else "}"
    body = '{"case": ' + opening * 100_000 + "1" + closing * 100_000 + "}"
    before = _counts(session)
    response = client.post(
        "/api/v1/results",
        content=body,
        headers={"Authorization": f"Bearer {runner_token}", "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert "nested too deeply" in response.json()["detail"]
    assert _counts(session) == before
    _no_traceback(quiet)


# 2. Times out of range


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"measured_at": "0001-01-01T00:00:00+05:00"}, "measured_at"),
        ({"measured_at": "9999-12-31T23:59:59-05:00"}, "measured_at"),
        ({"measured_at": "1969-12-31T23:59:59Z"}, "measured_at"),
        ({"commit": {"sha": "669a9bd", "committed_at": "0001-01-01T00:00:00+05:00"}}, "commit.committed_at"),
        ({"commit": {"sha": "669a9bd", "committed_at": "9999-12-31T23:59:59-05:00"}}, "commit.committed_at"),
        ({"commit": {"sha": "669a9bd", "committed_at": "2101-01-01T00:00:00Z"}}, "commit.committed_at"),
    ],
)
def test_upload_time_out_of_range_is_refused(
    client: TestClient,
    runner_token: str,
    session: Session,
    quiet: pytest.LogCaptureFixture,
    overrides: dict[str, Any],
    field: str,
) -> None:
    before = _counts(session)
    response = _post_result(client, runner_token, result_body(**overrides))
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == f"{field}: must be between 1970-01-01 and 2100-12-31 (UTC)"
    assert _counts(session) == before
    _no_traceback(quiet)


def test_upload_time_at_the_bounds_is_stored(client: TestClient, runner_token: str) -> None:
    body = result_body(
        measured_at="1970-01-01T05:00:00+05:00",
        commit={"sha": "669a9bd", "committed_at": "2100-12-31T23:59:59Z"},
    )
    assert _post_result(client, runner_token, body).status_code == 201


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_enqueue_time_out_of_range_is_refused(
    client: TestClient, admin_token: str, session: Session, quiet: pytest.LogCaptureFixture, when: str
) -> None:
    before = _counts(session)
    response = _enqueue(client, admin_token, commit={"sha": "669a9bd", "committed_at": when})
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("commit.committed_at: must be between 1970-01-01")
    assert _counts(session) == before
    _no_traceback(quiet)


# 3. Patches


@pytest.mark.parametrize(
    ("patches", "message"),
    [
        (["#99999999999999999999"], "patches[0]: pull request number 99999999999999999999 is not between 1"),
        (["refs/pull/2147483648/head"], "patches[0]: pull request number 2147483648 is not between 1"),
        (["#0"], "patches[0]: pull request number 0 is not between 1"),
        (["669a9bd", "#٣"], "patches[1]: must be a commit sha"),
        (["669a9bd\n#12"], "patches[0]: must be a commit sha"),
        (["a" * 65], "patches[0]: must be a commit sha"),
        (["#" + "9" * 200], "patches[0]: String should have at most 100 characters"),
        (["#12", "refs/pull/12/head"], "patches: [1] 'refs/pull/12/head' repeats [0]"),
        (["#12@" + "c" * 40, "#12"], "patches: [1] '#12' repeats [0]"),
        (["#12@" + "c" * 39], "patches[0]: must be a commit sha"),
        (["669a9bd", "669a9bd"], "patches: [1] '669a9bd' repeats [0]"),
    ],
)
def test_bad_patches_are_refused_everywhere(
    client: TestClient,
    admin_token: str,
    session: Session,
    quiet: pytest.LogCaptureFixture,
    patches: list[str],
    message: str,
) -> None:
    before = _counts(session)
    headers = {"Authorization": f"Bearer {admin_token}"}
    answers = {
        "enqueue": _enqueue(client, admin_token, patches=patches),
        "result": _post_result(client, admin_token, result_body(patches=patches)),
        "comparison": client.post(
            "/api/v1/comparisons",
            json={
                "base": {"sha": "669a9bd"},
                "head": {"sha": "669a9bd", "patches": patches},
                "cases": ["qwen-image-t2i-1024"],
            },
            headers=headers,
        ),
    }
    for where, response in answers.items():
        assert response.status_code == 422, (where, response.text)
        assert message in response.json()["detail"], (where, response.text)
    assert _counts(session) == before
    _no_traceback(quiet)


def test_largest_pr_number_and_sha256_patches_are_accepted(client: TestClient, admin_token: str) -> None:
    pinned = "refs/pull/43601/head@" + "d" * 40
    response = _enqueue(client, admin_token, patches=["refs/pull/2147483647/head", "ab" * 32, "#7", pinned])
    assert response.status_code == 201, response.text
    assert response.json()["job"]["candidate"].startswith("669a9bd")


# 4. Ids


def _id_routes(client: TestClient) -> list[tuple[str, str]]:
    found = []
    for route in app_routes(client.app):  # type: ignore[arg-type]
        names = re.findall(r"{(\w+)}", route.path)
        if any(name.endswith("_id") for name in names):
            found.append((route.method, re.sub(r"{\w+_id}", "{id}", route.path)))
    return found


@pytest.mark.parametrize("value", [BEYOND_ANY_ID, str(MAX_ID + 1)])
def test_every_id_out_of_range_is_404_on_pages_and_422_on_the_api(
    client: TestClient, admin_token: str, quiet: pytest.LogCaptureFixture, value: str
) -> None:
    routes = _id_routes(client)
    assert {path for _, path in routes} >= {"/runs/{id}", "/api/v1/runs/{id}/log", "/api/v1/jobs/{id}/result"}
    headers = {"Authorization": f"Bearer {admin_token}"}
    for method, path in routes:
        url = path.replace("{id}", value)
        if "/api/v1/jobs/" in url and method == "POST" and not url.endswith("/cancel"):
            url += "?runner=r1"
        response = client.request(method, url, headers=headers)
        if path.startswith("/api/"):
            assert response.status_code == 422, (method, url, response.text)
            assert "_id: Input should be" in response.json()["detail"], (method, url)
        elif method == "GET":
            assert response.status_code == 404, (method, url, response.text)
        else:  # a dashboard form: refused before anything reads the id
            assert response.status_code in (403, 404), (method, url, response.text)
    _no_traceback(quiet)


def test_job_page_id_out_of_range_is_404(client: TestClient, quiet: pytest.LogCaptureFixture) -> None:
    assert client.get(f"/jobs?id={BEYOND_ANY_ID}").status_code == 404
    assert client.get(f"/jobs?id={MAX_ID + 1}").status_code == 404
    _no_traceback(quiet)


# 5. Webhook signatures


@pytest.mark.parametrize("signature", ["sha256=\xe9".encode("latin-1"), b"sha256=\xff\xfe"])
def test_malformed_webhook_signature_is_401(
    client: TestClient, quiet: pytest.LogCaptureFixture, signature: bytes
) -> None:
    response = client.post(
        "/api/v1/github/webhook",
        content=b'{"zen": "hi"}',
        headers={
            "X-Hub-Signature-256": signature,  # type: ignore[dict-item]
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": "hostile-1",
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 401, response.text
    _no_traceback(quiet)


# 6. Strict numbers


@pytest.mark.parametrize(
    "overrides",
    [
        {"step_times_ms": [True, 263.0]},
        {"step_times_ms": ["12", 263.0]},
        {"denoise_step_mean_ms": "263.7", "step_times_ms": []},
        {"denoise_step_mean_ms": True, "step_times_ms": []},
        {"denoise_stage_ms": "13189.5"},
        {"e2e_ms": True},
        {"peak_memory_mb": "1024"},
        {"stages": [{"name": "DenoisingStage", "duration_ms": "13189.5"}]},
        {"compile": {"graph_breaks": "3"}},
        {"compile": {"recompiles": False}},
        {"requests_seen": True},
        {"warmup_requests": "1"},
        {"denoise_step_count": "5"},
        {"denoise_step_count": 5.0},
    ],
)
def test_measurement_must_be_a_json_number(
    client: TestClient, runner_token: str, session: Session, overrides: dict[str, Any]
) -> None:
    before = _counts(session)
    response = _post_result(client, runner_token, result_body(**overrides))
    assert response.status_code == 422, response.text
    assert "Input should be a valid" in response.json()["detail"]
    assert _counts(session) == before


def test_job_upload_numbers_are_strict(client: TestClient, runner_token: str) -> None:
    for body in ({"attempt": True, "step_times_ms": [1.0]}, {"attempt": 1, "request_latencies_ms": ["5"]}):
        response = client.post(
            "/api/v1/jobs/1/result?runner=r1", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert response.status_code == 422, response.text


def test_integers_are_numbers(client: TestClient, runner_token: str) -> None:
    response = _post_result(client, runner_token, result_body(step_times_ms=[250, 263, 264], e2e_ms=20000))
    assert response.status_code == 201, response.text
    run = client.get(f"/api/v1/runs/{response.json()['run_id']}").json()
    assert run["step_times_ms"] == [250.0, 263.0, 264.0]


# 7. Tokens in logs, commands and environments

PT_TOKEN = "pt_" + "Q7x-_9" * 7 + "z"
GH_TOKENS = ["ghp_" + "A1b2" * 9, "gho_" + "C3d4" * 9, "ghs_" + "E5f6" * 9, "ghu_" + "G7h8" * 9]
GH_PAT = "github_pat_11ABCDEFG0" + "x" * 60
HF_TOKEN = "hf_" + "AbCdEfGhIj" * 3 + "klmn"
SECRETS = [PT_TOKEN, *GH_TOKENS, GH_PAT, HF_TOKEN, "s3cr3t-bearer-value", "plain-pass-w0rd", "sk-live-123456"]


def test_tokens_are_redacted_before_storing(client: TestClient, runner_token: str, session: Session) -> None:
    raw_log = "\n".join(
        [
            "[06-01 12:00:00] [DenoisingStage] finished in 13.1895 seconds",
            f"uploading with {PT_TOKEN} and {GH_TOKENS[0]}",
            f"git clone https://x-access-token:{GH_TOKENS[1]}@github.com/sgl-project/sglang",
            f"tokens: {GH_TOKENS[2]}, {GH_TOKENS[3]}, {GH_PAT}",
            "curl -H 'Authorization: Bearer s3cr3t-bearer-value' https://example.org",
            f"Authorization: token {GH_TOKENS[0]}",
            "PGPASSWORD=plain-pass-w0rd psql; TOKENIZERS_PARALLELISM=false num_key_value_heads=8",
            "ServerArgs(model_path='Qwen/Qwen-Image', api_key='sk-live-123456', max_total_tokens=4096)",
        ]
    )
    body = result_body(
        raw_log=raw_log,
        command=f"HF_TOKEN={HF_TOKEN} sglang generate --model-path Qwen/Qwen-Image --api-key sk-live-123456",
        environment={"gpu": "H200", "HF_TOKEN": "anything-at-all", "launch": {"argv": f"--token {PT_TOKEN}"}},
        failure_reason=None,
        warnings=[f"a warning quoting {GH_PAT}"],
        perf_dump={"commit_hash": "669a9bd", "server_args": {"api_key": "sk-live-123456", "hf": HF_TOKEN}},
    )
    response = _post_result(client, runner_token, body)
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    log = client.get(f"/api/v1/runs/{run_id}/log").text
    run = client.get(f"/api/v1/runs/{run_id}").json()
    page = client.get(f"/runs/{run_id}").text
    stored = session.get(RunArtifacts, run_id)
    assert stored is not None
    texts = (log, json.dumps(run), page, stored.raw_log, stored.command, json.dumps(stored.environment))
    for text in (*texts, json.dumps(stored.perf_dump), json.dumps(run["warnings"])):
        for secret in [*SECRETS, "anything-at-all"]:
            assert secret not in text
    # What is not a secret stays, so the log still explains the run.
    assert "finished in 13.1895 seconds" in log
    assert "TOKENIZERS_PARALLELISM=false num_key_value_heads=8" in log
    assert "max_total_tokens=4096" in log
    assert "Authorization: Bearer [redacted]" in log
    assert run["command"].startswith("HF_TOKEN=[redacted] sglang generate --model-path Qwen/Qwen-Image")
    assert run["environment"]["HF_TOKEN"] == "[redacted]"
    assert run["environment"]["gpu"] == "H200"
    assert stored.perf_dump is not None
    assert stored.perf_dump["commit_hash"] == "669a9bd"
    assert "a warning quoting [redacted]" in run["warnings"]


def test_tokens_in_a_failure_reason_are_redacted(client: TestClient, runner_token: str) -> None:
    body = result_body(status="failed", failure_reason=f"clone failed: {GH_TOKENS[0]}", step_times_ms=[])
    body.pop("denoise_step_mean_ms")
    response = _post_result(client, runner_token, body)
    assert response.status_code == 201, response.text
    run = client.get(f"/api/v1/runs/{response.json()['run_id']}").json()
    assert run["failure_reason"] == "clone failed: [redacted]"
