"""A/A noise of the toy's value of record, quiet and beside a burner, and the planted commits' effects.

    python -m benchmarks.toy_noise [--runs 6] [--rounds 3] [--commit 14-release-0.2.0] [--no-burner]
                                   [--streamer] [--work DIR]

Builds the toy repository (``runners.toy``) in a temporary directory and runs fresh
``python -m toydit generate`` processes of one commit with the toy suite's parameters, for both
cases (``compile``, ``offload``) in turn:

1. ``--runs`` processes per case on the machine as it is ("quiet": the load average is printed;
   take figures worth quoting when it is low);
2. ``--runs`` more per case while a burner process loads one core on and off (15 s busy, 20 s
   asleep, repeated): the load the toy must shrug off on a 2-core runner; with ``--streamer``,
   ``--runs`` more beside a process streaming a 128 MiB array (memory, not registers);
3. ``--rounds`` interleaved rounds over every planted commit and the commit before it, printing
   each planted commit's change against the previous commit in both cases;
4. up to 2 interleaved rounds over the open pull requests cherry-picked, alone and stacked, onto
   the newest ``main`` commit before the first of them landed (the base a pull-request
   comparison uses), against that base.

The value of each run is the tracker's value of record (``tracker.statistics.steps.value_of_record``: for
the toy's steps, timed in thread CPU time, the fastest step; the median for wall-clock steps).
Noise is printed as the median, the coefficient of variation, a robust CV (1.4826 MAD / median)
and max-min over the median; beside it the same for the 20th percentile of the steps, and each
run's wall time. A cold run per
commit and case fills the inductor cache first; its wall time is printed as the cold figure.

With the defaults: 26 priming runs (cold compiles among them), 2 x 2 x 6 noise runs, 3 x 2 x 9
incident runs and 2 x 2 x 4 stacked runs of about 5 s: about 10 minutes on a 2-core machine
that nothing else loads (15 minutes at a load average of 3-4). ``--rounds 0`` measures the noise
alone (about 3 minutes).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.toy_incidents import CASES, ROOT, Run, applies, check, planted, run_once, worktrees
from runners.toy import ToyCommit, ToyRepository, create_toy_repository

BURNER_BUSY_S = 15.0
BURNER_IDLE_S = 20.0
# A run whose steps got less of their wall time as CPU time was interrupted by other processes.
MIN_CPU_SHARE = 0.95
_BURNER = (
    "import time\n"
    "while True:\n"
    "    end = time.monotonic() + {busy}\n"
    "    while time.monotonic() < end:\n"
    "        pass\n"
    "    time.sleep({idle})\n"
)
# A neighbour that streams memory instead of spinning in registers: an in-place multiply over a
# 128 MiB array, over and over (what shares caches and memory bandwidth with the toy's steps).
_STREAMER = "import numpy as np\na = np.ones(16 * 1024 * 1024)\nwhile True:\n    a *= 1.0000001\n"


@dataclass(frozen=True)
class Spread:
    """How far a set of per-run values scatters, in percent of their median."""

    median: float
    cv_pct: float  # sample standard deviation / mean
    robust_cv_pct: float  # 1.4826 * median absolute deviation / median
    range_pct: float  # (max - min) / median
    count: int


def spread(values: Sequence[float]) -> Spread:
    """Median and scatter of ``values`` (at least two).

    Parameters
    ----------
    values
        One number per run, e.g. each run's value of record in ms.

    Returns
    -------
    Spread
        The median, and CV, robust CV and max-min range as percentages of the median or mean.
    """
    if len(values) < 2:
        raise ValueError("spread needs at least two values")
    middle = statistics.median(values)
    mad = statistics.median(abs(v - middle) for v in values)
    return Spread(
        median=middle,
        cv_pct=statistics.stdev(values) / statistics.fmean(values) * 100.0,
        robust_cv_pct=1.4826 * mad / middle * 100.0,
        range_pct=(max(values) - min(values)) / middle * 100.0,
        count=len(values),
    )


def quantile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` by linear interpolation between order statistics."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@contextmanager
def burner(busy_s: float = BURNER_BUSY_S, idle_s: float = BURNER_IDLE_S) -> Iterator[None]:
    """A child process that spins one core for ``busy_s``, sleeps ``idle_s``, and again, until the block ends."""
    with _neighbour(_BURNER.format(busy=busy_s, idle=idle_s)):
        yield


@contextmanager
def streamer() -> Iterator[None]:
    """A child process that streams a 128 MiB array through one core without pause, until the block ends."""
    with _neighbour(_STREAMER):
        time.sleep(1.0)  # its array allocated and touched
        yield


@contextmanager
def _neighbour(source: str) -> Iterator[None]:
    process = subprocess.Popen([sys.executable, "-c", source])
    try:
        yield
    finally:
        process.kill()
        process.wait()


def machine_state() -> str:
    """The load average and the busiest other processes, to print beside every figure."""
    one, five, _ = os.getloadavg()
    top = subprocess.run(
        ["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()[:3]
    busiest = ", ".join(" ".join(line.split()[::-1]) + "%" for line in top)
    return f"load average {one:.2f} (5 min {five:.2f}); busiest: {busiest}"


def cpu_share(run: Run) -> float:
    """CPU time over wall time of the measured steps: below 1 where other processes took the CPU."""
    wall = sum(run.wall_steps_ms)
    return sum(run.steps_ms) / wall if wall else 1.0


def describe(label: str, runs: Sequence[Run]) -> None:
    """Print the noise of a set of runs of one commit and case."""
    record = spread([r.value_ms for r in runs])
    low = spread([quantile(r.steps_ms, 0.2) for r in runs])
    walls = [r.wall_s for r in runs]
    print(
        f"  {label:20} value of record {record.median:7.3f} ms: CV {record.cv_pct:4.1f} %, "
        f"robust CV {record.robust_cv_pct:4.1f} %, max-min {record.range_pct:5.1f} % (n={record.count}) | "
        f"p20 step: CV {low.cv_pct:4.1f} %, max-min {low.range_pct:5.1f} % | "
        f"wall {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f})"
    )
    print(
        "    runs (value ms / CPU share of the steps' wall time):",
        " ".join(f"{r.value_ms:.3f}/{cpu_share(r):.2f}" for r in runs),
    )
    kept = [r for r in runs if cpu_share(r) >= MIN_CPU_SHARE]
    if len(kept) >= 2 and len(kept) < len(runs):
        clean = spread([r.value_ms for r in kept])
        print(
            f"    without the {len(runs) - len(kept)} run(s) whose steps got < {MIN_CPU_SHARE:.0%} of their wall time: "
            f"CV {clean.cv_pct:4.1f} %, max-min {clean.range_pct:5.1f} % (n={clean.count})"
        )


def noise(tree: Path, commit: ToyCommit, runs: int, cache: Path, dump: Path) -> dict[str, list[Run]]:
    """``runs`` fresh processes per case, cases alternating."""
    results: dict[str, list[Run]] = {case: [] for case in CASES}
    for _ in range(runs):
        for case, flags in CASES.items():
            results[case].append(run_once(tree, commit.sha, flags, cache, dump))
    return results


def effects(
    pairs: Sequence[tuple[ToyCommit, ToyCommit]], trees: dict[str, Path], rounds: int, cache: Path, dump: Path
) -> None:
    """Interleaved rounds over every commit of ``pairs``; print each planted commit's change."""
    commits = list({c.sha: c for pair in pairs for c in pair}.values())
    values: dict[tuple[str, str], list[float]] = {}
    for index in range(rounds):
        print(f"  round {index + 1}/{rounds} ({machine_state()})", flush=True)
        for case, flags in CASES.items():
            for commit in commits:
                run = run_once(trees[commit.sha], commit.sha, flags, cache, dump)
                values.setdefault((case, commit.sha), []).append(run.value_ms)
    for before, after in pairs:
        cells = []
        for case in CASES:
            old = statistics.median(values[(case, before.sha)])
            new = statistics.median(values[(case, after.sha)])
            change = (new / old - 1.0) * 100.0
            cells.append(
                f"{case} {old:6.3f} -> {new:6.3f} ms {change:+6.1f} % [{check(after, change, case)}]"
            )
        expected = ", ".join(case for case in CASES if applies(after, case))
        print(f"  {after.source:28} ({after.kind.value}; shows in: {expected or 'none'})")
        print("      " + " | ".join(cells))


