"""The output check of a comparison result, as the API and the comparison page show it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tracker.comparisons.labels import missing_note, output_summary
from tracker.comparisons.output_checks import OutputRuns
from tracker.enums import OutputStatus
from tracker.models import ComparisonResult
from tracker.outputs.checks import tolerance_of


class OutputCheckOut(BaseModel):
    """Head's seeded output against base's: identical, the same picture, changed, or missing."""

    status: str | None = Field(
        description="identical (equal digests), same (every frame at or above the tolerance), changed "
        "(some frame below it), missing (a side saved no output); null: not checked yet"
    )
    changed: bool = Field(description="beyond the case's tolerance")
    psnr_db: float | None = Field(description="lowest PSNR over the compared frames, dB; null when identical")
    ssim: float | None = Field(description="lowest SSIM over the compared frames")
    tolerance_db: float = Field(
        description="the case's PSNR at or above which two outputs are the same picture"
    )
    summary: str
    base_run_id: int | None = Field(
        description="the base run whose output was compared (its newest saved one)"
    )
    head_run_id: int | None = Field(description="the head run whose output was compared")

    @classmethod
    def of(cls, result: ComparisonResult, runs: OutputRuns) -> OutputCheckOut:
        """From the result's stored check and the runs whose outputs speak for its sides."""
        status = result.output_status
        tolerance_db = tolerance_of(result.case)
        missing = missing_note(
            base_saved=runs.base_run_id is not None, head_saved=runs.head_run_id is not None
        )
        return cls(
            status=status.value if status is not None else None,
            changed=status is OutputStatus.CHANGED,
            psnr_db=result.output_psnr_db,
            ssim=result.output_ssim,
            tolerance_db=tolerance_db,
            summary=output_summary(
                status, result.output_psnr_db, result.output_ssim, tolerance_db=tolerance_db, missing=missing
            ),
            base_run_id=runs.base_run_id,
            head_run_id=runs.head_run_id,
        )
