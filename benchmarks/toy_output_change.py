"""Measure the toy's output-changing commits on this machine: step time (A B A B) and picture (PSNR/SSIM).

    python benchmarks/toy_output_change.py [--rounds 5] [--cases compile,offload] [--work DIR]

For every ``main`` commit scripted with ``changes_output`` (``runners.toy.history``), runs the commit
before it (A) and the commit (B) in alternation, a fresh process each, ``--rounds`` times per case
with the toy suite's own flags (after one unmeasured run of each to fill the inductor cache). The
value of record is the tracker's (median per-step time, ``benchmarks.toy_incidents.run_once``);
the table shows each arm's median over rounds, its spread (max-min over median) and the change of
the medians. Then the saved pictures (``--save-output``) of A and B are compared with
``tracker.statistics.fidelity`` (the tracker's own PSNR/SSIM).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.toy_incidents import CASES, run_once, worktrees  # noqa: E402
from runners.toy import ToyCommit, create_toy_repository  # noqa: E402
from tracker.statistics.fidelity import score_frame  # noqa: E402


def picture(tree: Path) -> np.ndarray:
    """The newest picture the toy saved in ``tree`` (the suite's ``--save-output``: ``outputs/``)."""
    newest = max((tree / "outputs").glob("*.png"), key=lambda path: path.stat().st_mtime_ns)
    return np.asarray(Image.open(newest).convert("RGB"), dtype=np.uint8)


def spread_pct(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values) * 100.0


def measure(
    pair: tuple[ToyCommit, ToyCommit], trees: dict[str, Path], case: str, rounds: int, work: Path
) -> None:
    """A B A B rounds of one pair in one case; prints medians, spreads, change, PSNR and SSIM."""
    before, after = pair
    flags = CASES[case]
    values: dict[str, list[float]] = {before.sha: [], after.sha: []}
    for round_index in range(rounds + 1):
        for commit in (before, after):
            run = run_once(trees[commit.sha], commit.sha, flags, work / "inductor-cache", work / "dump.json")
            if round_index > 0:  # round 0 fills the inductor cache
                values[commit.sha].append(run.value_ms)
        print(f"  {case} round {round_index}/{rounds} done", flush=True)
    a, b = (statistics.median(values[c.sha]) for c in pair)
    score = score_frame(picture(trees[before.sha]), picture(trees[after.sha]))
    print(
        f"{case:8} A {before.source}: {a:.3f} ms (spread {spread_pct(values[before.sha]):.1f} %)  "
        f"B {after.source}: {b:.3f} ms (spread {spread_pct(values[after.sha]):.1f} %)  "
        f"change {(b / a - 1) * 100:+.1f} %  PSNR {score.psnr_db:.1f} dB  SSIM {score.ssim:.3f}"
    )
    print(f"         A runs {[round(v, 3) for v in values[before.sha]]}")
    print(f"         B runs {[round(v, 3) for v in values[after.sha]]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured A B rounds per case")
    parser.add_argument("--cases", default="compile,offload", help="comma-separated: compile, offload")
    parser.add_argument("--work", type=Path, default=None, help="keep repository, worktrees and cache here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toy-output-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        repository = create_toy_repository(work / "repo", replace_outdated=True)
        commits = repository.commits
        pairs = [(commits[i - 1], c) for i, c in enumerate(commits) if i > 0 and c.changes_output]
        trees = worktrees(repository, [c for pair in pairs for c in pair], work)
        for pair in pairs:
            print(f"{pair[1].sha[:10]} {pair[1].title}")
            for case in [c for c in args.cases.split(",") if c]:
                measure(pair, trees, case, args.rounds, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