def stacks(repository: ToyRepository, work: Path) -> list[tuple[str, Path, str]]:
    """Worktrees of the open pull requests cherry-picked onto the newest commit before any of them landed.

    Returns ``(label, tree, base sha)`` for the base alone, each pull request on it, and all of them.
    """
    shas = [c.sha for c in repository.commits]
    base = repository.commits[min(shas.index(pr.landed_sha) for pr in repository.pull_requests) - 1]
    numbers = [pr.number for pr in repository.pull_requests]
    picks = [[n] for n in numbers] + ([numbers] if len(numbers) > 1 else [])
    result = [(f"base {base.source}", worktrees(repository, [base], work)[base.sha], base.sha)]
    for chosen in picks:
        label = "base + " + " + ".join(f"#{n}" for n in chosen)
        tree = work / "trees" / ("base-" + "-".join(str(n) for n in chosen))
        if not tree.exists():
            git = ["git", "-C", str(repository.path)]
            subprocess.run([*git, "worktree", "add", "--quiet", "--detach", str(tree), base.sha], check=True)
            for number in chosen:
                head = repository.pull_request(number).head_sha
                subprocess.run(
                    [
                        "git",
                        "-C",
                        str(tree),
                        "-c",
                        "user.name=toy",
                        "-c",
                        "user.email=toy@invalid",
                        "cherry-pick",
                        head,
                    ],
                    check=True,
                    capture_output=True,
                )
        result.append((label, tree, base.sha))
    return result


