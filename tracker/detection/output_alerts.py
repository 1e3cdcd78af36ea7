"""Output alerts: a nightly series' seeded output that changed between consecutive commits.

A seeded run is deterministic on one machine, so its output needs no paired confirmation: each
commit of the series that saved an output (the newest of its runs speaks for it,
:func:`tracker.outputs.checks.compare_sides`) is checked against the commit before it in the
series' commit order that saved one, against the case's tolerance
(:func:`tracker.outputs.checks.tolerance_of`). A change beyond it, A then B, opens an alert of
metric ``output`` (``kind`` ``output`` in the API), ``confirmation = not_needed``, last good A,
first bad B; B's culprit is bisected as a slowdown's is, each step judged by its output
(:mod:`tracker.detection.step_judges`).

No alert when the runs of A or of B disagree among themselves beyond the tolerance: the pipeline
is then not deterministic on that machine, so one run against another says nothing about the
commits (logged, since there is no alert to note it on). A change already inside an output
alert's last good..first bad range (a bisection's runs put its culprit there) is that alert.

What the alert's columns hold (they were made for times): ``direction`` is ``regression`` (a
changed picture is never an improvement); ``before_value`` is the tolerance (dB), ``after_value``
the lowest PSNR (dB) of B's output against A's, ``change_pct`` how far below the tolerance that
PSNR lies (%, negative); ``threshold_pct`` is 0 (the tolerance in dB is in the evidence);
``output_psnr_db``/``output_ssim`` the lowest per-frame PSNR and SSIM.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.detection.alert_log import record
from tracker.detection.grouping import place
from tracker.enums import AlertConfirmation, AlertStatus, Direction, Metric
from tracker.models import Alert, Case, HardwareKind, RunOutput
from tracker.outputs.checks import (
    OutputCheck,
    compare_sides,
    newest_outputs,
    series_has_outputs,
    tolerance_of,
)
from tracker.series.state import SeriesCommit, load_series_runs

logger = logging.getLogger(__name__)

# Something to do with an output alert that has just opened (bisection starts there).
OutputAlertHook = Callable[[Alert], None]


@dataclass(frozen=True)
class OutputSide:
    """A commit of the series (its position in commit order) and its runs that saved an output."""

    position: int
    entry: SeriesCommit
    run_ids: tuple[int, ...]


def evaluate_outputs(
    *,
    session: Session,
    case: Case,
    hardware: HardwareKind,
    now: dt.datetime,
    on_created: OutputAlertHook | None = None,
    commits: Sequence[SeriesCommit] | None = None,
) -> list[Alert]:
    """Open an output alert for each change between consecutive commits with outputs; returns them.

    Idempotent: a change an output alert of the series already stands for opens nothing.
    ``commits``: the series as :func:`tracker.series.state.load_series_runs` loaded it for speed
    detection (one load serves both); loaded here when not given, and only if any run saved an output.
    """
    if not series_has_outputs(session, case_id=case.id, hardware_kind_id=hardware.id):
        return []
    if commits is None:
        commits = load_series_runs(session=session, case=case, hardware=hardware)
    outputs = newest_outputs(session, [run.run_id for entry in commits for run in entry.runs])
    sides = output_sides(commits, outputs)
    if len(sides) < 2:
        return []
    ranges = _alert_ranges(session, case, hardware, commits)
    tolerance = tolerance_of(case)
    created: list[Alert] = []
    for before, after in pairwise(sides):
        if any(low <= before.position and after.position <= high for low, high in ranges):
            continue
        check = compare_sides(
            session, outputs, before=before.run_ids, after=after.run_ids, tolerance_db=tolerance
        )
        if not check.changed:
            continue
        unsteady = next(
            (side for side in (before, after) if not _runs_agree(session, outputs, side, tolerance)), None
        )
        if unsteady is not None:
            logger.info(
                "output of %s on %s changed at %s, but the runs of %s disagree among themselves: no alert",
                case.slug,
                hardware.name,
                after.entry.commit.short_sha,
                unsteady.entry.commit.short_sha,
            )
            continue
        alert = _create(session, case, hardware, before, after, check, now)
        ranges.append((before.position, after.position))
        created.append(alert)
    for alert in created:
        place(session=session, alert=alert, now=now)
    session.flush()
    if on_created is not None:
        for alert in created:
            on_created(alert)
    return created


def output_sides(commits: Sequence[SeriesCommit], outputs: Mapping[int, RunOutput]) -> list[OutputSide]:
    """The commits (in series order) with at least one run that saved an output."""
    sides = []
    for position, entry in enumerate(commits):
        run_ids = tuple(run.run_id for run in entry.runs if run.run_id in outputs)
        if run_ids:
            sides.append(OutputSide(position, entry, run_ids))
    return sides


def _runs_agree(
    session: Session, outputs: Mapping[int, RunOutput], side: OutputSide, tolerance_db: float
) -> bool:
    """Whether every run of a side shows the same picture as its newest (equal digests: no decoding)."""
    if len({outputs[run_id].digest for run_id in side.run_ids}) == 1:
        return True
    newest = max(side.run_ids)
    return not any(
        compare_sides(session, outputs, before=[newest], after=[run_id], tolerance_db=tolerance_db).changed
        for run_id in side.run_ids
        if run_id != newest
    )


def _alert_ranges(
    session: Session, case: Case, hardware: HardwareKind, commits: Sequence[SeriesCommit]
) -> list[tuple[int, int]]:
    """Each output alert's last good..first bad range as series positions (before the window: -1).

    An alert whose first bad commit left the window stands for nothing that can be checked again.
    """
    positions = {entry.commit.id: index for index, entry in enumerate(commits)}
    rows = session.execute(
        select(Alert.last_good_commit_id, Alert.first_bad_commit_id).where(
            Alert.case_id == case.id, Alert.hardware_kind_id == hardware.id, Alert.metric == Metric.OUTPUT
        )
    ).all()
    ranges = []
    for last_good, first_bad in rows:
        high = positions.get(first_bad)
        if high is not None:
            low = positions.get(last_good, -1) if last_good is not None else -1
            ranges.append((low, high))
    return ranges


def _create(
    session: Session,
    case: Case,
    hardware: HardwareKind,
    before: OutputSide,
    after: OutputSide,
    check: OutputCheck,
    now: dt.datetime,
) -> Alert:
    """The output alert of a change beyond the tolerance from ``before`` to ``after``."""
    psnr = check.psnr_db if check.psnr_db is not None else 0.0
    tolerance = check.tolerance_db
    alert = Alert(
        case_id=case.id,
        hardware_kind_id=hardware.id,
        metric=Metric.OUTPUT,
        direction=Direction.REGRESSION,
        status=AlertStatus.OPEN,
        last_good_commit=before.entry.commit,
        first_bad_commit=after.entry.commit,
        before_value=tolerance,
        after_value=psnr,
        change_pct=(psnr / tolerance - 1.0) * 100.0 if tolerance > 0 else 0.0,
        threshold_pct=0.0,
        single_run_basis=False,
        confirmation=AlertConfirmation.NOT_NEEDED,
        output_psnr_db=check.psnr_db,
        output_ssim=check.ssim,
        evidence={
            "method": "output check: digest, then PSNR/SSIM per frame against the case's tolerance",
            "tolerance_db": tolerance,
            "before_run_id": check.before_run_id,
            "after_run_id": check.after_run_id,
            "before_run_ids": list(before.run_ids),
            "after_run_ids": list(after.run_ids),
            "output_summary": check.summary(),
        },
        created_at=now,
        updated_at=now,
    )
    session.add(alert)
    session.flush()
    record(
        alert,
        reason=f"{check.summary()}: {after.entry.commit.short_sha} (run {check.after_run_id}) against "
        f"{before.entry.commit.short_sha} (run {check.before_run_id}); a seeded run is deterministic "
        "on one machine, so no paired confirmation is needed",
        now=now,
        opening=True,
    )
    return alert


@dataclass(frozen=True)
class OutputAlertView:
    """An output alert as pages and the API show it: PSNR and SSIM against the last good commit."""

    psnr_db: float | None
    ssim: float | None
    tolerance_db: float | None
    summary: str


def alert_kind(alert: Alert) -> str:
    """``output`` for an alert on the seeded output, ``speed`` for one on a time."""
    return "output" if alert.metric is Metric.OUTPUT else "speed"


def output_alert_view(alert: Alert) -> OutputAlertView | None:
    """What an output alert says ("output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB)");
    ``None`` for a speed alert."""
    if alert.metric is not Metric.OUTPUT:
        return None
    tolerance = alert.evidence.get("tolerance_db")
    tolerance_db = float(tolerance) if isinstance(tolerance, (int, float)) else None
    measured = []
    if alert.output_psnr_db is not None:
        measured.append(f"PSNR {alert.output_psnr_db:.1f} dB")
    if alert.output_ssim is not None:
        measured.append(f"SSIM {alert.output_ssim:.2f}")
    summary = "output changed" + (": " + ", ".join(measured) if measured else "")
    if tolerance_db is not None:
        summary += f" (tolerance {tolerance_db:g} dB)"
    return OutputAlertView(alert.output_psnr_db, alert.output_ssim, tolerance_db, summary)
