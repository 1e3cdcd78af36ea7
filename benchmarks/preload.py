"""What the preloaded interpreter saves per toy run, and that it measures the same step times.

    python -m benchmarks.preload [--rounds 4] [--case compile] [--work DIR]

Builds the toy repository (``runners.toy``) in a temporary directory, checks out its ``main`` head
as a worktree, and runs ``python -m toydit generate`` there with the toy suite's parameters in
interleaved rounds, each round both ways in turn (A B A B ...): A a fresh subprocess
(``SubprocessLauncher``), B forked from a preloaded interpreter that imported
``runners.workloads.preload.DEMO_PRELOAD`` (``PreloadLauncher``), the runner's two launch paths
with the runner's output capture. One subprocess run first fills the inductor cache.

Printed per way: the median wall time per run (start to exit, as the runner sees it) with its
spread (min-max), and the median value of record (``tracker.statistics.steps.value_of_record``: the fastest
step, the toy times steps in thread CPU time) with its spread. The zygote's one-time import is
printed apart. About 1 minute on a 2-core machine with the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.toy_incidents import CASES, worktrees
from runners.parsing import RunStatus, parse_run
from runners.toy import create_toy_repository
from runners.workloads.preload import DEMO_PRELOAD, FORKED_MODE, PreloadLauncher
from runners.workloads.process import Launcher, LogCapture, SubprocessLauncher, run_process
from tracker.statistics.steps import summarize_steps, value_of_record


@dataclass(frozen=True)
class Measured:
    """One toy run: wall time as the runner sees it, value of record, and how it started."""

    wall_s: float
    value_ms: float
    mode: str


def run_toy(launcher: Launcher, tree: Path, flags: list[str], env: dict[str, str], dump: Path) -> Measured:
    """Run the toy once through ``launcher`` and parse what it printed."""
    dump.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "toydit", "generate", *flags, "--perf-dump-path", str(dump)]
    capture = LogCapture(8 * 1024 * 1024)
    start = time.perf_counter()
    outcome = run_process(
        argv, env=env, cwd=tree, capture=capture, timeout_s=600, grace_s=5, launcher=launcher
    )
    wall = time.perf_counter() - start
    if outcome.failure is not None:
        raise RuntimeError(f"toy failed ({outcome.failure}):\n{capture.text()[-5000:]}")
    dump_text = dump.read_text(encoding="utf-8")
    parsed = parse_run(capture.text(), dump_text)
    if parsed.status is not RunStatus.OK:
        raise RuntimeError(f"toy output did not parse: {parsed.failure_reason}")
    clock = json.loads(dump_text).get("denoise_step_clock")
    value, _ = value_of_record(
        summarize_steps(parsed.step_times_ms), step_clock=clock if isinstance(clock, str) else None
    )
    return Measured(wall_s=wall, value_ms=value, mode=str(outcome.launch.get("mode")))


def describe(label: str, runs: list[Measured]) -> str:
    """One line: median wall with its spread, median value of record with its spread."""
    walls = [run.wall_s for run in runs]
    values = [run.value_ms for run in runs]
    value_median = statistics.median(values)
    return (
        f"{label:<12} n={len(runs)}  wall median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}, max {max(walls):.2f})  value of record median {value_median:.3f} ms "
        f"(min {min(values):.3f}, max {max(values):.3f}; spread {(max(values) - min(values)) / value_median:.1%})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="interleaved A B rounds (at least 4)")
    parser.add_argument("--case", default="compile", choices=sorted(CASES), help="toy case")
    parser.add_argument("--work", type=Path, default=None, help="keep repository, worktree and cache here")
    args = parser.parse_args()
    if args.rounds < 4:
        parser.error("--rounds: at least 4")
    with tempfile.TemporaryDirectory(prefix="toy-preload-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        repository = create_toy_repository(work / "repo")
        head = next(commit for commit in repository.commits if commit.sha == repository.head_sha)
        tree = worktrees(repository, [head], work)[head.sha]
        env = {
            **os.environ,
            "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor-cache"),
            "TORCHINDUCTOR_VEC_ISA_OK": "1",  # as the toy workload sets it (registry.py)
            "SGLANG_GIT_COMMIT": head.sha,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(tree),  # as the toy workload sets it
        }
        flags, dump = CASES[args.case], work / "perf-dump.json"
        print(f"toy {head.sha[:10]} case {args.case}; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        fresh, preload = SubprocessLauncher(), PreloadLauncher(DEMO_PRELOAD)
        try:
            prime = run_toy(fresh, tree, flags, env, dump)
            print(f"priming the inductor cache (subprocess): {prime.wall_s:.2f} s")
            first = run_toy(preload, tree, flags, env, dump)  # starts the zygote; not counted
            print(f"starting the zygote with a first forked run (not counted): {first.wall_s:.2f} s")
            results: dict[str, list[Measured]] = {"subprocess": [], "forked": []}
            for index in range(args.rounds):
                load = os.getloadavg()[0]
                a = run_toy(fresh, tree, flags, env, dump)
                b = run_toy(preload, tree, flags, env, dump)
                if b.mode != FORKED_MODE:
                    raise RuntimeError(f"the B run was not forked: {b.mode}")
                results["subprocess"].append(a)
                results["forked"].append(b)
                print(
                    f"round {index + 1}/{args.rounds} (load {load:.2f}): subprocess {a.wall_s:.2f} s "
                    f"{a.value_ms:.3f} ms | forked {b.wall_s:.2f} s {b.value_ms:.3f} ms",
                    flush=True,
                )
        finally:
            preload.close()
        for label, runs in results.items():
            print(describe(label, runs))
        saved = statistics.median(r.wall_s for r in results["subprocess"]) - statistics.median(
            r.wall_s for r in results["forked"]
        )
        change = statistics.median(r.value_ms for r in results["forked"]) / statistics.median(
            r.value_ms for r in results["subprocess"]
        )
        print(
            f"saved per run: {saved:.2f} s (median wall); value of record forked/subprocess: {change - 1:+.2%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
