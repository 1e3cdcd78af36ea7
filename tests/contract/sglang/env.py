"""The contract environment from the project's side: where each sglang release lives, and its probe.

``scripts/sglang_contract_env.sh`` installs the real published sglang per version into ``.sglang/<version>/``
(``pkg``: sglang itself; ``deps``: the light dependencies of ``requirements-<version>.txt``; ``installed``:
a digest of both). This module runs under the project's venv and imports nothing from sglang: it starts
``probe.py`` in a child interpreter whose ``PYTHONPATH`` is ``stubs:pkg:deps`` and talks JSON lines with
it. Starting a probe takes 20–40 s on this 2-core machine (sglang's import); each answer after that takes
milliseconds to a few seconds, so the pytest fixtures keep one probe per version for the whole session.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

CONTRACT_DIR = Path(__file__).resolve().parent
REPO_ROOT = CONTRACT_DIR.parents[2]
INSTALL_ROOT = REPO_ROOT / ".sglang"
VERSIONS_FILE = CONTRACT_DIR / "versions.toml"
OPTIONS_DIR = REPO_ROOT / "tests" / "data" / "sglang" / "options"
OPTIONS_FORMAT = 1
RECORDED_BY = "scripts/record_sglang_options.py"
OPTIONS_NOTES = (
    "The parsers `sglang generate` and `sglang serve` build for a diffusion model, recorded without a "
    "model path: options that add_resolved_pipeline_config_cli_args adds for a selected or detected "
    "pipeline (e.g. FLUX.3's) are not listed. nargs is argparse's own (0 for flags that take no value). "
    "`boolean` is sglang's StoreBoolean (nargs '?', const true, also takes true/false)."
)
# The order of an option's keys in the recorded files; extra keys ("type_name", "action_class") follow.
ROW_KEYS = ("flags", "dest", "kind", "nargs", "choices", "type", "const", "required")
STARTUP_TIMEOUT_S = 300.0
ANSWER_TIMEOUT_S = 120.0


class ProbeError(RuntimeError):
    """The probe died, timed out or wrote something that is not a JSON answer."""


@dataclass(frozen=True)
class ContractVersion:
    """One entry of ``versions.toml``."""

    version: str
    role: str
    why: str


def contract_versions() -> list[ContractVersion]:
    """The versions the contract tests check, as ``versions.toml`` lists them."""
    with VERSIONS_FILE.open("rb") as file:
        entries = tomllib.load(file)["versions"]
    return [ContractVersion(entry["version"], entry["role"], entry["why"]) for entry in entries]


def install_stamp(version: str, requirements: bytes) -> str:
    """The digest ``scripts/sglang_contract_env.sh`` writes to ``installed`` (sha256 of version line + file)."""
    return hashlib.sha256(f"{version}\n".encode() + requirements).hexdigest()


class SglangContractEnv:
    """One installed sglang release: its folders, whether it is installed and current, its probe."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.root = INSTALL_ROOT / version
        self.pkg = self.root / "pkg"
        self.deps = self.root / "deps"
        self.marker = self.root / "installed"
        self.requirements = CONTRACT_DIR / f"requirements-{version}.txt"
        self.stubs = CONTRACT_DIR / "stubs"
        self.probe_script = CONTRACT_DIR / "probe.py"

    @classmethod
    def for_role(cls, role: str) -> SglangContractEnv:
        """The environment of the version ``versions.toml`` gives ``role`` ("current" or "legacy")."""
        matches = [entry.version for entry in contract_versions() if entry.role == role]
        if len(matches) != 1:
            raise LookupError(f"versions.toml names {len(matches)} versions with role {role!r}, not one")
        return cls(matches[0])

    @property
    def install_command(self) -> str:
        return f"bash scripts/sglang_contract_env.sh {self.version}"

    def missing_reason(self) -> str | None:
        """Why the environment cannot be used, or None when it is installed and up to date."""
        if not self.requirements.is_file():
            return f"no {self.requirements.relative_to(REPO_ROOT)} for sglang {self.version}"
        if not self.marker.is_file():
            return f"sglang {self.version} is not installed in {self.root.relative_to(REPO_ROOT)}"
        want = install_stamp(self.version, self.requirements.read_bytes())
        if self.marker.read_text().strip() != want:
            return (
                f"sglang {self.version} in {self.root.relative_to(REPO_ROOT)} predates its requirements file"
            )
        return None

    def available(self) -> bool:
        """Installed, and installed from the current requirements file."""
        return self.missing_reason() is None

    def probe_environment(self) -> dict[str, str]:
        """The child's environment: sglang's folders only on its path, no hub downloads, no git above."""
        environment = dict(os.environ)
        environment.update(
            PYTHONPATH=os.pathsep.join(str(path) for path in (self.stubs, self.pkg, self.deps)),
            HF_HUB_OFFLINE="1",
            # sglang stamps perf dumps with `git rev-parse HEAD` (0.5.10 in its working directory,
            # 0.5.23 in its package's); this repository is not the commit they mean.
            GIT_CEILING_DIRECTORIES=str(INSTALL_ROOT),
        )
        return environment

    def start(self, *, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> ProbeSession:
        """Start a probe and wait until sglang is imported."""
        reason = self.missing_reason()
        if reason is not None:
            raise ProbeError(f"{reason}: run {self.install_command}")
        return ProbeSession.start(self, startup_timeout_s=startup_timeout_s)


class ProbeSession:
    """A running ``probe.py``: one request, one answer, in order."""

    def __init__(self, process: subprocess.Popen[str], stderr: IO[bytes], version: str) -> None:
        self.process = process
        self.version = version
        self._stderr = stderr
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()
        self.ready: dict[str, Any] = {}

    @classmethod
    def start(cls, env: SglangContractEnv, *, startup_timeout_s: float) -> ProbeSession:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the session owns it; close() closes it
        process = subprocess.Popen(
            [sys.executable, "-P", str(env.probe_script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env.probe_environment(),
            cwd=env.root,
            text=True,
            encoding="utf-8",
        )
        session = cls(process, stderr, env.version)
        session.ready = session._next_answer(startup_timeout_s, "start")
        if not session.ready.get("ready"):
            session.close()
            raise ProbeError(f"probe for sglang {env.version} did not start: {session.ready}")
        return session

    def _read_answers(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def _next_answer(self, timeout_s: float, what: str) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout_s)
        except queue.Empty:
            self.close()
            raise ProbeError(
                f"sglang {self.version} probe: no answer to {what} in {timeout_s:.0f} s"
            ) from None
        if line is None:
            raise ProbeError(f"sglang {self.version} probe exited ({what}):\n{self.stderr_tail()}")
        try:
            answer: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError as error:
            raise ProbeError(f"sglang {self.version} probe wrote {line[:200]!r}: {error}") from None
        return answer

    def ask(self, request: dict[str, Any], *, timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """Send one request, wait for its answer."""
        if self.process.poll() is not None or self.process.stdin is None:
            raise ProbeError(f"sglang {self.version} probe is not running:\n{self.stderr_tail()}")
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._next_answer(timeout_s, str(request.get("cmd")))

    def stderr_tail(self, characters: int = 4000) -> str:
        """The end of what sglang wrote to stderr (its logs), for failure messages."""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - characters))
        return self._stderr.read().decode("utf-8", "replace")

    def close(self) -> None:
        """Close stdin (the probe then exits), and kill it if it does not."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


def options_document(session: ProbeSession) -> dict[str, Any]:
    """The recorded form of both commands' option tables, as the live probe reports them."""
    commands = {}
    for command in ("generate", "serve"):
        answer = session.ask({"cmd": "options", "command": command})
        if "options" not in answer:
            raise ProbeError(f"options for {command}: {answer}")
        commands[command] = answer["options"]
    return {
        "format": OPTIONS_FORMAT,
        "sglang": session.version,
        "recorded_by": RECORDED_BY,
        "notes": OPTIONS_NOTES,
        "commands": {
            command: sorted(rows, key=lambda row: row["flags"][0]) for command, rows in commands.items()
        },
    }


def dump_options_document(document: dict[str, Any]) -> str:
    """Stable, reviewable JSON: one option per line (a changed option is a one-line diff), keys in a fixed order."""
    head = {key: document[key] for key in ("format", "sglang", "recorded_by", "notes") if key in document}
    lines = ["{"]
    lines += [f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}," for key, value in head.items()]
    lines.append('  "commands": {')
    commands = document["commands"]
    for index, command in enumerate(sorted(commands)):
        rows = [f"      {json.dumps(_ordered_row(row), ensure_ascii=False)}" for row in commands[command]]
        lines.append(f"    {json.dumps(command)}: [")
        lines.append(",\n".join(rows))
        lines.append("    ]" + ("," if index < len(commands) - 1 else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _ordered_row(row: dict[str, Any]) -> dict[str, Any]:
    ordered = {key: row[key] for key in ROW_KEYS if key in row}
    ordered.update({key: row[key] for key in sorted(row) if key not in ordered})
    return ordered


def options_path(version: str) -> Path:
    return OPTIONS_DIR / f"{version}.json"


def describe_option_changes(recorded: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """Readable differences between two option documents: added, removed and changed options."""
    changes = []
    for command in sorted(set(recorded.get("commands", {})) | set(live.get("commands", {}))):
        before = {row["flags"][0]: row for row in recorded.get("commands", {}).get(command, [])}
        after = {row["flags"][0]: row for row in live.get("commands", {}).get(command, [])}
        changes += [
            f"{command}: added {flag} {_summary(after[flag])}"
            for flag in sorted(after.keys() - before.keys())
        ]
        changes += [f"{command}: removed {flag}" for flag in sorted(before.keys() - after.keys())]
        for flag in sorted(before.keys() & after.keys()):
            if before[flag] != after[flag]:
                fields = sorted(
                    key
                    for key in before[flag].keys() | after[flag].keys()
                    if before[flag].get(key) != after[flag].get(key)
                )
                detail = ", ".join(
                    f"{key}: {before[flag].get(key)!r} -> {after[flag].get(key)!r}" for key in fields
                )
                changes.append(f"{command}: changed {flag} ({detail})")
    for key in sorted((set(recorded) | set(live)) - {"commands"}):
        if recorded.get(key) != live.get(key):
            changes.append(f"{key}: {recorded.get(key)!r} -> {live.get(key)!r}")
    if not changes and recorded != live:
        text_before = dump_options_document(recorded).splitlines()
        text_after = dump_options_document(live).splitlines()
        changes = list(difflib.unified_diff(text_before, text_after, "recorded", "live", lineterm=""))
    return changes


def _summary(row: dict[str, Any]) -> str:
    return f"({row['kind']}, dest {row['dest']}, nargs {row['nargs']!r}, choices {row['choices']!r})"
