"""perftrack's runner and fake against the real published sglang: command lines, output, dumps.

Each test puts one piece of the runner (or of the fake that stands in for sglang elsewhere) beside
the real package's own code, run by the probe (``probe.py``): the runner reads the real ``--help``
and builds every shipped case's argv, which the real parser and ``ServerArgs`` must accept with
the warmup meant; the fake must refuse and accept exactly what the real parser does; what sglang's
own logger and perf dumper write must parse to the numbers put in. A newer sglang is one entry in
``versions.toml`` away from showing what broke.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from runners.jobspec import CaseSpec
from runners.outputs import capture_output, output_options
from runners.parsing import parse_perf_dump
from runners.parsing.served import summarize_served
from runners.workloads.cli.intents import UnsupportedOption
from runners.workloads.cli.options import CliOptions, parse_help
from runners.workloads.commandline import build_generate_command, build_serve_command
from runners.workloads.profiling import profile_options
from tests.contract.sglang.env import ProbeSession, options_path
from tests.fakes import fake_sglang, sglang_cli, sglang_logs
from tests.suite_cases import suite_cases

# One worker runs them all (tests/conftest.py, SHARED_WORKER): each probe starts once (20-40 s).
pytestmark = [pytest.mark.contract, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "sglang-diffusion.toml"
ROLES = ("current", "legacy")


CASES = suite_cases(SUITE)


@pytest.fixture(params=ROLES)
def probe(request: pytest.FixtureRequest) -> ProbeSession:
    session: ProbeSession = request.getfixturevalue(f"sglang_{request.param}")
    return session


def role_of(probe: ProbeSession) -> str:
    return "current" if probe.version == sglang_cli.ERAS["current"] else "legacy"


def real_options(probe: ProbeSession, case: CaseSpec) -> CliOptions:
    """The options the runner reads from the real ``--help``, asked as the workload asks it."""
    question = ["--model-path", case.model] if case.mode == "generate" else ["--model-type", "diffusion"]
    answer = probe.ask({"cmd": "help", "command": case.mode, "argv": [*question, "--help"]})
    assert answer.get("exit_code") == 0, answer
    return parse_help(answer["text"], source=f"`sglang {case.mode}` of sglang {probe.version}")


def runner_argv(case: CaseSpec, build: CliOptions, *, profiled: bool = False) -> list[str]:
    """The argv (after ``sglang generate|serve``) the workload would run for ``case``."""
    if case.mode == "serve":
        return build_serve_command(case, 30010, (), build)
    extra = [
        *output_options(case.params, case.flags, Path("/job/outputs")),
        *profile_options(3 if profiled else 0),
    ]
    return build_generate_command(case, Path("/job/perf_dump.json"), (), build, extra)


@pytest.mark.parametrize("case", CASES, ids=[case.slug for case in CASES])
def test_every_shipped_case_is_accepted_by_the_real_parser_with_its_warmup(
    probe: ProbeSession, case: CaseSpec
) -> None:
    build = real_options(probe, case)
    refused: UnsupportedOption | None = None
    try:
        argv = runner_argv(case, build, profiled=case.mode == "generate")
    except UnsupportedOption as error:
        refused = error
    if refused is not None:
        # Refusing is right only when the release really lacks what the case needs.
        table = CliOptions.from_recorded(
            json.loads(options_path(probe.version).read_text(encoding="utf-8")), case.mode
        )
        assert refused.option.startswith("--"), refused
        assert refused.option not in table, f"the runner refused {refused.option}, which {probe.version} has"
        return
    answer = probe.ask({"cmd": "parse", "command": case.mode, "argv": argv})
    assert answer["ok"], f"sglang {probe.version} refused {argv}:\n{answer.get('error')}"
    server_args = answer["server_args"]
    if role_of(probe) == "current":
        assert server_args["warmup_mode"] == "request"  # never the server mode generate ignores
    else:
        assert server_args["warmup"] is True
    assert server_args["enable_torch_compile"] is True
    assert server_args["model_path"] == case.model
    assert server_args["num_gpus"] == case.flags.get("num-gpus", 1)
    if "tp-size" in case.flags:
        assert server_args["tp_size"] == case.flags["tp-size"]
    if case.mode == "generate":
        sampling = answer["sampling"]
        assert sampling["seed"] in (case.params["seed"], [case.params["seed"]])
        assert sampling["num_inference_steps"] == case.params["num-inference-steps"]


@pytest.mark.parametrize("command", ["generate", "serve"])
def test_the_runner_reads_the_real_help_as_the_recorded_table_says(probe: ProbeSession, command: str) -> None:
    question = ["--help"] if command == "generate" else ["--model-type", "diffusion", "--help"]
    answer = probe.ask({"cmd": "help", "command": command, "argv": question})
    read = parse_help(answer["text"])
    table = CliOptions.from_recorded(
        json.loads(options_path(probe.version).read_text(encoding="utf-8")), command
    )
    assert set(read.options) == set(table.options)
    differing = {name for name, option in read.options.items() if table.options[name] != option}
    assert not differing, {name: (read.options[name], table.options[name]) for name in differing}
    assert dict(read.aliases) == dict(table.aliases)


MODEL = "Qwen/Qwen-Image-2512"  # a model the release's registry knows, as the real checks need
VERDICTS: dict[str, list[tuple[str, list[str]]]] = {
    "current": [
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--warmup-mode", "request"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--warmup"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--warmup-mode", "later"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--no-such-option"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--num-inference-steps", "many"]),
        (
            "generate",
            ["--model-path", MODEL, "--prompt", "a fox", "--enable-torch-compile", "--seed", "1", "2"],
        ),
        ("serve", ["--model-path", MODEL, "--warmup", "--port", "30010"]),
        ("serve", ["--model-path", MODEL, "--tp-size", "2", "--enable-torch-compile", "--port", "30010"]),
    ],
    "legacy": [
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--warmup"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--warmup", "false"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--warmup-mode", "request"]),
        ("generate", ["--model-path", MODEL, "--prompt", "a fox", "--offload-during-compile"]),
        ("serve", ["--model-path", MODEL, "--warmup", "--port", "30010"]),
    ],
}


def fake_verdict(command: str, argv: list[str]) -> tuple[int | None, str]:
    try:
        sglang_cli.parse(command, argv)
    except sglang_cli.UsageExit as refused:
        return refused.code, refused.message
    return None, ""


@pytest.mark.parametrize("role", ROLES)
def test_the_fake_refuses_and_accepts_what_the_real_parser_does(
    role: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe: ProbeSession = request.getfixturevalue(f"sglang_{role}")
    monkeypatch.setenv("FAKE_SGLANG_ERA", role)
    monkeypatch.delenv("FAKE_SGLANG_OPTIONS", raising=False)
    for command, argv in VERDICTS[role]:
        real = probe.ask({"cmd": "parse", "command": command, "argv": argv})
        code, message = fake_verdict(command, argv)
        assert code == real["exit_code"], (command, argv, real, message)
        if code == 2:  # argparse's own error: the same reason, first words alike
            assert message.splitlines()[-1].split(":")[1:3] == real["error"].splitlines()[-1].split(":")[1:3]
        elif code == 1:
            assert message == real["error"]


def test_a_coloured_output_line_gives_the_clean_path_and_the_output(
    probe: ProbeSession, tmp_path: Path
) -> None:
    saved = tmp_path / "outputs" / "fox.png"
    saved.parent.mkdir()
    answer = probe.ask({"cmd": "output_line", "path": str(saved)})
    line = answer["line"]
    assert "\x1b[" in line  # sglang colours the path, always
    # The fake prints the very same record after its timestamp.
    assert line.split("] ", 1)[1] == f"Output saved to {sglang_logs.CYAN}{saved}{sglang_logs.RESET}"
    with Image.open(saved) as image:
        assert image.size == (8, 8)
    captured = capture_output("\n".join(answer["lines"]), cwd=tmp_path, roots=(tmp_path,))
    assert captured.warnings == ()
    assert captured.output is not None
    assert (captured.output.width, captured.output.height) == (8, 8)
    assert not saved.exists()  # digested, then deleted


def test_a_perf_dump_written_by_sglang_gives_steps_total_and_peak(
    probe: ProbeSession, tmp_path: Path
) -> None:
    steps = [263.7, 264.1, 262.9, 265.0]
    memory = {
        "before_forward": {
            "allocated_mb": 41210.5,
            "reserved_mb": 41836.0,
            "peak_allocated_mb": 41210.5,
            "peak_reserved_mb": 41836.0,
        },
        "after_forward": {
            "allocated_mb": 41262.1,
            "reserved_mb": 46938.0,
            "peak_allocated_mb": 44820.7,
            "peak_reserved_mb": 46938.0,
        },
    }
    stages = {"TextEncodingStage": 210.4, "DenoisingStage": sum(steps), "DecodingStage": 17.9}
    path = tmp_path / "dump.json"
    answer = probe.ask(
        {"cmd": "perf_dump", "path": str(path), "steps_ms": steps, "stages": stages, "memory": memory}
    )
    assert answer["ok"], answer
    dumped_line = next(line for line in answer["lines"] if "Metrics dumped to" in line)
    assert dumped_line.split("] ", 1)[1] == f"Metrics dumped to: {sglang_logs.CYAN}{path}{sglang_logs.RESET}"
    dump = parse_perf_dump(path.read_text(encoding="utf-8"))
    assert list(dump.denoise_steps_ms) == pytest.approx(steps)
    assert dump.total_duration_ms == pytest.approx(sum(stages.values()))
    assert dump.peak_memory_mb == pytest.approx(46938.0)
    assert [stage.name for stage in dump.stages] == list(stages)


def test_the_served_memory_line_gives_the_peak_and_the_fake_prints_it(probe: ProbeSession) -> None:
    answer = probe.ask({"cmd": "served_memory_line", "peak_memory_mb": fake_sglang.SERVED_PEAK_MB})
    line: str = answer["line"]
    record = line.split("] ", 1)[1]
    assert record == f"Peak memory usage: {fake_sglang.SERVED_PEAK_MB:.2f} MB"
    era = role_of(probe)
    assert record in fake_sglang.request_log(0.2637, 50, era=era).splitlines()
    # A served log whose requests end with the real line: the timed ones' peak is the run's.
    log = fake_sglang.served_log([0.2637, 0.2641], era=era)
    run = summarize_served(log, [14000.0, 14010.0])
    assert run.peak_memory_mb == pytest.approx(fake_sglang.SERVED_PEAK_MB)
