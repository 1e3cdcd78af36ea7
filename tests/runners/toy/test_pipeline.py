"""The toy pipeline as real processes: logs and dumps that parse like sglang's, and both incidents' mechanisms.

The runs compile with the ``aot_eager`` backend (``TOYDIT_COMPILE_BACKEND``): Dynamo traces, breaks
graphs, skips frames and counts exactly as with inductor, but nothing waits for a C++ compiler, so
the whole module takes well under a minute on two cores. Timings are never asserted here; they
belong to ``benchmarks/toy_incidents.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from runners.parsing import RunStatus, parse_run
from runners.toy import ToyRepository, create_toy_repository

pytestmark = pytest.mark.slow  # real toy pipeline runs (torch on the CPU)

pytest.importorskip("torch")

STEPS = 20
REQUEST = [
    "--prompt", "A cinematic photo of a red fox sitting in a snowy forest at dawn", "--negative-prompt", " ",
    "--width", "256", "--height", "256", "--num-inference-steps", str(STEPS), "--guidance-scale", "4.0",
]  # fmt: skip
COMPILED = ["--enable-torch-compile", "--warmup"]
STAGES = [
    "InputValidationStage",
    "TextEncodingStage",
    "ConditioningStage",
    "TimestepPreparationStage",
    "LatentPreparationStage",
    "DenoisingStage",
    "DecodingStage",
]
COUNTERS_LINE = re.compile(
    r"Dynamo counters: graph_breaks=(\d+) unique_graphs=(\d+) frames_compiled=(\d+) recompiles=(\d+)"
)


@dataclass(frozen=True)
class Generated:
    """What one ``python -m toydit generate`` printed and dumped."""

    returncode: int
    log: str  # stdout and stderr as one stream, the way a runner captures them
    dump: dict[str, Any] | None
    dump_text: str | None

    @property
    def counters(self) -> dict[str, Any]:
        assert self.dump is not None
        counters: dict[str, Any] = self.dump["dynamo_counters"]
        return counters

    @property
    def measured(self) -> dict[str, int]:
        measured: dict[str, int] = self.counters["measured_request"]
        return measured

    @property
    def digest(self) -> str:
        found = re.search(r"Output digest: sha256:([0-9a-f]{64})", self.log)
        assert found, self.log[-2000:]
        return found.group(1)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> ToyRepository:
    return create_toy_repository(tmp_path_factory.mktemp("toy") / "repo")


class ToyRunner:
    """Runs ``python -m toydit generate`` in worktrees of the toy repository's main commits."""

    def __init__(self, toy: ToyRepository, scratch: Path) -> None:
        self.toy = toy
        self.scratch = scratch
        self.trees: dict[str, Path] = {}
        self.runs = 0

    def tree(self, source: str) -> Path:
        """A worktree of the main commit written from ``source`` (``04-fused-layernorm``)."""
        if source not in self.trees:
            tree = self.scratch / source
            sha = self.toy.commit(source).sha
            subprocess.run(
                ["git", "-C", str(self.toy.path), "worktree", "add", "--quiet", "--detach", str(tree), sha],
                check=True,
            )
            self.trees[source] = tree
        return self.trees[source]

    def generate(self, source: str, *flags: str, dump: bool = True) -> Generated:
        """Run the toy at that commit in a fresh process."""
        self.runs += 1
        dump_path = self.scratch / f"dump-{self.runs}.json"
        env = {
            **os.environ,
            "SGLANG_GIT_COMMIT": self.toy.commit(source).sha,
            "TOYDIT_COMPILE_BACKEND": "aot_eager",
            "TORCHINDUCTOR_CACHE_DIR": str(self.scratch / "inductor"),
        }
        command = [sys.executable, "-m", "toydit", "generate", *flags]
        if dump:
            command += ["--perf-dump-path", str(dump_path)]
        result = subprocess.run(
            command,
            cwd=self.tree(source),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            check=False,
        )
        dump_text = dump_path.read_text(encoding="utf-8") if dump_path.exists() else None
        return Generated(
            result.returncode, result.stdout, json.loads(dump_text) if dump_text else None, dump_text
        )


