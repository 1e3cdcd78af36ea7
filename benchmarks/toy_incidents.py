"""Measure the toy repository's history on this machine: does each scripted commit do what it says?

    python benchmarks/toy_incidents.py [--runs 3] [--cases compile,offload] [--planted] [--work DIR]

Creates the toy repository (``runners.toy``) in a temporary directory, checks out every ``main``
commit as a worktree, and runs ``python -m toydit generate`` there with the toy suite's own
parameters and flags (``runners/toy/toy-suite.toml``): first once per commit and case to fill the
inductor cache (that run's wall time is the "first" column: cold for graphs no earlier commit
compiled), then ``--runs`` measured rounds. Rounds go over all commits in turn, so a machine that
speeds up or slows down during the benchmark shifts every commit alike. Each log and perf dump is
parsed with ``runners.parsing.parse_run``: the value of record is what the tracker records, the
median of the per-step times (the toy times a step by its thread's CPU time).

Two cases: ``compile`` (torch.compile + warmup, the suite's main case) and ``offload`` (the same
with ``--offload-during-compile``, where incident 2 shows). For every commit the script checks the
change against the scripted kind, in the cases the commit affects: a regression must be >= +10 %,
a fix <= -10 % (where it is small by design, ``small_with``: only the right way, <= -1 %) and a
speed-up <= -5 % against the previous commit. ``--planted`` runs only the planted commits and the commits before
them.

With the defaults it makes 104 runs of about 4-5 s each (plus cold compiles): about 10 minutes on a
2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runners.parsing import RunStatus, parse_run  # noqa: E402
from runners.toy import ChangeKind, ToyCommit, ToyRepository, create_toy_repository  # noqa: E402
from tracker.statistics.steps import summarize_steps, value_of_record  # noqa: E402

SUITE = ROOT / "runners" / "toy" / "toy-suite.toml"
CASE_SLUGS = {"compile": "toy-dit-t2i-256", "offload": "toy-dit-t2i-256-offload-compile"}
LIMITS = {ChangeKind.REGRESSION: 10.0, ChangeKind.FIX: -10.0, ChangeKind.SPEEDUP: -5.0}
# Where a commit's effect is small by design (``small_with`` in the toy history: #101 lands on top
# of incident 2, and in the offload case its graph break is one of four in every block), it must
# stay small and not go the wrong way beyond noise: -2 to -5 % with 50 steps, -1 to +1 % with 400
# (2-core machines, 2026-12-01). In percent, the signed change in the commit's own direction.
SMALL_BAND_PCT = (-2.0, 5.0)


def suite_flags(slug: str, suite: Path = SUITE) -> list[str]:
    """The command-line flags the toy suite renders for one case (params, then flags)."""
    document = tomllib.loads(suite.read_text(encoding="utf-8"))
    case = next(c for c in document["cases"] if c["slug"] == slug)
    rendered: list[str] = []
    for name, value in case.get("params", {}).items():
        rendered += [f"--{name}", str(value)]
    for name, value in case.get("flags", {}).items():
        if value is True:
            rendered.append(f"--{name}")
        elif value is not False:
            rendered += [f"--{name}", str(value)]
    return rendered


CASES = {name: suite_flags(slug) for name, slug in CASE_SLUGS.items()}


@dataclass(frozen=True)
class Run:
    """One process: its value of record, per-step times, wall time and compile counters."""

    value_ms: float  # the tracker's value of record (tracker.statistics.steps.value_of_record)
    steps_ms: tuple[float, ...]
    wall_steps_ms: tuple[float, ...]  # the same steps' wall times
    wall_s: float  # the whole process, start to exit
    counters: dict[str, object]
    digest: str
    warnings: tuple[str, ...] = ()


@dataclass
class Row:
    """All runs of one commit in one case."""

    commit: ToyCommit
    first: Run | None = None
    runs: list[Run] = field(default_factory=list)

    @property
    def value_ms(self) -> float:
        return statistics.median(r.value_ms for r in self.runs)

    @property
    def spread_pct(self) -> float:
        values = [r.value_ms for r in self.runs]
        return (max(values) - min(values)) / statistics.median(values) * 100.0


def run_once(
    tree: Path, sha: str, flags: Sequence[str], cache: Path, dump: Path, *, env: dict[str, str] | None = None
) -> Run:
    """Run the toy once in ``tree`` and parse what it printed."""
    environment = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(cache),
        "SGLANG_GIT_COMMIT": sha,
        **(env or {}),
    }
    command = [sys.executable, "-m", "toydit", "generate", *flags, "--perf-dump-path", str(dump)]
    start = time.perf_counter()
    result = subprocess.run(
        command,
        cwd=tree,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, in order, as a runner captures it
        text=True,
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"toy failed at {sha[:10]}:\n{result.stdout[-5000:]}")
    dump_text = dump.read_text(encoding="utf-8")
    parsed = parse_run(result.stdout, dump_text)
    if parsed.status is not RunStatus.OK or parsed.denoise_step_ms is None:
        raise RuntimeError(f"log at {sha[:10]} did not parse: {parsed.failure_reason}")
    document = json.loads(dump_text)
    clock = document.get("denoise_step_clock")
    value, _ = value_of_record(
        summarize_steps(parsed.step_times_ms), step_clock=clock if isinstance(clock, str) else None
    )
    return Run(
        value_ms=value,
        steps_ms=tuple(parsed.step_times_ms),
        wall_steps_ms=tuple(document.get("denoise_steps_wall_ms", ())),
        wall_s=wall,
        counters=document["dynamo_counters"],
        digest=document["meta"]["output_digest"],
        warnings=parsed.warnings,
    )


def worktrees(repository: ToyRepository, commits: Sequence[ToyCommit], work: Path) -> dict[str, Path]:
    """A detached worktree per commit under ``work/trees`` (reused when it exists)."""
    trees = {}
    for commit in commits:
        tree = work / "trees" / commit.sha[:10]
        if not tree.exists():
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(repository.path),
                    "worktree",
                    "add",
                    "--quiet",
                    "--detach",
                    str(tree),
                    commit.sha,
                ],
                check=True,
            )
        trees[commit.sha] = tree
    return trees


def planted(repository: ToyRepository) -> list[tuple[ToyCommit, ToyCommit]]:
    """Each main commit scripted to change the step time, with the commit before it."""
    commits = repository.commits
    return [
        (commits[index - 1], commit)
        for index, commit in enumerate(commits)
        if index > 0 and commit.kind in LIMITS
    ]


def applies(commit: ToyCommit, case: str) -> bool:
    """Whether the case runs with every flag the commit's effect needs."""
    return set(commit.needs_flags) <= {flag.removeprefix("--") for flag in CASES[case]}


