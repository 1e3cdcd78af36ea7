"""Measure the toy repository's history on this machine: does each scripted commit do what it says?

    python benchmarks/toy_incidents.py [--runs 3] [--cases compile,offload] [--work DIR]

Creates the toy repository (``runners.toy``) in a temporary directory, checks out every ``main``
commit as a worktree, and runs ``python -m toydit generate`` there: first once per commit and case
to fill the inductor cache (that run's wall time is the "first" column: cold for graphs no earlier
commit compiled), then ``--runs`` measured rounds. Rounds go over all commits in turn, so a machine
that speeds up or slows down during the benchmark shifts every commit alike. Each log and perf
dump is parsed with ``runners.parsing.parse_run``; the value of record is the median step time.

Two cases: ``compile`` (torch.compile + warmup, what the toy suite's main case runs) and
``offload`` (the same with ``--offload-during-compile``, where incident 2 shows). For every commit
the script checks the change against the scripted kind: a regression must be >= +10 %, a fix
<= -10 % and a speed-up <= -5 % against the previous commit, in the cases the commit affects.

With the defaults it makes 104 runs of 6-7 s each (plus cold compiles): about 13 minutes on a
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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runners.parsing import RunStatus, parse_run  # noqa: E402
from runners.toy import ChangeKind, ToyCommit, create_toy_repository  # noqa: E402

PROMPT = "A cinematic photo of a red fox sitting in a snowy forest at dawn"
BASE_FLAGS = [
    "--prompt", PROMPT, "--width", "256", "--height", "256", "--num-inference-steps", "20",
    "--guidance-scale", "4.0", "--seed", "42", "--enable-torch-compile", "--warmup",
]  # fmt: skip
CASES = {"compile": BASE_FLAGS, "offload": [*BASE_FLAGS, "--offload-during-compile"]}
LIMITS = {ChangeKind.REGRESSION: 10.0, ChangeKind.FIX: -10.0, ChangeKind.SPEEDUP: -5.0}


@dataclass
class Run:
    """One process: its median step time, wall time and compile counters."""

    median_ms: float
    wall_s: float
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
    def median_ms(self) -> float:
        return statistics.median(r.median_ms for r in self.runs)

    @property
    def spread_pct(self) -> float:
        values = [r.median_ms for r in self.runs]
        return (max(values) - min(values)) / statistics.median(values) * 100.0


def run_once(tree: Path, sha: str, flags: list[str], cache: Path, dump: Path) -> Run:
    """Run the toy once in ``tree`` and parse what it printed."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "SGLANG_GIT_COMMIT": sha}
    command = [sys.executable, "-m", "toydit", "generate", *flags, "--perf-dump-path", str(dump)]
    start = time.perf_counter()
    result = subprocess.run(
        command,
        cwd=tree,
        env=env,
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
    return Run(
        parsed.denoise_step_ms,
        wall,
        document["dynamo_counters"],
        document["meta"]["output_digest"],
        parsed.warnings,
    )


def verdict(row: Row, previous: Row | None, case: str) -> str:
    """Whether the change against the previous commit is what the commit's kind promises here."""
    if previous is None:
        return ""
    change = (row.median_ms / previous.median_ms - 1.0) * 100.0
    kind = row.commit.kind
    applies = set(row.commit.needs_flags) <= {flag.removeprefix("--") for flag in CASES[case]}
    if kind not in LIMITS or not applies:
        return "neutral"
    limit = LIMITS[kind]
    ok = change >= limit if limit > 0 else change <= limit
    return f"{kind.value} {'OK' if ok else 'MISSED'} ({'>=' if limit > 0 else '<='} {limit:+.0f} %)"


def print_table(case: str, rows: list[Row]) -> None:
    """One table per case."""
    print(f"\ncase {case}: {' '.join(CASES[case])}")
    header = (
        f"{'#':>2} {'commit':10} {'title':58} {'step ms':>8} {'spread':>7} {'change':>8} "
        f"{'gb':>3} {'graphs':>6} {'frames':>6} {'meas.fr':>7} {'first s':>7} {'wall s':>6}  check"
    )
    print(header)
    print("-" * len(header))
    previous: Row | None = None
    for index, row in enumerate(rows, start=1):
        counters = row.runs[-1].counters
        measured = counters.get("measured_request", {})
        assert isinstance(measured, dict)
        change = f"{(row.median_ms / previous.median_ms - 1) * 100:+7.1f}%" if previous else ""
        first = f"{row.first.wall_s:7.1f}" if row.first else ""
        wall = statistics.median(r.wall_s for r in row.runs)
        print(
            f"{index:>2} {row.commit.sha[:10]:10} {row.commit.title[:58]:58} {row.median_ms:8.3f} "
            f"{row.spread_pct:6.1f}% {change:>8} {counters['graph_breaks']:>3} {counters['unique_graphs']:>6} "
            f"{counters['frames_compiled']:>6} {measured.get('frames_compiled', 0):>7} {first:>7} {wall:6.1f}  "
            f"{verdict(row, previous, case)}"
        )
        previous = row
    neutral = [r.spread_pct for r in rows if r.commit.kind in (ChangeKind.NEUTRAL, ChangeKind.BASELINE)]
    runs = [r.median_ms for row in rows for r in row.runs]
    print(
        f"run-to-run spread of the median step time (max-min over runs / median): "
        f"median {statistics.median(r.spread_pct for r in rows):.1f} %, over neutral commits "
        f"{statistics.median(neutral):.1f} %; all {len(runs)} runs of this case took "
        f"{sum(r.wall_s for row in rows for r in row.runs):.0f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="measured runs per commit and case")
    parser.add_argument("--cases", default="compile,offload", help="comma-separated: compile, offload")
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
        trees = {}
        for commit in repository.commits:
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
        cache = work / "inductor-cache"
        dump = work / "perf-dump.json"
        table = {case: [Row(commit) for commit in repository.commits] for case in cases}
        print(f"toy repository: {repository.path} ({len(repository.commits)} commits on main)")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; inductor cache {cache}")
        for round_index in range(args.runs + 1):
            label = "priming the inductor cache" if round_index == 0 else f"round {round_index}/{args.runs}"
            print(f"{label} ...", flush=True)
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
