"""The real published sglang, as installed by scripts/sglang_contract_env.sh, answers as recorded.

These facts are what the runner's command lines and output readers rely on, checked against sglang's own
parser and logger (tests/contract/sglang/probe.py) for the current and the legacy release. Each release's
probe starts once per session (20–40 s); the tests after that take milliseconds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.contract.sglang.env import (
    RECORDED_BY,
    ProbeSession,
    SglangContractEnv,
    contract_versions,
    describe_option_changes,
    options_document,
    options_path,
)

# One worker runs them all (tests/conftest.py, SHARED_WORKER): each probe starts once (20-40 s).
pytestmark = [pytest.mark.contract, pytest.mark.slow]

ROLES = ("current", "legacy")
COMMANDS = ("generate", "serve")
# Any model id: the probe treats every model as a diffusion model and, offline, fetches nothing.
MODEL = "Qwen/Qwen-Image"
ANSI_CYAN = "\x1b[1;36m"
ANSI_RESET = "\x1b[0;0m"
LOG_PREFIX = r"\[\d\d-\d\d \d\d:\d\d:\d\d\] "


@pytest.fixture(params=ROLES)
def probe(request: pytest.FixtureRequest) -> ProbeSession:
    """The probe of each checked release in turn."""
    session: ProbeSession = request.getfixturevalue(f"sglang_{request.param}")
    return session


def parse(session: ProbeSession, command: str, *argv: str) -> dict[str, object]:
    answer = session.ask({"cmd": "parse", "command": command, "argv": list(argv)})
    assert "exit_code" in answer, answer  # an {"error": ...} alone means the probe failed, not sglang
    return answer


def test_probe_reports_the_version_versions_toml_names(probe: ProbeSession) -> None:
    role = next(entry.role for entry in contract_versions() if entry.version == probe.version)
    assert probe.version == SglangContractEnv.for_role(role).version
    assert probe.ask({"cmd": "version"})["version"] == probe.version


def test_recorded_option_tables_match_the_live_parsers(probe: ProbeSession) -> None:
    path = options_path(probe.version)
    record_command = f".venv/bin/python {RECORDED_BY} {probe.version}"
    assert path.is_file(), f"no recorded options for sglang {probe.version}: run {record_command}"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    live = options_document(probe)
    changes = describe_option_changes(recorded, live)
    assert not changes, (
        f"sglang {probe.version}'s parsers differ from {path.name} (re-record with {record_command} "
        "once the runner copes):\n" + "\n".join(changes)
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_current_refuses_warmup_as_an_ambiguous_prefix(sglang_current: ProbeSession, command: str) -> None:
    answer = parse(sglang_current, command, "--model-path", MODEL, "--warmup")
    assert answer["ok"] is False
    assert answer["exit_code"] == 2
    assert "error: ambiguous option: --warmup could match --warmup-mode" in str(answer["error"])


@pytest.mark.parametrize("command", COMMANDS)
def test_current_takes_warmup_mode_request(sglang_current: ProbeSession, command: str) -> None:
    answer = parse(sglang_current, command, "--model-path", MODEL, "--warmup-mode", "request")
    assert answer["ok"] is True, answer["error"]
    assert answer["server_args"]["warmup_mode"] == "request"  # type: ignore[index]
    assert "warmup" not in answer["server_args"]  # type: ignore[operator]


def test_current_serve_warms_up_at_start_unless_told(sglang_current: ProbeSession) -> None:
    served = parse(sglang_current, "serve", "--model-path", MODEL)
    generated = parse(sglang_current, "generate", "--model-path", MODEL, "--prompt", "a cat")
    assert served["server_args"]["warmup_mode"] == "server"  # type: ignore[index]
    assert generated["server_args"]["warmup_mode"] == "off"  # type: ignore[index]


@pytest.mark.parametrize("command", COMMANDS)
def test_legacy_takes_warmup_as_a_boolean(sglang_legacy: ProbeSession, command: str) -> None:
    bare = parse(sglang_legacy, command, "--model-path", MODEL, "--warmup")
    spelled = parse(sglang_legacy, command, "--model-path", MODEL, "--warmup", "false")
    assert bare["ok"] is True, bare["error"]
    assert bare["server_args"]["warmup"] is True  # type: ignore[index]
    assert spelled["server_args"]["warmup"] is False  # type: ignore[index]
    assert "warmup_mode" not in bare["server_args"]  # type: ignore[operator]


def test_legacy_refuses_warmup_mode_as_unrecognized(sglang_legacy: ProbeSession) -> None:
    answer = parse(sglang_legacy, "generate", "--model-path", MODEL, "--warmup-mode", "request")
    assert (answer["ok"], answer["exit_code"]) == (False, 1)
    assert answer["error"] == "error: unrecognized arguments: --warmup-mode request\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_exits_1_from_server_args_not_2_from_argparse(
    probe: ProbeSession, command: str
) -> None:
    # parse_known_args leaves it over; ServerArgs.from_cli_args raises SystemExit("error: ..."), which
    # Python prints to stderr as it is, exiting 1 (no usage line, unlike argparse's own errors).
    answer = parse(probe, command, "--model-path", MODEL, "--no-such-option")
    assert (answer["ok"], answer["exit_code"]) == (False, 1)
    assert answer["error"] == "error: unrecognized arguments: --no-such-option\n"


def test_generate_passes_the_sampling_parameters_it_parsed(probe: ProbeSession) -> None:
    answer = parse(
        probe, "generate", "--model-path", MODEL, "--prompt", "a cat", "--width", "512", "--seed", "7"
    )
    assert answer["ok"] is True, answer["error"]
    sampling = answer["sampling"]
    assert sampling["width"] == 512  # type: ignore[index]
    assert sampling["seed"] == 7  # type: ignore[index]
    assert sampling["prompt"] in ("a cat", ["a cat"])  # type: ignore[index]


def test_output_saved_line_is_sglangs_coloured_log_line(probe: ProbeSession, tmp_path: Path) -> None:
    path = tmp_path / "out" / "image.png"
    answer = probe.ask({"cmd": "output_line", "path": str(path)})
    assert re.fullmatch(
        f"{LOG_PREFIX}Output saved to {re.escape(ANSI_CYAN + str(path) + ANSI_RESET)}", answer["line"]
    )
    assert path.is_file()


def test_perf_dump_is_written_by_sglangs_own_dumper(probe: ProbeSession, tmp_path: Path) -> None:
    path = tmp_path / "perf.json"
    memory = {"allocated_mb": 1.0, "reserved_mb": 2.0, "peak_allocated_mb": 3.0, "peak_reserved_mb": 47616.5}
    answer = probe.ask(
        {
            "cmd": "perf_dump",
            "path": str(path),
            "steps_ms": [101.5, 99.25],
            "stages": {"TextEncodingStage": 12.0, "DenoisingStage": 200.75},
            "memory": {"after_denoise": memory},
        }
    )
    assert answer["ok"] is True, answer
    dump = json.loads(path.read_text(encoding="utf-8"))
    assert dump["tag"] == "cli_generate"
    assert dump["steps"] == [
        {"name": "TextEncodingStage", "duration_ms": 12.0},
        {"name": "DenoisingStage", "duration_ms": 200.75},
    ]
    assert dump["denoise_steps_ms"] == [{"step": 0, "duration_ms": 101.5}, {"step": 1, "duration_ms": 99.25}]
    assert dump["memory_checkpoints"]["after_denoise"]["peak_reserved_mb"] == 47616.5
    assert dump["commit_hash"] == "N/A"  # the probe runs outside any git repository


def test_served_peak_memory_line(probe: ProbeSession) -> None:
    answer = probe.ask({"cmd": "served_memory_line", "peak_memory_mb": 47616.5})
    assert re.fullmatch(f"{LOG_PREFIX}Peak memory usage: 47616.50 MB", answer["line"]), answer
    assert answer["how"].startswith("process_generation_batch() ran")


def test_help_is_what_sglang_generate_help_prints(sglang_current: ProbeSession) -> None:
    answer = sglang_current.ask({"cmd": "help", "command": "generate", "argv": ["--help"]})
    assert answer["exit_code"] == 0
    assert answer["text"].startswith("usage: sglang [-h] [--config CONFIG]")
    assert "--warmup-mode {off,request,server}" in answer["text"]


def test_bad_requests_get_an_error_and_the_probe_lives_on(sglang_current: ProbeSession) -> None:
    assert "error" in sglang_current.ask({"cmd": "no-such-cmd"})
    assert "error" in sglang_current.ask({"cmd": "parse", "command": "launch"})
    assert "error" in sglang_current.ask({"cmd": "help", "command": "generate", "argv": []})
    assert "error" in sglang_current.ask(
        {"cmd": "parse", "command": "serve", "argv": ["--model-type", "llm"]}
    )
    assert sglang_current.ask({"cmd": "version"})["version"] == sglang_current.version