def check(commit: ToyCommit, change_pct: float, case: str) -> str:
    """Whether a change against the previous commit is what the commit's kind promises in this case."""
    if commit.kind not in LIMITS or not applies(commit, case):
        return "neutral"
    flags = {flag.removeprefix("--") for flag in CASES[case]}
    small = bool(commit.small_with) and set(commit.small_with) <= flags
    limit = LIMITS[commit.kind]
    if small:
        own_way = change_pct if limit > 0 else -change_pct
        low, high = SMALL_BAND_PCT
        ok = low <= own_way <= high
        return f"{commit.kind.value} {'OK' if ok else 'MISSED'} (small: {low:+.0f} to {high:+.0f} % its way)"
    ok = change_pct >= limit if limit > 0 else change_pct <= limit
    return f"{commit.kind.value} {'OK' if ok else 'MISSED'} ({'>=' if limit > 0 else '<='} {limit:+.0f} %)"


def print_table(case: str, rows: list[Row]) -> None:
    """One table per case."""
    print(f"\ncase {case}: {' '.join(CASES[case])}")
    header = (
        f"{'commit':10} {'title':58} {'step ms':>8} {'spread':>7} {'change':>8} "
        f"{'gb':>3} {'graphs':>6} {'frames':>6} {'meas.fr':>7} {'first s':>7} {'wall s':>6}  check"
    )
    print(header)
    print("-" * len(header))
    previous: Row | None = None
    for row in rows:
        counters = row.runs[-1].counters
        measured = counters.get("measured_request", {})
        assert isinstance(measured, dict)
        change_pct = (row.value_ms / previous.value_ms - 1) * 100 if previous else None
        consecutive = previous is not None and _follows(previous.commit, row.commit)
        change = f"{change_pct:+7.1f}%" if change_pct is not None and consecutive else ""
        first = f"{row.first.wall_s:7.1f}" if row.first else ""
        wall = statistics.median(r.wall_s for r in row.runs)
        verdict = check(row.commit, change_pct, case) if change_pct is not None and consecutive else ""
        print(
            f"{row.commit.sha[:10]:10} {row.commit.title[:58]:58} {row.value_ms:8.3f} "
            f"{row.spread_pct:6.1f}% {change:>8} {counters['graph_breaks']:>3} {counters['unique_graphs']:>6} "
            f"{counters['frames_compiled']:>6} {measured.get('frames_compiled', 0):>7} {first:>7} {wall:6.1f}  "
            f"{verdict}"
        )
        previous = row
    neutral = [r.spread_pct for r in rows if r.commit.kind in (ChangeKind.NEUTRAL, ChangeKind.BASELINE)]
    runs = [r.value_ms for row in rows for r in row.runs]
    print(
        f"run-to-run spread of the value of record (max-min over runs / median): "
        f"median {statistics.median(r.spread_pct for r in rows):.1f} %"
        + (f", over neutral commits {statistics.median(neutral):.1f} %" if neutral else "")
        + f"; all {len(runs)} runs of this case took {sum(r.wall_s for row in rows for r in row.runs):.0f} s"
    )


