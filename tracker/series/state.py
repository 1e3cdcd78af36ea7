"""A series' stored state: its counted runs, what detection finds in them, its threshold and alerts.

:func:`load_series_runs` reads the runs detection counts (successful, not excluded, no patches,
no comparison rounds); :func:`detect_series` runs :func:`tracker.statistics.changepoints.detect_changes`
over them with the latest A/A calibration as noise floor and prior. Pages and the CLI read the
threshold that applies and a series' alerts from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.enums import ESTABLISHED_CONFIRMATIONS, AlertStatus, Metric, RunSource, RunStatus
from tracker.models import Alert, Calibration, Candidate, Case, Commit, HardwareKind, Job, Run
from tracker.statistics.changepoints import Detection, DetectorConfig, detect_changes, noise_threshold_pct

LOOKBACK_COMMITS = 200


# What torch.compile did in a run: graph breaks, unique graphs, frames compiled, recompiles.
CompileCounters = tuple[int | None, int | None, int | None, int | None]


@dataclass(frozen=True)
class SeriesRun:
    """One successful run of a series."""

    run_id: int
    value: float
    source: RunSource
    runner_id: int | None
    job_id: int | None
    compile: CompileCounters = (None, None, None, None)


@dataclass(frozen=True)
class SeriesCommit:
    """One commit of a series with its runs, in commit order."""

    commit: Commit
    runs: list[SeriesRun]


def load_series_runs(
    *, session: Session, case: Case, hardware: HardwareKind, lookback: int = LOOKBACK_COMMITS
) -> list[SeriesCommit]:
    """The newest ``lookback`` commits of a series with their counted runs, oldest first."""
    rows = session.execute(
        select(
            Run.id,
            Run.denoise_step_ms,
            Run.source,
            Run.runner_id,
            Run.job_id,
            Run.commit_id,
            Run.graph_breaks,
            Run.unique_graphs,
            Run.frames_compiled,
            Run.recompiles,
        )
        .join(Commit, Commit.id == Run.commit_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(
            Job.comparison_id.is_(None),  # comparison rounds are measured apart from the series
            Run.case_id == case.id,
            Run.hardware_kind_id == hardware.id,
            Run.status == RunStatus.OK,
            Run.excluded_reason.is_(None),
            Run.denoise_step_ms.is_not(None),
            Run.denoise_step_ms > 0,
            Candidate.is_plain,
        )
        .order_by(Commit.committed_at.desc(), Commit.id.desc(), Run.id)
        .limit(lookback * 8)
    ).all()
    grouped: dict[int, list[SeriesRun]] = {}
    for row in rows:
        if row.commit_id not in grouped and len(grouped) >= lookback:
            break
        grouped.setdefault(row.commit_id, []).append(
            SeriesRun(
                run_id=row.id,
                value=float(row.denoise_step_ms),
                source=row.source,
                runner_id=row.runner_id,
                job_id=row.job_id,
                compile=(row.graph_breaks, row.unique_graphs, row.frames_compiled, row.recompiles),
            )
        )
    commits = {commit.id: commit for commit in session.scalars(select(Commit).where(Commit.id.in_(grouped)))}
    return [
        SeriesCommit(commit=commits[commit_id], runs=runs) for commit_id, runs in reversed(grouped.items())
    ]


def latest_calibration(*, session: Session, case: Case, hardware: HardwareKind) -> Calibration | None:
    """The newest A/A calibration of a case version on a hardware kind, if any."""
    return session.scalar(
        select(Calibration)
        .where(Calibration.case_id == case.id, Calibration.hardware_kind_id == hardware.id)
        .order_by(Calibration.created_at.desc(), Calibration.id.desc())
        .limit(1)
    )


def detect_series(
    *, session: Session, case: Case, hardware: HardwareKind, commits: list[SeriesCommit] | None = None
) -> tuple[list[SeriesCommit], Detection | None]:
    """Run change detection over a stored series (``None`` with fewer than two commits)."""
    commits = (
        commits if commits is not None else load_series_runs(session=session, case=case, hardware=hardware)
    )
    if len(commits) < 2:
        return commits, None
    calibration = latest_calibration(session=session, case=case, hardware=hardware)
    floor = prior_pct = None
    prior_dof = 0
    if calibration is not None:
        floor = noise_threshold_pct(calibration.round_noise_pct, DetectorConfig())
        prior_pct, prior_dof = calibration.round_noise_pct, calibration.rounds - 1
    # Where a mechanism moved: compile counters, or the seeded output.
    moved = compile_changes(commits) | output_changes(
        session=session, case=case, hardware=hardware, commits=commits
    )
    detection = detect_changes(
        [[run.value for run in entry.runs] for entry in commits],
        threshold_pct=case.threshold_for(hardware.name),
        noise_floor_from_calibration_pct=floor,
        prior_noise_pct=prior_pct,
        prior_noise_dof=prior_dof,
        known_breaks=known_breaks(session=session, case=case, hardware=hardware, commits=commits),
        causes=moved,
    )
    return commits, detection


def compile_changes(commits: list[SeriesCommit]) -> set[int]:
    """Positions whose compile counters differ from the commit measured before.

    A commit's counters count only when every one of its runs reported the same ones (a commit
    whose runs disagree, or that has none, says nothing), so a difference is a mechanism that
    moved (a new graph break, a recompile) and not one run's accident.
    """
    signatures = [_signature(entry.runs) for entry in commits]
    return {
        position
        for position in range(1, len(signatures))
        if signatures[position] is not None
        and signatures[position - 1] is not None
        and signatures[position] != signatures[position - 1]
    }


def output_changes(
    *, session: Session, case: Case, hardware: HardwareKind, commits: list[SeriesCommit]
) -> set[int]:
    """Positions in ``commits`` where an output alert of the series says the seeded output changed.

    Its culprit where bisection named one and the series holds it, its first bad commit otherwise;
    an alert marked invalid says nothing. Like compile counters that moved (:func:`compile_changes`),
    a changed picture is a mechanism that moved, never noise: an output alert needs the runs on
    each side to agree among themselves and the change to pass the case's tolerance
    (:mod:`tracker.detection.output_alerts`), so a GPU's run-to-run jitter opens none.
    """
    positions = {entry.commit.id: index for index, entry in enumerate(commits)}
    rows = session.execute(
        select(Alert.first_bad_commit_id, Alert.culprit_commit_id).where(
            Alert.case_id == case.id,
            Alert.hardware_kind_id == hardware.id,
            Alert.metric == Metric.OUTPUT,
            Alert.status != AlertStatus.INVALID,
        )
    ).all()
    changed = set()
    for first_bad, culprit in rows:
        position = positions.get(culprit) if culprit is not None else None
        if position is None:
            position = positions.get(first_bad)
        if position is not None and position > 0:
            changed.add(position)
    return changed


def _signature(runs: list[SeriesRun]) -> CompileCounters | None:
    counters = {run.compile for run in runs}
    if len(counters) != 1:
        return None
    [only] = counters
    return only if any(value is not None for value in only) else None


def known_breaks(
    *, session: Session, case: Case, hardware: HardwareKind, commits: list[SeriesCommit]
) -> set[int]:
    """Positions in ``commits`` where a confirmed alert of the series says the level changes.

    The culprit where bisection named one and the series holds it (its bisection runs put it
    there), the first bad commit otherwise; and the commit that fixed it, where one did. Refuted,
    too-noisy and invalid alerts are no evidence of a change; an alert confirmed on imported runs
    (``held``) is.
    """
    positions = {entry.commit.id: index for index, entry in enumerate(commits)}
    alerts = session.execute(
        select(Alert.first_bad_commit_id, Alert.culprit_commit_id, Alert.fixed_by_commit_id).where(
            Alert.case_id == case.id,
            Alert.hardware_kind_id == hardware.id,
            Alert.confirmation.in_(ESTABLISHED_CONFIRMATIONS),
            Alert.status != AlertStatus.INVALID,
        )
    ).all()
    breaks = set()
    for first_bad, culprit, fixed_by in alerts:
        position = positions.get(culprit) if culprit is not None else None
        if position is None:
            position = positions.get(first_bad)
        for start in (position, positions.get(fixed_by) if fixed_by is not None else None):
            if start is not None and start > 0:
                breaks.add(start)
    return breaks


@dataclass(frozen=True)
class ThresholdInfo:
    """Which threshold applies to a series and why: the model's, or what its noise allows."""

    model_pct: float
    applied_pct: float
    source: str
    noise_pct: float | None
    noise_threshold_pct: float | None
    calibrated: bool
    noise_source: str = "history"

    def describe(self) -> str:
        """One line for pages and the CLI."""
        if self.noise_pct is None and not self.calibrated:
            return f"{self.model_pct:g} % (model); no noise estimate yet"
        noise = (
            f"run-to-run noise {self.noise_pct:.2f} % ({self.noise_source})"
            if self.noise_pct is not None
            else "calibrated"
        )
        allows = (
            f"noise allows ≥ {self.noise_threshold_pct:.2f} %" if self.noise_threshold_pct is not None else ""
        )
        applies = "the model's threshold applies" if self.source == "model" else "the noise floor applies"
        return f"{self.applied_pct:.2f} %: {noise}, {allows}; {applies} (model {self.model_pct:g} %)"


def series_threshold(*, session: Session, case: Case, hardware: HardwareKind) -> ThresholdInfo:
    """The threshold detection uses on a series now."""
    model = case.threshold_for(hardware.name)
    _, detection = detect_series(session=session, case=case, hardware=hardware)
    calibrated = latest_calibration(session=session, case=case, hardware=hardware) is not None
    if detection is None:
        return ThresholdInfo(model, model, "model", None, None, calibrated)
    return ThresholdInfo(
        model_pct=model,
        applied_pct=detection.threshold_pct,
        source=detection.threshold_source,
        noise_pct=detection.noise.cv_pct if detection.noise else None,
        noise_threshold_pct=detection.noise_threshold_pct,
        calibrated=calibrated,
        noise_source=detection.noise.source.replace("+", " and ") if detection.noise else "history",
    )


def series_alerts(*, session: Session, case: Case, hardware: HardwareKind) -> list[Alert]:
    """Alerts of one series, newest first."""
    return list(
        session.scalars(
            select(Alert)
            .where(Alert.case_id == case.id, Alert.hardware_kind_id == hardware.id)
            .order_by(Alert.created_at.desc(), Alert.id.desc())
        )
    )
