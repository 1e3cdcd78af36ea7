"""Loading the output check an alert's diagnosis states: its first bad commit's seeded output
against its last good commit's (:func:`tracker.outputs.checks.compare_sides`).

An output alert carries its check (PSNR, SSIM, tolerance) and is read as stored; a speed alert's
two commits are checked here, so a faster commit that changed the picture says so. One query for
the runs' outputs of every alert; references are decoded only where digests differ.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from tracker.diagnosis.facts import OutputFact
from tracker.enums import Metric, RunStatus
from tracker.models import Alert, Candidate, Run, RunOutput
from tracker.outputs.checks import compare_sides, tolerance_of

CommitKey = tuple[int, int, int]  # (case id, hardware kind id, commit id)


def alert_outputs(*, session: Session, alerts: Sequence[Alert]) -> dict[int, OutputFact]:
    """Per alert id, how its first bad commit's output compares with its last good commit's
    (alerts whose sides saved no output are left out)."""
    facts = {alert.id: fact for alert in alerts if (fact := stored_fact(alert)) is not None}
    speed = [alert for alert in alerts if alert.id not in facts and alert.last_good_commit_id is not None]
    keys = {
        (alert.case_id, alert.hardware_kind_id, commit_id)
        for alert in speed
        for commit_id in (alert.last_good_commit_id, alert.first_bad_commit_id)
        if commit_id is not None
    }
    if not keys:
        return facts
    outputs: dict[int, RunOutput] = {}
    runs: dict[CommitKey, list[int]] = {}
    for output, case_id, kind_id, commit_id in session.execute(
        select(RunOutput, Run.case_id, Run.hardware_kind_id, Run.commit_id)
        .join(Run, Run.id == RunOutput.run_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .where(
            tuple_(Run.case_id, Run.hardware_kind_id, Run.commit_id).in_(sorted(keys)),
            Run.status == RunStatus.OK,
            Candidate.is_plain,
        )
    ):
        outputs[output.run_id] = output
        runs.setdefault((case_id, kind_id, commit_id), []).append(output.run_id)
    for alert in speed:
        series = (alert.case_id, alert.hardware_kind_id)
        before = runs.get((*series, alert.last_good_commit_id or 0), [])
        after = runs.get((*series, alert.first_bad_commit_id), [])
        if before and after:
            check = compare_sides(
                session, outputs, before=before, after=after, tolerance_db=tolerance_of(alert.case)
            )
            facts[alert.id] = OutputFact(
                check.changed,
                check.tolerance_db,
                check.psnr_db,
                check.ssim,
                check.before_run_id,
                check.after_run_id,
            )
    return facts


def stored_fact(alert: Alert) -> OutputFact | None:
    """An output alert's check as it was stored when the alert opened; ``None`` for a speed alert."""
    if alert.metric is not Metric.OUTPUT:
        return None
    tolerance = alert.evidence.get("tolerance_db")
    before, after = alert.evidence.get("before_run_id"), alert.evidence.get("after_run_id")
    return OutputFact(
        changed=True,
        tolerance_db=float(tolerance) if isinstance(tolerance, (int, float)) else tolerance_of(alert.case),
        psnr_db=alert.output_psnr_db,
        ssim=alert.output_ssim,
        before_run_id=before if isinstance(before, int) else None,
        after_run_id=after if isinstance(after, int) else None,
    )