def stacked(targets: Sequence[tuple[str, Path, str]], rounds: int, cache: Path, dump: Path) -> None:
    """Interleaved rounds over the base and the pull requests stacked on it; print each against the base."""
    values: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for case, flags in CASES.items():
            for label, tree, sha in targets:
                values.setdefault((case, label), []).append(run_once(tree, sha, flags, cache, dump).value_ms)
    base_label = targets[0][0]
    for label, _, _ in targets:
        cells = []
        for case in CASES:
            base = statistics.median(values[(case, base_label)])
            value = statistics.median(values[(case, label)])
            cells.append(f"{case} {value:6.3f} ms {(value / base - 1) * 100:+6.1f} %")
        print(f"  {label:28} " + " | ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="fresh processes per case, quiet and loaded")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds over the planted commits (0: skip)"
    )
    parser.add_argument("--commit", default="14-release-0.2.0", help="source name or sha of the A/A commit")
    parser.add_argument("--no-burner", action="store_true", help="skip the loaded runs")
    parser.add_argument(
        "--streamer", action="store_true", help="also run beside a memory-streaming neighbour"
    )
    parser.add_argument("--work", type=Path, default=None, help="keep repository, worktrees and cache here")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    command = shlex.join([Path(sys.executable).name, "-m", "benchmarks.toy_noise", *sys.argv[1:]])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toy-noise-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        repository = create_toy_repository(work / "repo")
        commit = repository.commit(args.commit)
        pairs = planted(repository) if args.rounds > 0 else []
        trees = worktrees(repository, [commit, *(c for pair in pairs for c in pair)], work)
        cache, dump = work / "inductor-cache", work / "perf-dump.json"
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; toy repository {repository.path}")
        print("cases: " + "; ".join(f"{case}: {' '.join(flags)}" for case, flags in CASES.items()))
        print(f"priming the inductor cache ({machine_state()})", flush=True)
        for target in list({c.sha: c for c in [commit, *(c for pair in pairs for c in pair)]}.values()):
            for case, flags in CASES.items():
                first = run_once(trees[target.sha], target.sha, flags, cache, dump)
                print(f"  {target.source:28} {case:8} first run {first.wall_s:5.1f} s", flush=True)
        print(f"\nA/A at {commit.source} ({commit.sha[:10]}), {args.runs} fresh processes per case")
        print(f" quiet ({machine_state()})", flush=True)
        quiet = noise(trees[commit.sha], commit, args.runs, cache, dump)
        for case, runs in quiet.items():
            describe(f"{case}, quiet", runs)
        print(f" quiet, after ({machine_state()})")
        if not args.no_burner:
            print(
                f" loaded: burner {BURNER_BUSY_S:.0f} s busy / {BURNER_IDLE_S:.0f} s idle ({machine_state()})"
            )
            with burner():
                loaded = noise(trees[commit.sha], commit, args.runs, cache, dump)
            for case, runs in loaded.items():
                describe(f"{case}, burner", runs)
        if args.streamer:
            print(f" loaded: memory streamer, always on ({machine_state()})")
            with streamer():
                streamed = noise(trees[commit.sha], commit, args.runs, cache, dump)
            for case, runs in streamed.items():
                describe(f"{case}, streamer", runs)
        if pairs:
            print(f"\nplanted commits against the commit before them, {args.rounds} interleaved rounds")
            effects(pairs, trees, args.rounds, cache, dump)
            targets = stacks(repository, work)
            for _, tree, sha in targets[1:]:
                for flags in CASES.values():
                    run_once(tree, sha, flags, cache, dump)  # fill the cache for the stacked trees
            rounds = min(args.rounds, 2)
            print(f"\npull requests stacked on the base, against the base, {rounds} interleaved rounds")
            stacked(targets, rounds, cache, dump)
    print(f"\ntook {time.perf_counter() - started:.0f} s; reproduce with (from {ROOT}): {command}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
