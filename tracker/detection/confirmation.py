"""Confirmation of suspects by paired rounds: confirmed, refuted, or unconfirmed because too noisy.

A change detection finds on runs that perftrack's runners measured is a *suspect*
(``confirmation = pending``) until a comparison of its last good and first bad commits (kind
``confirmation``: A B A B …, a fresh process each) has judged it with
:func:`tracker.statistics.confirmation.judge_confirmation`:

* **confirmed** — the paired interval lies beyond the threshold in the suspect's direction: the
  alert opens as a real change (bisection starts there). A confirmed improvement that brings a
  live regression back to its old level closes that regression as fixed by its commit.
* **refuted** — the interval lies short of the threshold: the alert becomes ``invalid`` and the
  suspect run(s) at the first bad commit are excluded from detection, with the reason shown.
* **too noisy** — still inconclusive at the round cap (the policy's 16, or what the case's suite
  sets, :func:`max_rounds_for`): the alert stays open, *unconfirmed*, never called confirmed. A
  nightly run far above every paired run of its own commit was interfered with: it leaves
  detection and its commit is measured again. Arms that could not run at all leave it
  ``not_possible``.

Which nightly run a refuted or too-noisy suspect rested on is :mod:`tracker.detection.odd_runs`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.creation import create_paired_check
from tracker.comparisons.summary import ComparisonView, comparison_view
from tracker.detection.alert_log import record
from tracker.detection.grouping import place
from tracker.detection.odd_runs import refute, remeasure_interfered
from tracker.enums import (
    FINISHED_COMPARISON_STATES,
    AlertConfirmation,
    AlertStatus,
    ComparisonKind,
    Direction,
    Verdict,
)
from tracker.models import Alert, Case, Comparison, ComparisonResult
from tracker.statistics.paired_rounds import ConfirmationPolicy
from tracker.vcs.commits import ensure_candidate

__all__ = [
    "POLICY",
    "confirmation_of",
    "confirmation_policy",
    "max_rounds_for",
    "settle_confirmation",
    "start_confirmation",
]

# The default: a suite file may set a case's own cap (``confirmation_max_rounds``, per hardware kind
# too). Bisection steps keep this policy (tracker.detection.bisection).
POLICY = ConfirmationPolicy()
_LIVE = (AlertStatus.OPEN, AlertStatus.ACKNOWLEDGED)


def start_confirmation(*, session: Session, alert: Alert, now: dt.datetime) -> Comparison | None:
    """Queue the paired rounds that decide a suspect; ``None`` when it has no last good commit."""
    good, bad = alert.last_good_commit, alert.first_bad_commit
    if good is None:
        return None
    policy = confirmation_policy(alert)
    comparison = create_paired_check(
        session=session,
        alert=alert,
        base=ensure_candidate(session=session, base=good, patches=[]),
        head=ensure_candidate(session=session, base=bad, patches=[]),
        kind=ComparisonKind.CONFIRMATION,
        policy=policy,
        command=f"confirm alert {alert.id}: {good.short_sha} vs {bad.short_sha} in paired rounds",
    )
    alert.evidence = {**alert.evidence, "confirmation_comparison_id": comparison.id}
    record(
        alert,
        reason=f"suspect: {policy.initial_rounds} paired rounds of {good.short_sha} (last good) and "
        f"{bad.short_sha} (first bad), up to {_cap(alert, policy)}, decide before it is raised",
        now=now,
    )
    return comparison


def max_rounds_for(case: Case, hardware_name: str | None = None) -> int:
    """The cap on a suspect's paired rounds for a case (on a hardware kind, when named): the suite's,
    else the policy's."""
    cap = case.confirmation_max_rounds if hardware_name is None else case.confirmation_cap_for(hardware_name)
    return POLICY.max_rounds if cap is None else cap


def confirmation_policy(alert: Alert) -> ConfirmationPolicy:
    """The policy a suspect is confirmed by: :data:`POLICY`, with its case's cap on its hardware kind."""
    max_rounds = max_rounds_for(alert.case, alert.hardware_kind.name)
    return POLICY if max_rounds == POLICY.max_rounds else dataclasses.replace(POLICY, max_rounds=max_rounds)


def _cap(alert: Alert, policy: ConfirmationPolicy) -> str:
    """The cap in words with what it may cost (two runs a round), and whose it is when the suite set it."""
    if policy.max_rounds == POLICY.max_rounds:
        return f"{policy.max_rounds} rounds ({2 * policy.max_rounds} runs)"
    return (
        f"{policy.max_rounds} rounds ({2 * policy.max_rounds} runs, the cap {alert.case.slug} "
        f"sets on {alert.hardware_kind.name})"
    )


def confirmation_of(*, session: Session, alert: Alert) -> ComparisonView | None:
    """The alert's paired confirmation with its rounds, if it has one (newest first)."""
    comparison_id = session.scalar(
        select(Comparison.id)
        .where(Comparison.alert_id == alert.id, Comparison.kind == ComparisonKind.CONFIRMATION)
        .order_by(Comparison.id.desc())
        .limit(1)
    )
    if comparison_id is None:
        return None
    return comparison_view(session=session, comparison_id=comparison_id)


