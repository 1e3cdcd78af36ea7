"""Does a build's placement move a toy run? Worktrees of one commit at other paths, in rounds.

    python benchmarks/toy_build_paths.py [--rounds 12] [--commit 13-dynamo-reset] [--case compile]

A PR comparison's arms are two builds (worktrees at other paths, other patches applied), while an
A/A calibration builds one candidate for both arms: an offset that comes with a build would reach
every PR comparison and no calibration. This makes the toy repository in a temporary directory,
checks one commit out three times (paths of different lengths: ``a``, ``c`` and an 80-character
one, ``b``), and runs the toy case in each per round, in an order that rotates from round to round.
It prints each build's median change against ``a`` over the rounds, the rounds' spread, and how
often each build was the faster.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.toy_incidents import CASES, run_once  # noqa: E402
from runners.toy import create_toy_repository  # noqa: E402

ORDERS = ("acb", "bca", "cab", "bac", "abc", "cba")


def main() -> int:
    """Run the rounds and print each build against ``a``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--commit", default="13-dynamo-reset", help="the toy step to check out")
    parser.add_argument("--case", default="compile", choices=sorted(CASES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perftrack-paths-") as scratch:
        work = Path(scratch)
        repository = create_toy_repository(work / "repo")
        commit = next(item for item in repository.commits if item.source == args.commit)
        trees = {"a": work / "a", "c": work / "c", "b": work / ("b" * 80)}
        for tree in trees.values():
            subprocess.run(
                ["git", "-C", str(repository.path), "worktree", "add", "--detach", str(tree), commit.sha],
                check=True,
                capture_output=True,
            )
        cache = work / "inductor-cache"
        values: dict[str, list[float]] = {name: [] for name in trees}
        for number in range(args.rounds):
            for name in ORDERS[number % len(ORDERS)]:
                run = run_once(trees[name], commit.sha, CASES[args.case], cache, work / f"dump-{name}.json")
                values[name].append(run.value_ms)
            print(
                f"round {number + 1}: " + ", ".join(f"{k} {v[-1]:.4f} ms" for k, v in values.items()),
                flush=True,
            )
    for name in ("c", "b"):
        changes = [100 * math.log(x / y) for x, y in zip(values[name], values["a"], strict=True)]
        faster = sum(change < 0 for change in changes)
        print(
            f"{name} against a: median {statistics.median(changes):+.2f} %, spread (sd) "
            f"{statistics.stdev(changes):.2f} %, {name} faster in {faster} of {len(changes)} rounds"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
