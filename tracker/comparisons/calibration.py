"""What a comparison is judged against: the series' noise, the model threshold, A/A calibrations.

A comparison of few rounds cannot estimate its own noise, so it borrows a prior: the run-to-run
noise of the series (plain-commit runs of the case on that hardware), else the per-arm noise the
newest A/A calibration measured. The threshold is the model's, raised to what the calibration
says this many rounds can detect at all: a verdict below the minimum detectable change would be
luck, not measurement.

An A/A calibration reads its rounds in the order they ran (the first run of a round against the
second, :meth:`tracker.comparisons.summary.RoundView.values_in_run_order`): both arms are one
build, so each round's ``ln(second / first)`` is the *order effect* (what running second does to
a run: warm caches, a host warming up) plus noise. Its mean and interval are stored with the
calibration; the noise is the rounds' spread about it, as before rounds alternated. Comparisons
alternate their arms' order (A B, B A, ...), so an even number of rounds cancels the order effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.models import (
    Calibration,
    Case,
    Comparison,
    HardwareKind,
)
from tracker.series.state import latest_calibration, load_series_runs
from tracker.statistics.ab import NoisePrior, RoundValues, calibrate_aa, compare_rounds
from tracker.statistics.noise import run_to_run_noise
from tracker.statistics.paired_rounds import set_aside_interfered

# A long history should not drown the comparison's own rounds: the prior counts as at most this
# many degrees of freedom.
MAX_PRIOR_DOF = 20
# Comparison sizes an A/A calibration reports (besides its own round count).
CALIBRATION_ROUND_COUNTS = (2, 4, 8)
# An A/A calibration with an interfered round doubles its rounds up to this many.
CALIBRATION_MAX_ROUNDS = 8


@dataclass(frozen=True)
class OrderEffect:
    """How the second run of an A/A round compared with the first: the change (percent, negative:
    faster) and its interval, at the confidence of the calibration's other figures (95 %)."""

    change_pct: float
    ci_low_pct: float
    ci_high_pct: float


def order_effect(rounds: Sequence[RoundValues], *, threshold_pct: float) -> OrderEffect | None:
    """The order effect of A/A rounds given in run order (first run as ``base``, second as ``head``).

    Parameters
    ----------
    rounds
        Usable rounds of one build against itself, each as it ran; the interfered ones left out.
    threshold_pct
        The case's threshold (the paired interval's verdict is not used, only its numbers).

    Returns
    -------
    OrderEffect or None
        The geometric-mean change of the second run over the first with its paired t interval
        (:func:`tracker.statistics.ab.compare_rounds` without a prior: the rounds alone), or
        ``None`` under two rounds, which leave no interval.
    """
    if len(rounds) < 2:
        return None
    measured = compare_rounds(rounds, threshold_pct=threshold_pct)
    assert measured.ci_low_pct is not None
    assert measured.ci_high_pct is not None
    return OrderEffect(
        change_pct=measured.change_pct, ci_low_pct=measured.ci_low_pct, ci_high_pct=measured.ci_high_pct
    )


@dataclass(frozen=True)
class JudgedAgainst:
    """The threshold a result is judged with, where it came from, and the noise prior (if any)."""

    threshold_pct: float
    threshold_source: str
    prior: NoisePrior | None
    prior_source: str | None


def judged_against(*, session: Session, case: Case, hardware: HardwareKind) -> JudgedAgainst:
    """Threshold and noise prior for comparisons of ``case`` on ``hardware``.

    The prior is the newest A/A calibration's per-arm noise when there is one (it measured exactly
    this: the same build twice, in rounds, on this hardware), else the series' run-to-run noise.
    The threshold is the model's (per hardware kind where set). Noise does not raise it: the
    interval already carries the noise, so a noisy setup gives wide intervals and inconclusive
    verdicts (and more rounds), never a "no change" within some inflated band.
    """
    calibration = latest_calibration(session=session, case=case, hardware=hardware)
    prior: NoisePrior | None
    if calibration is not None and calibration.rounds > 1:
        prior = NoisePrior(
            noise_pct=calibration.round_noise_pct, dof=min(calibration.rounds - 1, MAX_PRIOR_DOF)
        )
        prior_source: str | None = "calibration"
    else:
        prior = series_noise_prior(session=session, case=case, hardware=hardware)
        prior_source = "series" if prior is not None else None
    return JudgedAgainst(
        threshold_pct=case.threshold_for(hardware.name),
        threshold_source="model",
        prior=prior,
        prior_source=prior_source,
    )