def settle_confirmation(*, session: Session, comparison: Comparison, now: dt.datetime) -> Alert | None:
    """Apply a finished confirmation to its alert; returns the alert when it became confirmed."""
    if (
        comparison.kind is not ComparisonKind.CONFIRMATION
        or comparison.state not in FINISHED_COMPARISON_STATES
    ):
        return None
    alert = session.get(Alert, comparison.alert_id) if comparison.alert_id is not None else None
    if alert is None or alert.confirmation != AlertConfirmation.PENDING:
        return None
    result = comparison.results[0] if comparison.results else None
    verdict = result.verdict if result is not None else Verdict.INCONCLUSIVE
    note = result.note if result is not None else "no result"
    alert.evidence = {
        **alert.evidence,
        "paired_rounds": result.rounds_done if result is not None else 0,
        "paired_change_pct": result.change_pct if result is not None else None,
        "paired_ci_pct": [result.ci_low_pct, result.ci_high_pct] if result is not None else None,
        # Each arm's level from the rounds: bisection calls commits against these, not against
        # the nightly runs that raised the suspect (one of which may have been interfered with).
        "paired_levels_ms": (
            [result.base_value, result.head_value]
            if result is not None and result.base_value and result.head_value
            else None
        ),
    }
    wanted = Verdict.REGRESSION if alert.direction is Direction.REGRESSION else Verdict.IMPROVEMENT
    if verdict is wanted:
        _confirm(session, alert, note, now)
        place(session=session, alert=alert, now=now)
        return alert
    _settle_otherwise(session, alert, comparison, result, verdict, now)
    place(session=session, alert=alert, now=now)
    return None


def _settle_otherwise(
    session: Session,
    alert: Alert,
    comparison: Comparison,
    result: ComparisonResult | None,
    verdict: Verdict,
    now: dt.datetime,
) -> None:
    """A confirmation that did not confirm: reversed, refuted, not possible or too noisy."""
    note = result.note if result is not None else "no result"
    if verdict is Verdict.NO_CHANGE and result is not None and _the_other_way(alert, result):
        _reversed(alert, note, result, now)
        remeasure_interfered(session, alert, comparison, now)  # the neighbour that turned it round
    elif verdict is Verdict.NO_CHANGE:
        refute(session, alert, note, now, comparison)
    elif result is None or result.rounds_done == 0:
        alert.confirmation = AlertConfirmation.NOT_POSSIBLE
        record(alert, reason=f"could not measure the paired rounds ({note}); left open unconfirmed", now=now)
    else:
        alert.confirmation = AlertConfirmation.TOO_NOISY
        record(alert, reason=f"{note}; left open, unconfirmed", now=now)
        remeasure_interfered(session, alert, comparison, now)


def _confirm(session: Session, alert: Alert, note: str, now: dt.datetime) -> None:
    alert.confirmation = AlertConfirmation.CONFIRMED
    record(alert, reason=note, now=now)
    undone_id = alert.evidence.get("undoes_alert_id")
    undone = session.get(Alert, undone_id) if isinstance(undone_id, int) else None
    if undone is None or undone.status not in _LIVE:
        return
    commit = alert.first_bad_commit
    undone.fixed_by_commit = commit
    undone.fixed_by_commit_id = commit.id
    net = (alert.after_value / undone.before_value - 1.0) * 100.0
    record(
        undone,
        reason=f"undone by {commit.short_sha} {commit.title!r} (alert {alert.id}, confirmed in paired rounds): "
        f"now {alert.after_value:.2f} ms against {undone.before_value:.2f} ms before the change ({net:+.1f} %)",
        now=now,
        to_status=AlertStatus.FIXED,
    )
    record(alert, reason=f"the fix of alert {undone.id}", now=now, to_status=AlertStatus.EXPECTED)


def _the_other_way(alert: Alert, result: ComparisonResult) -> bool:
    """Whether the rounds that refuted the suspect lie beyond the threshold the other way."""
    threshold = result.threshold_pct
    if threshold is None or result.ci_low_pct is None or result.ci_high_pct is None:
        return False
    if alert.direction is Direction.REGRESSION:
        return result.ci_high_pct <= -threshold
    return result.ci_low_pct >= threshold


def _reversed(alert: Alert, note: str, result: ComparisonResult, now: dt.datetime) -> None:
    """Refuted, but the rounds show a change the other way: nothing is excluded, the question is reopened.

    A series whose neighbouring nightly run was slowed down can make a real regression look like
    an improvement at its commit (and the reverse). Excluding the first bad run as the odd one
    would delete the change's own evidence, and confirming the other direction from these rounds
    would answer a question nobody asked them: the alert is retired, and when detection reports
    the change the other way at this commit, it is a suspect anew with paired rounds of its own
    (:func:`tracker.detection.alerts.evaluate_series`).
    """
    alert.confirmation = AlertConfirmation.REFUTED
    alert.evidence = {**alert.evidence, "the_other_way": True}
    way = "slower" if alert.direction is Direction.IMPROVEMENT else "faster"
    record(
        alert,
        reason=f"{note}; the rounds show the commit {way} ({result.change_pct:+.1f} %): no run is left out, "
        "and the change the other way is a suspect of its own once detection reports it",
        now=now,
        to_status=AlertStatus.INVALID,
    )
