"""What the agent launches for a job sees an allow-listed environment: never the agent's token.

The end-to-end test runs ``perftrack runner`` as a real process with a runner token (and other
secrets) in its environment; its build command and its benchmark (the fake sglang behind a script
that writes down its environment) must see the allowed variables and none of the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners.candidates._git import Git
from runners.jobenv import DEFAULT_ALLOWED, JobEnvironment
from runners.workloads.environment import EnvironmentProbe
from tests.leases import UNEXPIRING_LEASE_S
from tests.runners.agent_env import FAKE_SGLANG, ROOT, Tracker, Upstream, make_upstream, tracker
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # a real perftrack runner process against a live tracker

# Writes its environment to OUT/LABEL.json (argv: OUT LABEL [command...]), then runs the command.
DUMP = """
import json, os, sys
out, label, command = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(os.path.join(out, label + ".json"), "w") as handle:
    json.dump(dict(os.environ), handle)
if command:
    os.execv(command[0], command)
"""
FAKE_TOKEN = "pt_" + "T" * 43
AGENT_SECRETS = {
    "PERFTRACK_TOKEN": FAKE_TOKEN,
    "PERFTRACK_DATABASE_URL": "postgresql://perftrack:hunter2@db/perftrack",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "SGLANG_API_KEY": "sk-sglang",  # matches SGLANG_* but looks like a secret: needs its exact name
    "UNRELATED_SETTING": "not on the list",
    "TOKEN_IN_A_VALUE": f"https://tracker?token={FAKE_TOKEN}",  # allowed by name, dropped by value
}
ALLOWED = {
    "HF_HOME": "/models/hf",
    "TORCHINDUCTOR_CACHE_DIR": "/cache/inductor",
    "LC_TIME": "C.UTF-8",
    "CUDA_HOME": "/usr/local/cuda",
    "HF_TOKEN": "hf_allowed_by_name",  # a secret the runner's configuration names explicitly
    "FAKE_SGLANG_SCENARIO": "ok",
}


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return make_upstream(tmp_path)


@pytest.fixture
def live(migrated_db_url: str, tmp_path: Path, upstream: Upstream) -> Iterator[Tracker]:
    with tracker(migrated_db_url, tmp_path, upstream, lease_seconds=UNEXPIRING_LEASE_S) as live_tracker:
        yield live_tracker


def dumped(out: Path, label: str) -> dict[str, str]:
    data: dict[str, str] = json.loads((out / f"{label}.json").read_text())
    return data


def assert_scrubbed(env: dict[str, str], *, token: str) -> None:
    leaked = [name for name, value in env.items() if token in value or FAKE_TOKEN in value]
    assert leaked == []
    assert not [name for name in env if name.startswith("PERFTRACK_")]
    for name in AGENT_SECRETS:
        assert name not in env, name


def test_builds_and_benchmarks_see_the_allow_list_and_no_secret(
    live: Tracker, upstream: Upstream, tmp_path: Path
) -> None:
    out = tmp_path / "env"
    out.mkdir()
    dump = tmp_path / "dump_env.py"
    dump.write_text(DUMP)
    token = live.token_for("cpu-env")
    job = live.enqueue(upstream.main[0])
    env = {**os.environ, **AGENT_SECRETS, **ALLOWED, "PERFTRACK_TOKEN": token}
    env["TOKEN_IN_A_VALUE"] = f"https://tracker?token={token}"
    env.pop("PERFTRACK_DATABASE_URL")  # the runner reads none: it talks to the tracker over HTTP
    runner = subprocess.run(
        [
            sys.executable,
            "-m",
            "perftrack.cli",
            "runner",
            "--server",
            live.url,
            "--hardware",
            "cpu",
            "--workdir",
            str(tmp_path / "work"),
            "--name",
            "cpu-env",
            "--once",
            "--build-command",
            f"upstream={sys.executable} {dump} {out} build",
            "--sglang",
            f"{sys.executable} {dump} {out} bench {FAKE_SGLANG}",
            "--env-allow",
            "HF_TOKEN",
            "--env-allow",
            "FAKE_SGLANG_*",
            "--env-allow",
            "TOKEN_IN_A_VALUE",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert runner.returncode == 0, runner.stdout + runner.stderr
    wait_until(lambda: live.job(job)["state"] == "done", 60, "the job to be done")
    for label in ("build", "bench"):
        seen = dumped(out, label)
        assert_scrubbed(seen, token=token)
        for name, value in ALLOWED.items():
            assert seen.get(name) == value, (label, name)
        assert seen["PATH"] == os.environ["PATH"]
        assert seen.get("HOME") == os.environ.get("HOME")
    assert dumped(out, "bench")["SGLANG_GIT_COMMIT"] == upstream.main[0]


def test_git_and_gpu_probes_run_in_the_allow_listed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**AGENT_SECRETS, **ALLOWED}.items():
        monkeypatch.setenv(name, value)
    dump = tmp_path / "dump_env.py"
    dump.write_text(DUMP)
    subprocess.run(["git", "init", "--quiet", str(tmp_path / "repo")], check=True)
    alias = f"alias.dumpenv=!{sys.executable} {dump} {tmp_path} git"
    Git(tmp_path / "repo", timeout_s=30).run("-c", alias, "dumpenv")
    EnvironmentProbe(nvidia_smi=(sys.executable, str(dump), str(tmp_path), "smi")).gpu_state([0], "before")
    for label in ("git", "smi"):
        seen = dumped(tmp_path, label)
        assert_scrubbed(seen, token=FAKE_TOKEN)
        assert seen["HF_HOME"] == "/models/hf"
        assert "HF_TOKEN" not in seen  # not named by this (default) configuration


def test_the_policy() -> None:
    policy = JobEnvironment(allow=("HF_TOKEN", "MY_*"), secrets=("s3cr3t",))
    source = {
        "PATH": "/bin",
        "LC_ALL": "C",
        "CUDA_VISIBLE_DEVICES": "0",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "TRITON_CACHE_DIR": "/t",
        "HF_TOKEN": "hf",
        "GITHUB_TOKEN": "gh",
        "MY_SETTING": "1",
        "MY_PASSWORD": "pw",  # a pattern never lets a secret-looking name through
        "MY_URL": "https://x/?k=s3cr3t",  # nor a value holding the agent's secret
        "PERFTRACK_TOKEN": "pt",
        "RANDOM": "r",
    }
    assert policy.environ(source) == {
        "PATH": "/bin",
        "LC_ALL": "C",
        "CUDA_VISIBLE_DEVICES": "0",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "TRITON_CACHE_DIR": "/t",
        "HF_TOKEN": "hf",
        "MY_SETTING": "1",
    }
    assert "s3cr3t" not in repr(policy)
    with pytest.raises(ValueError, match="PERFTRACK_"):
        JobEnvironment(allow=("PERFTRACK_TOKEN",))
    with pytest.raises(ValueError, match="not a variable name"):
        JobEnvironment(allow=("A=B",))
    assert {"PATH", "HOME", "LANG", "TZ", "TMPDIR", "USER", "LD_LIBRARY_PATH", "VIRTUAL_ENV"} <= set(
        DEFAULT_ALLOWED
    )