_ORDER: dict[str, int] = {}


def _follows(before: ToyCommit, after: ToyCommit) -> bool:
    return _ORDER.get(after.sha, -1) == _ORDER.get(before.sha, -2) + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="measured runs per commit and case")
    parser.add_argument("--cases", default="compile,offload", help="comma-separated: compile, offload")
    parser.add_argument(
        "--planted", action="store_true", help="only planted commits and the commits before them"
    )
    parser.add_argument("--work", type=Path, default=None, help="keep repository, worktrees and cache here")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="toy-incidents-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        repository = create_toy_repository(work / "repo")
        _ORDER.update({c.sha: i for i, c in enumerate(repository.commits)})
        commits = list(repository.commits)
        if args.planted:
            wanted = {c.sha for pair in planted(repository) for c in pair}
            commits = [c for c in commits if c.sha in wanted]
        trees = worktrees(repository, commits, work)
        cache = work / "inductor-cache"
        dump = work / "perf-dump.json"
        table = {case: [Row(commit) for commit in commits] for case in cases}
        print(f"toy repository: {repository.path} ({len(repository.commits)} commits on main)")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; inductor cache {cache}")
        for round_index in range(args.runs + 1):
            label = "priming the inductor cache" if round_index == 0 else f"round {round_index}/{args.runs}"
            print(f"{label} ... (load average {os.getloadavg()[0]:.2f})", flush=True)
            for case in cases:
                for row in table[case]:
                    run = run_once(trees[row.commit.sha], row.commit.sha, CASES[case], cache, dump)
                    if round_index == 0:
                        row.first = run
                    else:
                        row.runs.append(run)
        for case in cases:
            print_table(case, table[case])
            digests = {
                r.digest for row in table[case] for r in row.runs if row.commit.sha == repository.head_sha
            }
            print(f"output digests at HEAD over {args.runs} runs: {len(digests)} distinct")
            warnings = sorted({w for row in table[case] for r in row.runs for w in r.warnings})
            print(f"parser warnings: {warnings or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
