"""The tracker host's install: ``pip install perftrack`` with no extra serves, migrates and imports logs.

The runner extra (``perftrack[runner]``: torch, PyAV) is what a GPU host adds. Without it, the
commands that need it stop with the install that brings it; everything else works.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import subprocess
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import runners.extra
from perftrack.cli import app
from tests.conftest import ROOT
from tests.live import free_port
from tests.waiting import wait_until

LOG = ROOT / "tests" / "data" / "sglang" / "qwen_image_669a9bd.log"
IMPORT_ARGS = ["--case", "qwen-image-t2i-1024", "--hardware", "H200", "--commit", "669a9bd"]
IMPORT_ARGS += ["--commit-time", "2026-05-18T09:00:00Z"]
EXTRA_HINT = "pip install 'perftrack[runner]'"
WEBHOOK_SECRET = "base-install-webhook-secret"


def without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the runner extra's modules look uninstalled, as on a base install."""
    real = importlib.util.find_spec

    def find_spec(name: str) -> ModuleSpec | None:
        return None if name in runners.extra.RUNNER_MODULES else real(name)

    monkeypatch.setattr(runners.extra, "find_spec", find_spec)


@pytest.mark.parametrize(
    "command",
    [
        ["runner", "--server", "http://127.0.0.1:9", "--hardware", "cpu", "--workdir", "w", "--token", "t"],
        ["demo", "--exit"],
    ],
    ids=["runner", "demo"],
)
def test_a_command_that_needs_the_runner_extra_names_the_install(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    without_the_extra(monkeypatch)
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 1
    assert f"perftrack {command[0]} needs the runner extra" in result.output
    assert EXTRA_HINT in result.output  # "[runner]" printed as written, not taken for markup
    assert "PyAV" in result.output
    assert "torch" in result.output
    assert not (tmp_path / "w").exists()  # stopped before doing anything


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment without the project's settings or import path, on a database of its own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PERFTRACK_") and key not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    }
    env["PERFTRACK_DATABASE_URL"] = f"sqlite:///{tmp_path / 'tracker.sqlite'}"
    env["PERFTRACK_DATA_DIR"] = str(tmp_path / "data")
    env["PERFTRACK_GITHUB_WEBHOOK_SECRET"] = WEBHOOK_SECRET
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args: list[str | Path], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900, check=False
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _signed_ping(url: str) -> httpx.Response:
    """GitHub's ``ping`` delivery, signed as GitHub signs it: the bot's webhook takes it."""
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    signature = hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "base-install-ping-1",
        "X-Hub-Signature-256": f"sha256={signature}",
    }
    return httpx.post(f"{url}/api/v1/github/webhook", content=body, headers=headers, timeout=30)


def _health(url: str) -> dict[str, str] | None:
    try:
        answer = httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return None
    return answer.json() if answer.status_code == 200 else None


@pytest.mark.slow
def test_the_base_install_serves_migrates_and_imports_without_torch_or_pyav(tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    venv = tmp_path / "venv"
    _ok(_run([sys.executable, "-m", "venv", venv], env, tmp_path))
    python, perftrack = venv / "bin" / "python", venv / "bin" / "perftrack"
    _ok(_run([python, "-m", "pip", "install", "--quiet", ROOT], env, tmp_path))  # no extra, not editable

    where = _ok(_run([python, "-c", "import perftrack, sys; print(perftrack.__file__)"], env, tmp_path))
    assert where.startswith(str(venv)), where  # the installed package, not the checkout
    for module in runners.extra.RUNNER_MODULES:
        probe = f"import importlib.util as u; print(u.find_spec({module!r}) is None)"
        assert _ok(_run([python, "-c", probe], env, tmp_path)).strip() == "True", module

    assert "serve" in _ok(_run([perftrack, "--help"], env, tmp_path))
    _ok(_run([perftrack, "db", "upgrade"], env, tmp_path))
    assert "stored" in _ok(_run([perftrack, "import-log", LOG, *IMPORT_ARGS], env, tmp_path))

    video = tmp_path / "out.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    refused = _run([perftrack, "import-log", LOG, *IMPORT_ARGS, "--output", video], env, tmp_path)
    assert refused.returncode == 1
    assert EXTRA_HINT in refused.stderr
    agent: list[str | Path] = [perftrack, "runner", "--server", "http://127.0.0.1:9", "--hardware", "cpu"]
    refused = _run([*agent, "--workdir", tmp_path / "w", "--token", "t"], env, tmp_path)
    assert refused.returncode == 1
    assert EXTRA_HINT in refused.stderr

    port = free_port()
    server = subprocess.Popen(
        [perftrack, "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        health = wait_until(lambda: _health(f"{url}/healthz"), 120, "the health check")
        assert health is not None
        assert health["status"] == "ok"
        assert health["database"] == "ok"
        ping = _signed_ping(url)
        assert ping.status_code == 200, ping.text
    finally:
        server.terminate()
        server.wait(timeout=30)
