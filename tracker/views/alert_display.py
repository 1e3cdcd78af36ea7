"""How an alert reads wherever it is listed (alerts page, overview, nightly, API, bot): its state and
the one figure to show, never detection's first estimate alone when paired rounds measured more.

Detection's estimate (``Alert.change_pct`` and the levels either side) comes from the nightly runs
around the change. A suspect's paired rounds (the newest comparison of kind ``confirmation``, last
good = base, first bad = head) measure the same change again, interleaved, and their estimate and
interval are what the alert is shown as, whatever they concluded. An open suspect is never shown
``open`` (:func:`tracker.detection.triage.alert_state`): ``confirming`` while the rounds run,
``unconfirmed`` once they refuted it or could not tell it from noise, with their reason. An output
alert's figures are dB (PSNR against the case's tolerance), never times.

:func:`alert_displays` reads the paired results of any number of alerts in one query;
:func:`alert_display` is the rule, with nothing to read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tracker.detection.output_alerts import output_alert_view
from tracker.detection.triage import alert_state
from tracker.enums import (
    FINISHED_COMPARISON_STATES,
    AlertConfirmation,
    AlertState,
    ComparisonKind,
    EstimateBasis,
)
from tracker.models import Alert, Comparison, ComparisonResult

# What an alert's confirmation says when no paired rounds speak for it.
_WITHOUT_ROUNDS = {
    AlertConfirmation.PENDING: "paired rounds queued",
    AlertConfirmation.CONFIRMED: "confirmed in paired rounds",
    AlertConfirmation.HELD: "held over later runs",
    AlertConfirmation.REFUTED: "refuted in paired rounds",
    AlertConfirmation.TOO_NOISY: "unconfirmed, too noisy",
    AlertConfirmation.NOT_POSSIBLE: "not confirmed: the change could not be measured in paired rounds",
    AlertConfirmation.NOT_NEEDED: "",
}


@dataclass(frozen=True)
class PairedEstimate:
    """What an alert's newest paired rounds measured so far (percent: first bad vs last good)."""

    comparison_id: int
    finished: bool
    rounds: int  # usable rounds so far
    max_rounds: int
    change_pct: float | None  # None before the first usable round
    ci_low_pct: float | None
    ci_high_pct: float | None
    base_ms: float | None  # the last good commit's level over the rounds, ms per denoise step
    head_ms: float | None  # the first bad commit's
    note: str  # the rounds' reading: confirmed, refuted, too noisy (and why), or what they wait for


@dataclass(frozen=True)
class AlertDisplay:
    """An alert as people read it: its state, and the figure shown with what it rests on.

    ``change_pct`` is the paired estimate when rounds measured one (``basis`` ``paired``, with its
    interval), else detection's (``detection``); an output alert's is how far its PSNR lies below the
    tolerance (``output``). ``before`` and ``after`` are in ``unit``: the arms' levels or detection's
    (ms), or the tolerance and the PSNR (dB). ``reason`` says why the alert stands where it does.
    """

    state: AlertState
    basis: EstimateBasis
    change_pct: float
    ci_low_pct: float | None
    ci_high_pct: float | None
    before: float | None
    after: float | None
    unit: str
    reason: str
    paired: PairedEstimate | None

    @property
    def is_output(self) -> bool:
        """Whether the alert is on the seeded output (a changed picture, not a time)."""
        return self.basis is EstimateBasis.OUTPUT

    @property
    def interval(self) -> str:
        """``[-2.30, -0.45] %``; empty without an interval."""
        if self.ci_low_pct is None or self.ci_high_pct is None:
            return ""
        return f"[{self.ci_low_pct:+.2f}, {self.ci_high_pct:+.2f}] %"

    @property
    def text(self) -> str:
        """The figure in words, for text that has room for one phrase (the bot, the nightly issue)."""
        if self.basis is EstimateBasis.OUTPUT:
            return self.reason
        if self.basis is EstimateBasis.DETECTION:
            return f"{self.change_pct:+.1f} % (detection's estimate)"
        rounds = self.paired.rounds if self.paired is not None else 0
        interval = f" {self.interval}" if self.interval else ""
        return f"{self.change_pct:+.2f} %{interval} in {rounds} paired round{'s' if rounds != 1 else ''}"