def series_noise_prior(*, session: Session, case: Case, hardware: HardwareKind) -> NoisePrior | None:
    """Run-to-run noise of the series as a prior, or ``None`` without history.

    The series is what detection reads (:func:`tracker.series.state.load_series_runs`): plain-commit
    runs outside comparisons, refuted outliers left out, so a comparison's own rounds never count.
    """
    commits = load_series_runs(session=session, case=case, hardware=hardware)
    estimate = run_to_run_noise([[run.value for run in entry.runs] for entry in commits])
    if estimate is None:
        return None
    return NoisePrior(noise_pct=estimate.cv_pct, dof=min(estimate.differences, MAX_PRIOR_DOF))


def store_calibration(
    *,
    session: Session,
    comparison: Comparison,
    case: Case,
    hardware: HardwareKind,
    rounds: Sequence[RoundValues],
) -> tuple[int, ...]:
    """Store what an A/A comparison's rounds say about one case × hardware (nothing under 2 rounds).

    ``rounds`` are the usable rounds in run order (first run as ``base``, second as ``head``), so
    the noise is measured about the order effect and the order effect from the same rounds: those
    a neighbour slowed are set aside for both. Returns the rounds (1-based) that stood apart from
    the others and so did not set the noise.
    """
    if len(rounds) < 2:
        return ()
    threshold = case.threshold_for(hardware.name)
    # Interference only slows a run: a round holding one far above its arm's level says nothing
    # about the setup's noise (the paired rounds' rule, tracker.statistics.paired_rounds).
    interfered = set_aside_interfered(rounds, noise_pct=None)
    if len(interfered.kept) < 2:  # too few rounds left to measure anything: keep them all
        interfered = replace(interfered, kept=tuple(rounds), aside=())
    kept = [position for position in range(len(rounds)) if position not in interfered.aside]
    measured = calibrate_aa(
        interfered.kept,
        threshold_pct=threshold,
        round_counts=sorted({*CALIBRATION_ROUND_COUNTS, len(interfered.kept)}),
    )
    order = order_effect(interfered.kept, threshold_pct=threshold)
    calibration = Calibration(
        case_id=case.id,
        hardware_kind_id=hardware.id,
        comparison_id=comparison.id,
        rounds=measured.rounds,
        round_noise_pct=measured.round_noise_pct,
        threshold_pct=threshold,
        false_verdict_rate={str(size): rate for size, rate in measured.false_verdict_rate.items()},
        mde_pct={str(size): mde for size, mde in measured.mde_pct.items()},
        order_effect_pct=order.change_pct if order is not None else None,
        order_effect_low_pct=order.ci_low_pct if order is not None else None,
        order_effect_high_pct=order.ci_high_pct if order is not None else None,
    )
    session.add(calibration)
    session.flush()
    apart = {position + 1 for position in interfered.aside}
    apart.update(kept[number - 1] + 1 for number in measured.outlier_rounds)
    return tuple(sorted(apart))


def calibration_interfered(rounds: Sequence[RoundValues]) -> tuple[int, ...]:
    """The rounds (1-based) of an A/A comparison that a neighbour slowed: more rounds are due.

    ``rounds`` in run order, as :func:`store_calibration` takes them, so both set the same aside.
    """
    return tuple(position + 1 for position in set_aside_interfered(rounds, noise_pct=None).aside)


def list_calibrations(
    *, session: Session, case: str | None = None, hardware: str | None = None, limit: int = 100
) -> list[Calibration]:
    """Calibrations newest first, optionally of one case slug (any version) and hardware kind."""
    query = (
        select(Calibration)
        .join(Case, Case.id == Calibration.case_id)
        .options(selectinload(Calibration.case), selectinload(Calibration.hardware_kind))
        .order_by(Calibration.created_at.desc(), Calibration.id.desc())
        .limit(limit)
    )
    if case is not None:
        query = query.where(Case.slug == get_current_case(session=session, slug=case).slug)
    if hardware is not None:
        query = query.where(
            Calibration.hardware_kind_id == get_hardware_kind(session=session, name=hardware).id
        )
    return list(session.scalars(query))


def calibrations_of(
    *, session: Session, comparison_ids: Sequence[int]
) -> dict[tuple[int, int, int], Calibration]:
    """The calibrations the given A/A comparisons stored, by (comparison id, case id, hardware
    kind id); the newest where one was stored twice."""
    if not comparison_ids:
        return {}
    found = session.scalars(
        select(Calibration)
        .where(Calibration.comparison_id.in_(comparison_ids))
        .order_by(Calibration.created_at, Calibration.id)
    )
    stored: dict[tuple[int, int, int], Calibration] = {}
    for calibration in found:
        assert calibration.comparison_id is not None
        stored[(calibration.comparison_id, calibration.case_id, calibration.hardware_kind_id)] = calibration
    return stored
