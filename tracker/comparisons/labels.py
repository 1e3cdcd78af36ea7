"""A comparison's verdicts in words, speed and output together (pure: enums and numbers in, text out).

A result whose seeded output changed beyond its case's tolerance is never a plain improvement:
"faster, but the output changed"; a regression that changed it is "slower, and the output
changed"; no change in speed is "output changed". A comparison's overall label says the same of
all its results, so the PR comment's headline, the commit status and the pages agree. An A/A
calibration's order effect is put in words here too, for the pages and the API alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from tracker.enums import ComparisonState, OutputStatus, Verdict

FASTER_OUTPUT_CHANGED = "faster, but the output changed"
SLOWER_OUTPUT_CHANGED = "slower, and the output changed"
OUTPUT_CHANGED = "output changed"

_SPEED = {
    Verdict.PENDING: "pending",
    Verdict.REGRESSION: "regression",
    Verdict.IMPROVEMENT: "improvement",
    Verdict.NO_CHANGE: "no change",
    Verdict.INCONCLUSIVE: "inconclusive",
}
_UNFINISHED = {
    ComparisonState.PENDING: "queued",
    ComparisonState.RUNNING: "running",
    ComparisonState.CANCELLED: "cancelled",
    ComparisonState.FAILED: "failed",
}


class ResultOutcome(NamedTuple):
    """What a label reads of one result: its speed verdict and its output check (``None``: not checked)."""

    verdict: Verdict
    output: OutputStatus | None = None


def _with_changed_output(verdict: Verdict) -> str:
    if verdict is Verdict.IMPROVEMENT:
        return FASTER_OUTPUT_CHANGED
    if verdict is Verdict.REGRESSION:
        return SLOWER_OUTPUT_CHANGED
    if verdict in (Verdict.PENDING, Verdict.INCONCLUSIVE):
        return f"{_SPEED[verdict]}, and the output changed"
    return OUTPUT_CHANGED


def result_label(verdict: Verdict, output: OutputStatus | None) -> str:
    """One result in words: ``improvement``, ``faster, but the output changed``, ``no change``, ..."""
    if output is OutputStatus.CHANGED:
        return _with_changed_output(verdict)
    return _SPEED[verdict]


def comparison_label(state: ComparisonState, results: Sequence[ResultOutcome]) -> str:
    """A comparison in words: its state until done, then its results together.

    Done: a changed output names the direction of speed with it (any regression: slower; else any
    improvement: faster); without one, any regression makes it a ``regression``, else any
    improvement an ``improvement``, else any inconclusive result ``inconclusive``, else ``no change``.
    """
    if state in _UNFINISHED:
        return _UNFINISHED[state]
    verdicts = {result.verdict for result in results}
    speed = (
        Verdict.REGRESSION
        if Verdict.REGRESSION in verdicts
        else Verdict.IMPROVEMENT
        if Verdict.IMPROVEMENT in verdicts
        else Verdict.INCONCLUSIVE
        if verdicts & {Verdict.INCONCLUSIVE, Verdict.PENDING}
        else Verdict.NO_CHANGE
    )
    if any(result.output is OutputStatus.CHANGED for result in results):
        return _with_changed_output(speed) if speed is not Verdict.INCONCLUSIVE else OUTPUT_CHANGED
    return _SPEED[speed]


def output_summary(
    status: OutputStatus | None,
    psnr_db: float | None,
    ssim: float | None,
    *,
    tolerance_db: float | None = None,
    missing: str = "a side saved no output",
) -> str:
    """``output identical``, ``output changed (PSNR 27.1 dB, SSIM 0.812)``, ``output not compared``;
    with ``tolerance_db``, the tolerance after the numbers (``...; tolerance 40 dB)``); ``missing``
    says why nothing was compared (:func:`missing_note`)."""
    if status is None:
        return "output not checked yet"
    if status is OutputStatus.IDENTICAL:
        return "output identical"
    if status is OutputStatus.MISSING:
        return f"output not compared ({missing})"
    word = "changed" if status is OutputStatus.CHANGED else "the same picture"
    if psnr_db is None or ssim is None:
        return f"output {word}"
    tolerance = f"; tolerance {tolerance_db:g} dB" if tolerance_db is not None else ""
    return f"output {word} (PSNR {psnr_db:.1f} dB, SSIM {ssim:.3f}{tolerance})"


def missing_note(*, base_saved: bool, head_saved: bool) -> str:
    """Why nothing was compared: ``no saved output of head`` (of base, on either side), or two
    outputs that cannot be compared frame by frame."""
    if base_saved and head_saved:
        return "the two outputs differ in size or frames"
    if not base_saved and not head_saved:
        return "no saved output on either side"
    return f"no saved output of {'head' if base_saved else 'base'}"


def order_effect_text(change_pct: float, low_pct: float, high_pct: float) -> str:
    """``second run -2.6 % [-5.9, +0.7]``: an A/A calibration's order effect and its interval."""
    return f"second run {change_pct:+.1f} % [{low_pct:+.1f}, {high_pct:+.1f}]"


def order_effect_summary(change_pct: float, low_pct: float, high_pct: float, threshold_pct: float) -> str:
    """What an order effect means, in a sentence: how the second run of a round compared with the
    first, whether the interval tells it from noise, how it compares with the threshold, and that
    alternating the arms' order cancels it in comparisons."""
    size = f"{abs(change_pct):.1f} %"
    if round(change_pct, 1) == 0:
        measured = "The second run of a round was as fast as the first"
    else:
        measured = f"The second run of a round was {size} {'faster' if change_pct < 0 else 'slower'}"
    if low_pct <= 0 <= high_pct:
        measured += " (within the noise: the interval holds 0)"
    if abs(change_pct) >= threshold_pct:
        measured += f", more than the {threshold_pct:g} % threshold"
    return (
        f"{measured}: comparisons alternate their arms' order (A B, B A, ...), so it lands on base "
        "and head alike and an even number of rounds cancels it."
    )
