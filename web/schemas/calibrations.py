"""Shapes of what an A/A calibration measured: its stored figures (``/calibrations``) and its order
effect, which a calibration's comparison carries too (:mod:`web.schemas.comparisons`)."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from tracker.comparisons.labels import order_effect_summary, order_effect_text
from tracker.models import Calibration


class OrderEffectOut(BaseModel):
    """What an A/A calibration measured of running second: the second run of a round against the
    first (both one build), with its 95 % interval, in figures and in words."""

    change_pct: float = Field(description="second run vs first, percent; negative: the second was faster")
    ci_low_pct: float
    ci_high_pct: float
    text: str = Field(description='e.g. "second run -2.6 % [-5.9, +0.7]"')
    summary: str = Field(description="what it means, in a sentence")

    @classmethod
    def of(cls, calibration: Calibration | None) -> OrderEffectOut | None:
        """From the stored calibration; ``None`` without one, or for one stored before the order
        effect was measured."""
        if calibration is None:
            return None
        change = calibration.order_effect_pct
        low, high = calibration.order_effect_low_pct, calibration.order_effect_high_pct
        if change is None or low is None or high is None:
            return None
        return cls(
            change_pct=change,
            ci_low_pct=low,
            ci_high_pct=high,
            text=order_effect_text(change, low, high),
            summary=order_effect_summary(change, low, high, calibration.threshold_pct),
        )


class CalibrationOut(BaseModel):
    """What an A/A comparison measured for one case on one hardware kind.

    ``false_verdict_rate`` and ``mde_pct`` are keyed by round count.
    """

    id: int
    case: str
    case_version: int
    hardware: str
    comparison_id: int | None
    rounds: int
    round_noise_pct: float
    threshold_pct: float
    false_verdict_rate: dict[str, float]
    mde_pct: dict[str, float]
    order_effect: OrderEffectOut | None = Field(
        description="the second run of a round against the first; null for calibrations stored "
        "before it was measured"
    )
    created_at: dt.datetime

    @classmethod
    def of(cls, calibration: Calibration) -> CalibrationOut:
        """From the ORM object."""
        return cls(
            id=calibration.id,
            case=calibration.case.slug,
            case_version=calibration.case.version,
            hardware=calibration.hardware_kind.name,
            comparison_id=calibration.comparison_id,
            rounds=calibration.rounds,
            round_noise_pct=calibration.round_noise_pct,
            threshold_pct=calibration.threshold_pct,
            false_verdict_rate=dict(calibration.false_verdict_rate),
            mde_pct=dict(calibration.mde_pct),
            order_effect=OrderEffectOut.of(calibration),
            created_at=calibration.created_at,
        )