@pytest.fixture(scope="module")
def runner(toy: ToyRepository, tmp_path_factory: pytest.TempPathFactory) -> ToyRunner:
    return ToyRunner(toy, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def baseline(runner: ToyRunner) -> Generated:
    result = runner.generate("01-initial", *REQUEST, *COMPILED)
    assert result.returncode == 0, result.log[-3000:]
    return result


@pytest.fixture(scope="module")
def incident_1(runner: ToyRunner) -> Generated:
    result = runner.generate("04-fused-layernorm", *REQUEST, *COMPILED)
    assert result.returncode == 0, result.log[-3000:]
    return result


def test_log_and_dump_parse_to_the_measured_request(baseline: Generated, toy: ToyRepository) -> None:
    parsed = parse_run(baseline.log, baseline.dump_text)
    assert parsed.status is RunStatus.OK
    assert baseline.dump is not None
    # Steps are timed in CPU time: where other processes took more than 5 % of the denoising
    # stage's wall time, the log's average step times the step count falls short of the stage
    # time, and the parser says so; the log's average (0.1 ms resolution, about a millisecond a
    # step) can miss by 5 % on its own. That is the only warning a toy run may bring.
    assert all("differs from the denoising stage time" in warning for warning in parsed.warnings)
    assert parsed.sources == ("log", "perf_dump")
    assert (parsed.requests_seen, parsed.warmup_requests) == (2, 1)
    assert parsed.denoise_step_count == STEPS
    assert len(parsed.step_times_ms) == STEPS
    assert parsed.denoise_step_basis == "median"
    assert [stage.name for stage in parsed.stages] == STAGES
    assert parsed.e2e_ms is not None
    assert baseline.dump is not None
    assert baseline.dump["commit_hash"] == toy.commits[0].sha
    assert [step["step"] for step in baseline.dump["denoise_steps_ms"]] == list(range(STEPS))


def test_steps_are_timed_by_thread_cpu_time_with_wall_times_beside(baseline: Generated) -> None:
    # On one thread a step's time leaves out what other processes took from it; its wall time,
    # kept beside it, cannot be shorter.
    assert baseline.dump is not None
    assert baseline.dump["meta"]["num_threads"] == 1
    assert baseline.dump["denoise_step_clock"] == "thread_cpu"
    cpu = [step["duration_ms"] for step in baseline.dump["denoise_steps_ms"]]
    wall = baseline.dump["denoise_steps_wall_ms"]
    assert len(wall) == len(cpu) == STEPS
    assert all(0 < c <= w + 0.01 for c, w in zip(cpu, wall, strict=True))


def test_log_alone_parses_too(baseline: Generated) -> None:
    parsed = parse_run(baseline.log)
    assert parsed.status is RunStatus.OK
    assert parsed.denoise_step_count == STEPS
    assert parsed.denoise_step_basis == "mean"
    assert parsed.warmup_requests == 1


def test_log_says_what_sglang_says(baseline: Generated) -> None:
    lines = baseline.log.splitlines()
    stamped = [line for line in lines if re.match(r"\[\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] ", line)]
    messages = [line[17:] for line in stamped]
    assert messages.index("Processing warmup req...") < messages.index("Sampling params:")
    assert any(re.fullmatch(r"Warmup req processed in \d+\.\d\d seconds", m) for m in messages)
    assert (
        messages.count(
            "Running pipeline stages: ['input_validation_stage', 'prompt_encoding_stage_primary', "
            "'conditioning_stage', 'timestep_preparation_stage', 'latent_preparation_stage', "
            "'denoising_stage', 'decoding_stage']"
        )
        == 2
    )
    for stage in STAGES:
        assert messages.count(f"[{stage}] started...") == 2
        assert (
            sum(bool(re.fullmatch(rf"\[{stage}\] finished in \d+\.\d{{4}} seconds", m)) for m in messages)
            == 2
        )
    assert any(
        re.fullmatch(r"\[DenoisingStage\] average time per step: \d+\.\d{4} seconds", m) for m in messages
    )
    assert any(re.fullmatch(r"Pixel data generated successfully in \d+\.\d{4} seconds", m) for m in messages)
    assert any(
        re.fullmatch(r"Warmed-up request processed in \d+\.\d{4} seconds \(with warmup excluded\)", m)
        for m in messages
    )
    assert "                  infer_steps: 20" in lines
    # tqdm's piped format: a line per refresh (at most every 0.1 s), the start and the end always.
    progress = [line for line in lines if "%|" in line]
    assert progress[0] == "  0%|          | 0/1 [00:00<?, ?it/s]"
    assert progress[-1].startswith(f"100%|██████████| {STEPS}/{STEPS} [")
    assert f"  0%|          | 0/{STEPS} [00:00<?, ?it/s]" in progress
    assert 4 <= len(progress) < 2 + STEPS + 1


def test_counters_line_matches_the_dump(baseline: Generated, incident_1: Generated) -> None:
    for run in (baseline, incident_1):
        found = COUNTERS_LINE.search(run.log)
        assert found, run.log[-1000:]
        printed = [int(value) for value in found.groups()]
        counters = run.counters
        assert printed == [
            counters[k] for k in ("graph_breaks", "unique_graphs", "frames_compiled", "recompiles")
        ]


def test_baseline_compiles_one_whole_graph(baseline: Generated) -> None:
    counters = baseline.counters
    assert counters["graph_breaks"] == 0
    assert counters["frames_skipped"] == 0
    assert counters["unique_graphs"] == 1
    assert counters["frames_compiled"] == 1
    assert baseline.measured["frames_compiled"] == 0  # compiled during the warmup


def test_incident_1_disabled_kernel_breaks_the_graph(incident_1: Generated) -> None:
    counters = incident_1.counters
    assert counters["graph_breaks"] > 0
    assert counters["frames_skipped"] == 1  # the DiT's forward: a break inside its block loop
    assert counters["unique_graphs"] > 1
    assert parse_run(incident_1.log, incident_1.dump_text).status is RunStatus.OK


def test_incident_1_fix_keeps_the_custom_op_in_the_graph(runner: ToyRunner) -> None:
    fixed = runner.generate("12-custom-op-layernorm", *REQUEST, *COMPILED)
    assert fixed.returncode == 0, fixed.log[-3000:]
    assert fixed.counters["graph_breaks"] == 0
    assert fixed.counters["unique_graphs"] == 1


def test_incident_2_hooks_during_warmup_leave_the_dit_skipped(runner: ToyRunner) -> None:
    broken = runner.generate("10-offload-during-compile", *REQUEST, *COMPILED, "--offload-during-compile")
    fixed = runner.generate("13-dynamo-reset", *REQUEST, *COMPILED, "--offload-during-compile")
    for run in (broken, fixed):
        assert run.returncode == 0, run.log[-3000:]
        assert run.counters["frames_skipped"] == 1  # the warmup ran with the hooks either way
    # Without the reset the measured request compiles nothing: it runs the per-block graphs.
    assert broken.measured["frames_compiled"] == 0
    assert broken.measured["unique_graphs"] == 0
    # With it, the first measured step compiles the DiT again, whole.
    assert fixed.measured["frames_compiled"] == 1
    assert fixed.measured["unique_graphs"] == 1
    assert fixed.measured["graph_breaks"] == 0


def test_same_seed_same_digest(runner: ToyRunner, baseline: Generated) -> None:
    again = runner.generate("01-initial", *REQUEST, *COMPILED)
    assert again.returncode == 0, again.log[-3000:]
    assert again.digest == baseline.digest
    assert baseline.dump is not None
    assert again.dump is not None
    assert again.dump["meta"]["output_digest"] == baseline.digest
    other_seed = runner.generate("01-initial", *REQUEST, "--seed", "7", dump=False)
    assert other_seed.returncode == 0, other_seed.log[-3000:]
    assert other_seed.digest != baseline.digest


def test_save_output_writes_the_picture_and_says_where_as_sglang_does(runner: ToyRunner) -> None:
    # The oldest and the newest commit: every commit of the history takes sglang's output flags.
    for source in ("01-initial", "15-merge-image-tokens"):
        saved = runner.scratch / f"saved-{source}"
        result = runner.generate(source, *REQUEST, "--save-output", "--output-path", str(saved), dump=False)
        assert result.returncode == 0, result.log[-3000:]
        (path,) = saved.iterdir()
        # In colour from release 0.2.0 on, as sglang 0.5.18+ prints it.
        shown = f"\x1b[1;36m{path}\x1b[0;0m" if source >= "14" else str(path)
        assert f"] Output saved to {shown}\n" in result.log
        assert path.name.startswith("A_cinematic_photo")
        assert path.suffix == ".png"
        with Image.open(path) as image:
            assert (image.format, image.mode, image.size) == ("PNG", "RGB", (256, 256))
            planes = b"".join(band.tobytes() for band in image.split())
        # The toy's digest is of its channel-planar 8-bit pixels: the PNG holds exactly those.
        assert hashlib.sha256(planes).hexdigest() == result.digest
    named = runner.generate("01-initial", *REQUEST, "--save-output", "--output-file-name", "fox", dump=False)
    assert "Output saved to outputs/fox.png" in named.log
    assert (runner.tree("01-initial") / "outputs" / "fox.png").is_file()


def test_unknown_flags_are_rejected(runner: ToyRunner) -> None:
    result = runner.generate("01-initial", *REQUEST, "--enable-cfg-parallel", dump=False)
    assert result.returncode == 2
    assert "unrecognized arguments: --enable-cfg-parallel" in result.log
    abbreviated = runner.generate("01-initial", "--prompt", "x", "--num-inference", "3", dump=False)
    assert abbreviated.returncode == 2


def test_invalid_request_fails_the_way_sglang_fails(runner: ToyRunner) -> None:
    result = runner.generate("01-initial", *REQUEST, "--width", "100")
    assert result.returncode == 1
    assert result.dump is None
    parsed = parse_run(result.log)
    assert parsed.status is RunStatus.FAILED
    assert parsed.failure_reason is not None
    assert "InputValidationStage failed" in parsed.failure_reason
    assert "width must be a positive multiple of 64" in parsed.failure_reason
