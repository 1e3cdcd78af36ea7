"""Verdicts in words, speed and output together: a changed output is never a plain improvement."""

from __future__ import annotations

import pytest

from tracker.comparisons.labels import (
    ResultOutcome,
    comparison_label,
    order_effect_summary,
    order_effect_text,
    output_summary,
    result_label,
)
from tracker.enums import ComparisonState, OutputStatus, Verdict

DONE = ComparisonState.DONE


@pytest.mark.parametrize(
    ("verdict", "status", "label"),
    [
        (Verdict.IMPROVEMENT, OutputStatus.CHANGED, "faster, but the output changed"),
        (Verdict.REGRESSION, OutputStatus.CHANGED, "slower, and the output changed"),
        (Verdict.NO_CHANGE, OutputStatus.CHANGED, "output changed"),
        (Verdict.INCONCLUSIVE, OutputStatus.CHANGED, "inconclusive, and the output changed"),
        (Verdict.PENDING, OutputStatus.CHANGED, "pending, and the output changed"),
        (Verdict.IMPROVEMENT, OutputStatus.SAME, "improvement"),
        (Verdict.IMPROVEMENT, OutputStatus.MISSING, "improvement"),
        (Verdict.IMPROVEMENT, None, "improvement"),
        (Verdict.NO_CHANGE, OutputStatus.IDENTICAL, "no change"),
    ],
)
def test_result_labels(verdict: Verdict, status: OutputStatus | None, label: str) -> None:
    assert result_label(verdict, status) == label


@pytest.mark.parametrize(
    ("results", "label"),
    [
        ([(Verdict.IMPROVEMENT, OutputStatus.CHANGED)], "faster, but the output changed"),
        # The output changed on a result whose speed did not: the comparison is still faster.
        (
            [(Verdict.IMPROVEMENT, OutputStatus.IDENTICAL), (Verdict.NO_CHANGE, OutputStatus.CHANGED)],
            "faster, but the output changed",
        ),
        (
            [(Verdict.IMPROVEMENT, OutputStatus.CHANGED), (Verdict.REGRESSION, OutputStatus.SAME)],
            "slower, and the output changed",
        ),
        ([(Verdict.NO_CHANGE, OutputStatus.CHANGED), (Verdict.INCONCLUSIVE, None)], "output changed"),
        ([(Verdict.IMPROVEMENT, OutputStatus.SAME), (Verdict.NO_CHANGE, None)], "improvement"),
        ([(Verdict.IMPROVEMENT, None), (Verdict.REGRESSION, None)], "regression"),
        ([(Verdict.NO_CHANGE, OutputStatus.MISSING), (Verdict.INCONCLUSIVE, None)], "inconclusive"),
        ([(Verdict.NO_CHANGE, OutputStatus.IDENTICAL)], "no change"),
        ([], "no change"),
    ],
)
def test_comparison_labels(results: list[tuple[Verdict, OutputStatus | None]], label: str) -> None:
    assert comparison_label(DONE, [ResultOutcome(*result) for result in results]) == label


def test_an_unfinished_comparison_is_labelled_by_its_state() -> None:
    changed = [ResultOutcome(Verdict.IMPROVEMENT, OutputStatus.CHANGED)]
    assert comparison_label(ComparisonState.RUNNING, changed) == "running"
    assert comparison_label(ComparisonState.PENDING, []) == "queued"
    assert comparison_label(ComparisonState.CANCELLED, changed) == "cancelled"
    assert comparison_label(ComparisonState.FAILED, []) == "failed"


def test_output_summaries() -> None:
    assert output_summary(OutputStatus.IDENTICAL, None, None) == "output identical"
    assert output_summary(OutputStatus.CHANGED, 27.14, 0.8123) == "output changed (PSNR 27.1 dB, SSIM 0.812)"
    assert (
        output_summary(OutputStatus.CHANGED, 27.14, 0.8123, tolerance_db=40.0)
        == "output changed (PSNR 27.1 dB, SSIM 0.812; tolerance 40 dB)"
    )
    assert (
        output_summary(OutputStatus.SAME, 47.0, 0.99) == "output the same picture (PSNR 47.0 dB, SSIM 0.990)"
    )
    assert output_summary(OutputStatus.SAME, None, None) == "output the same picture"
    assert output_summary(OutputStatus.MISSING, None, None) == "output not compared (a side saved no output)"
    assert output_summary(None, None, None) == "output not checked yet"


def test_order_effect_in_figures() -> None:
    assert order_effect_text(-2.6, -5.9, 0.7) == "second run -2.6 % [-5.9, +0.7]"
    assert order_effect_text(1.04, 0.2, 1.9) == "second run +1.0 % [+0.2, +1.9]"


@pytest.mark.parametrize(
    ("effect", "sentence"),
    [
        # The quiet demo's offload case: larger than the threshold, not told apart from noise.
        (
            (-2.6, -5.9, 0.7),
            (
                "The second run of a round was 2.6 % faster (within the noise: the interval holds 0), "
                "more than the 2 % threshold: comparisons alternate their arms' order (A B, B A, ...), "
                "so it lands on base and head alike and an even number of rounds cancels it."
            ),
        ),
        (
            (-1.2, -1.5, -0.9),
            (
                "The second run of a round was 1.2 % faster: comparisons alternate their arms' order "
                "(A B, B A, ...), so it lands on base and head alike and an even number of rounds cancels it."
            ),
        ),
        ((3.0, 2.5, 3.5), "The second run of a round was 3.0 % slower, more than the 2 % threshold: "),
        ((0.02, -0.4, 0.5), "The second run of a round was as fast as the first (within the noise"),
    ],
)
def test_order_effect_in_words(effect: tuple[float, float, float], sentence: str) -> None:
    assert order_effect_summary(*effect, threshold_pct=2.0).startswith(sentence)
