"""What a change found on a series does to an alert: opens it, refreshes it, asks it again, fixes one.

A new change opens an alert, a suspect waiting for its paired rounds
(:func:`tracker.detection.confirmation.start_confirmation`) when perftrack's runners measured it,
else open at once (held or not possible to confirm); a later estimate refreshes a live alert; a
suspect whose last good run was left out, or whose run was interfered with and measured again, is
a suspect again; an imported change undoing a regression marks it fixed. Every change leaves an
event (:mod:`tracker.detection.alert_log`).
"""

from __future__ import annotations

from tracker.detection.alert_log import record
from tracker.detection.alert_matching import (
    LIVE,
    SeriesContext,
    direction_of,
    refuted_on_last_good,
    runs_from_jobs,
)
from tracker.detection.confirmation import start_confirmation
from tracker.enums import AlertConfirmation, AlertStatus, Metric
from tracker.models import Alert
from tracker.statistics.changepoints import Change
from tracker.statistics.paired_rounds import ChangeAction, plan_change


def suspect_again(context: SeriesContext, alert: Alert, change: Change) -> None:
    """A suspect refuted because its last good run was the odd one: judge it against the new one."""
    last_good = context.commits[change.index - 1].commit
    alert.last_good_commit = last_good
    alert.last_good_commit_id = last_good.id
    alert.before_value, alert.after_value, alert.change_pct = change.before, change.after, change.change_pct
    alert.confirmation = AlertConfirmation.PENDING
    alert.evidence = {**alert.evidence, **_evidence(context, change), "outlier_side": None}
    record(
        alert,
        reason=f"a suspect again: its last good run was left out, so {alert.first_bad_commit.short_sha} "
        f"is judged against {last_good.short_sha} ({alert.change_pct:+.1f} %)",
        now=context.now,
        to_status=AlertStatus.OPEN,
    )
    start_confirmation(session=context.session, alert=alert, now=context.now)


def suspect_anew(context: SeriesContext, alert: Alert, change: Change) -> None:
    """A retired suspect asked again (:func:`~tracker.detection.alert_matching.retired_by_interference`):
    its run was interfered with and measured again, its rounds showed the other way, or its odd
    last good run left and the step now reads the other way: judge what the series shows now."""
    last_good = context.commits[change.index - 1].commit
    if not alert.evidence.get("interfered_runs") and refuted_on_last_good(alert):
        why = "its last good run was left out:"
    else:
        why = "measured again:"
    alert.direction = direction_of(change)
    alert.last_good_commit = last_good
    alert.last_good_commit_id = last_good.id
    alert.before_value, alert.after_value, alert.change_pct = change.before, change.after, change.change_pct
    alert.confirmation = AlertConfirmation.PENDING
    kept = {
        key: value
        for key, value in alert.evidence.items()
        if key
        not in (
            "interfered_runs",
            "the_other_way",
            "paired_levels_ms",
            "paired_change_pct",
            "paired_ci_pct",
            "paired_rounds",
            "outlier_side",
        )
    }
    alert.evidence = {**kept, **_evidence(context, change)}
    record(
        alert,
        reason=f"{why} {alert.first_bad_commit.short_sha} now shows {alert.change_pct:+.1f} % "
        f"against {last_good.short_sha}, a suspect again",
        now=context.now,
        to_status=AlertStatus.OPEN,
    )
    start_confirmation(session=context.session, alert=alert, now=context.now)


def create_alert(context: SeriesContext, change: Change, *, undoes: Alert | None = None) -> Alert | None:
    """Open an alert for a change no alert stands for; ``None`` when the change calls for none."""
    entry = context.commits[change.index]
    plan = plan_change(change, can_rerun=runs_from_jobs(entry))
    if plan.action is ChangeAction.NOTHING:
        return None
    last_good = context.commits[change.index - 1].commit
    if plan.action is ChangeAction.CONFIRM:
        confirmation = AlertConfirmation.PENDING
    elif change.established:
        confirmation = AlertConfirmation.HELD
    else:
        confirmation = AlertConfirmation.NOT_POSSIBLE
    evidence = _evidence(context, change)
    if undoes is not None:
        evidence["undoes_alert_id"] = undoes.id
    alert = Alert(
        case_id=context.case.id,
        hardware_kind_id=context.hardware.id,
        metric=Metric.DENOISE_STEP_MS,
        direction=direction_of(change),
        status=AlertStatus.OPEN,
        last_good_commit=last_good,
        first_bad_commit=entry.commit,
        before_value=change.before,
        after_value=change.after,
        change_pct=change.change_pct,
        threshold_pct=context.detection.threshold_pct,
        noise_pct=context.detection.noise.cv_pct if context.detection.noise else None,
        p_value=change.p_value,
        single_run_basis=change.single_run_basis,
        confirmation=confirmation,
        evidence=evidence,
        created_at=context.now,
        updated_at=context.now,
    )
    context.session.add(alert)
    context.session.flush()
    context.alerts.append(alert)
    record(alert, reason=_opening_reason(alert, change, confirmation), now=context.now, opening=True)
    if confirmation is AlertConfirmation.PENDING:
        start_confirmation(session=context.session, alert=alert, now=context.now)
    return alert