def alert_display(alert: Alert, paired: PairedEstimate | None) -> AlertDisplay:
    """The state and figure of ``alert``, given its newest paired rounds (``None``: it has none)."""
    state = alert_state(alert)
    output = output_alert_view(alert)
    if output is not None:
        return AlertDisplay(
            state=state,
            basis=EstimateBasis.OUTPUT,
            change_pct=alert.change_pct,
            ci_low_pct=None,
            ci_high_pct=None,
            before=alert.before_value,
            after=alert.after_value,
            unit="dB",
            reason=output.summary,
            paired=None,
        )
    reason = _reason(alert, state, paired)
    change_pct, basis = shown_change(alert.change_pct, paired)
    if paired is not None and basis is EstimateBasis.PAIRED:
        return AlertDisplay(
            state=state,
            basis=basis,
            change_pct=change_pct,
            ci_low_pct=paired.ci_low_pct,
            ci_high_pct=paired.ci_high_pct,
            before=paired.base_ms,
            after=paired.head_ms,
            unit="ms",
            reason=reason,
            paired=paired,
        )
    return AlertDisplay(
        state=state,
        basis=basis,
        change_pct=change_pct,
        ci_low_pct=None,
        ci_high_pct=None,
        before=alert.before_value,
        after=alert.after_value,
        unit="ms",
        reason=reason,
        paired=paired,
    )


def shown_change(detection_pct: float, paired: PairedEstimate | None) -> tuple[float, EstimateBasis]:
    """The change a speed alert is shown with: its paired estimate once rounds measured one, else
    detection's (``detection_pct``)."""
    if paired is not None and paired.change_pct is not None:
        return paired.change_pct, EstimateBasis.PAIRED
    return detection_pct, EstimateBasis.DETECTION


def _reason(alert: Alert, state: AlertState, paired: PairedEstimate | None) -> str:
    """Why the alert stands where it does: the rounds so far, their reading, or its confirmation."""
    if state is AlertState.CONFIRMING and paired is not None and paired.rounds:
        plural = "s" if paired.rounds != 1 else ""
        return f"confirming: {paired.rounds} paired round{plural} so far, up to {paired.max_rounds}"
    if paired is not None and paired.note and paired.finished:
        return paired.note
    return _WITHOUT_ROUNDS[alert.confirmation]


def paired_estimates(*, session: Session, alert_ids: Iterable[int]) -> dict[int, PairedEstimate]:
    """The newest paired rounds of each alert that has any, by alert id, in one query."""
    ids = sorted(set(alert_ids))
    if not ids:
        return {}
    newest = (
        select(func.max(Comparison.id).label("id"))
        .where(Comparison.alert_id.in_(ids), Comparison.kind == ComparisonKind.CONFIRMATION)
        .group_by(Comparison.alert_id)
        .subquery()
    )
    rows = session.execute(
        select(
            Comparison.alert_id,
            Comparison.id,
            Comparison.state,
            Comparison.max_rounds,
            ComparisonResult.rounds_done,
            ComparisonResult.change_pct,
            ComparisonResult.ci_low_pct,
            ComparisonResult.ci_high_pct,
            ComparisonResult.base_value,
            ComparisonResult.head_value,
            ComparisonResult.note,
        )
        .join(newest, newest.c.id == Comparison.id)
        .outerjoin(ComparisonResult, ComparisonResult.comparison_id == Comparison.id)
        .order_by(Comparison.id, ComparisonResult.id)
    ).all()
    estimates: dict[int, PairedEstimate] = {}
    for row in rows:
        if row.alert_id is None or row.alert_id in estimates:
            continue  # a confirmation judges one case on one kind: its first result is the one
        estimates[row.alert_id] = PairedEstimate(
            comparison_id=row.id,
            finished=row.state in FINISHED_COMPARISON_STATES,
            rounds=row.rounds_done or 0,
            max_rounds=row.max_rounds,
            change_pct=row.change_pct,
            ci_low_pct=row.ci_low_pct,
            ci_high_pct=row.ci_high_pct,
            base_ms=row.base_value,
            head_ms=row.head_value,
            note=row.note or "",
        )
    return estimates


def alert_displays(*, session: Session, alerts: Sequence[Alert]) -> dict[int, AlertDisplay]:
    """Every alert's display, by alert id, reading all their paired rounds in one query."""
    paired = paired_estimates(session=session, alert_ids=[alert.id for alert in alerts])
    return {alert.id: alert_display(alert, paired.get(alert.id)) for alert in alerts}


__all__ = [
    "AlertDisplay",
    "PairedEstimate",
    "alert_display",
    "alert_displays",
    "paired_estimates",
    "shown_change",
]
