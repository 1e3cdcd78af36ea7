"""The output check a comparison result's diagnosis states, as its rounds stored it on the result
(:mod:`tracker.comparisons.output_checks`): read, never checked again here."""

from __future__ import annotations

from tracker.diagnosis.facts import OutputFact
from tracker.enums import OutputStatus
from tracker.models import ComparisonResult
from tracker.outputs.checks import tolerance_of


def result_output(result: ComparisonResult) -> OutputFact | None:
    """Head's output against base's as a fact, or ``None`` when it was not compared."""
    if result.output_status in (None, OutputStatus.MISSING):
        return None
    return OutputFact(
        changed=result.output_status is OutputStatus.CHANGED,
        tolerance_db=tolerance_of(result.case),
        psnr_db=result.output_psnr_db,
        ssim=result.output_ssim,
        against="base",
    )