def _opening_reason(alert: Alert, change: Change, confirmation: AlertConfirmation) -> str:
    """The first event's reason: the step, against which noise, and on what basis it opens."""
    what = f"{alert.change_pct:+.1f} % ({alert.before_value:.2f} → {alert.after_value:.2f} ms)"
    basis = {
        AlertConfirmation.HELD: f"imported results held over {change.runs_after} runs at the new level",
        AlertConfirmation.PENDING: "a suspect until paired rounds of the last good and first bad commits decide",
        AlertConfirmation.NOT_POSSIBLE: "imported results, which perftrack cannot re-run",
    }[confirmation]
    noise = (
        "on single runs without a noise estimate"
        if change.single_run_basis
        else f"z = {change.z:.1f} against {alert.noise_pct:.2f} % run-to-run noise"
    )
    return f"{alert.direction.value} {what}, {noise}; {basis}"


def _evidence(context: SeriesContext, change: Change) -> dict[str, object]:
    """What detection measured of a change, kept on its alert."""
    detection = context.detection
    return {
        "method": "single-run" if change.single_run_basis else "windowed Hodges-Lehmann segmentation",
        "kind": change.kind,
        "z": change.z,
        "p_value": change.p_value,
        "runs_before": change.runs_before,
        "runs_after": change.runs_after,
        "noise_pct": detection.noise.cv_pct if detection.noise else None,
        "noise_differences": detection.noise.differences if detection.noise else 0,
        "threshold_pct": detection.threshold_pct,
        "model_threshold_pct": detection.model_threshold_pct,
        "noise_threshold_pct": detection.noise_threshold_pct,
        "threshold_source": detection.threshold_source,
        "window": detection.config.window,
        "z_crit": detection.config.z_crit,
    }


def update_alert(context: SeriesContext, alert: Alert, change: Change) -> bool:
    """Refresh a live alert with the latest estimate; settle a pending confirmation."""
    if alert.status not in LIVE:
        return False
    alert.before_value, alert.after_value, alert.change_pct = change.before, change.after, change.change_pct
    alert.p_value = change.p_value
    alert.threshold_pct = context.detection.threshold_pct
    alert.noise_pct = context.detection.noise.cv_pct if context.detection.noise else None
    alert.single_run_basis = change.single_run_basis
    alert.evidence = {**alert.evidence, **_evidence(context, change)}
    if alert.confirmation != AlertConfirmation.NOT_POSSIBLE or not change.established:
        return False  # a suspect waits for its paired rounds, whatever the nightly runs say meanwhile
    alert.confirmation = AlertConfirmation.HELD
    record(
        alert,
        reason=f"imported results held over {change.runs_after} runs: now {alert.change_pct:+.1f} % "
        f"({alert.before_value:.2f} → {alert.after_value:.2f} ms)",
        now=context.now,
    )
    return True


def mark_fixed(context: SeriesContext, alert: Alert, change: Change) -> None:
    """An imported change undid ``alert``: fixed by its commit, taken as seen."""
    commit = context.commits[change.index].commit
    alert.fixed_by_commit = commit
    alert.fixed_by_commit_id = commit.id
    net = (change.after / alert.before_value - 1.0) * 100.0
    record(
        alert,
        reason=f"undone by {commit.short_sha} {commit.title!r}: {change.change_pct:+.1f} %, "
        f"now {change.after:.2f} ms against {alert.before_value:.2f} ms before the change ({net:+.1f} %)",
        now=context.now,
        to_status=AlertStatus.FIXED,
    )
