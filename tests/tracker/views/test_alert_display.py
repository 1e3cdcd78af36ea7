"""How an alert reads: a suspect is never open, and what paired rounds measured is the figure shown."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from tests.tracker.overview_history import QWEN, build_history
from tests.tracker.views.alert_rows import (
    NOISY_NOTE,
    output_alert,
    paired_rounds,
    stored_alert,
    unconfirmed_suspect,
)
from tests.tracker.views.test_series import recorded_sql
from tracker.detection.triage import alert_state, list_alerts
from tracker.enums import (
    AlertConfirmation,
    AlertState,
    AlertStatus,
    ComparisonState,
    Direction,
    EstimateBasis,
    Metric,
)
from tracker.models import Alert
from tracker.views.alert_display import AlertDisplay, alert_display, alert_displays, paired_estimates
from tracker.views.overview import overview
from tracker.views.series_chart import chart_alerts


def _display(session: Session, alert: Alert) -> AlertDisplay:
    return alert_displays(session=session, alerts=[alert])[alert.id]


def test_the_demo_s_too_noisy_suspect_reads_unconfirmed_with_its_paired_estimate(session: Session) -> None:
    alert = unconfirmed_suspect(session, 4)
    display = _display(session, alert)
    assert display.state is AlertState.UNCONFIRMED
    assert display.basis is EstimateBasis.PAIRED
    assert display.change_pct == -1.37  # not detection's -3.6 %
    assert (display.ci_low_pct, display.ci_high_pct) == (-2.30, -0.45)
    assert display.interval == "[-2.30, -0.45] %"
    assert display.reason == NOISY_NOTE
    assert display.text == "-1.37 % [-2.30, -0.45] % in 16 paired rounds"
    assert display.before == 100.0
    assert display.after == pytest.approx(98.63)
    assert display.unit == "ms"


def test_a_suspect_being_confirmed_shows_its_rounds_so_far(session: Session) -> None:
    queued = stored_alert(session, 2, confirmation=AlertConfirmation.PENDING)
    running = stored_alert(session, 4, confirmation=AlertConfirmation.PENDING)
    paired_rounds(
        session, running, change_pct=2.8, interval=(0.1, 5.5), rounds=4, state=ComparisonState.RUNNING
    )
    waiting = _display(session, queued)
    assert (waiting.state, waiting.basis, waiting.change_pct) == (
        AlertState.CONFIRMING,
        EstimateBasis.DETECTION,
        3.6,
    )
    assert waiting.reason == "paired rounds queued"
    assert waiting.text == "+3.6 % (detection's estimate)"
    so_far = _display(session, running)
    assert (so_far.state, so_far.basis, so_far.change_pct) == (
        AlertState.CONFIRMING,
        EstimateBasis.PAIRED,
        2.8,
    )
    assert so_far.reason == "confirming: 4 paired rounds so far, up to 16"


def test_an_established_alert_shows_the_paired_estimate_else_detection_s_marked_as_such(
    session: Session,
) -> None:
    confirmed = stored_alert(session, 2, confirmation=AlertConfirmation.CONFIRMED)
    paired_rounds(
        session, confirmed, change_pct=3.1, interval=(2.4, 3.8), note="confirmed by 16 paired rounds"
    )
    held = stored_alert(session, 4, confirmation=AlertConfirmation.HELD)
    shown = alert_displays(session=session, alerts=[confirmed, held])
    assert (shown[confirmed.id].state, shown[confirmed.id].basis) == (AlertState.OPEN, EstimateBasis.PAIRED)
    assert shown[confirmed.id].change_pct == 3.1
    assert shown[confirmed.id].reason == "confirmed by 16 paired rounds"
    assert (shown[held.id].state, shown[held.id].basis) == (AlertState.OPEN, EstimateBasis.DETECTION)
    assert (shown[held.id].change_pct, shown[held.id].interval) == (3.6, "")
    assert shown[held.id].reason == "held over later runs"


@pytest.mark.parametrize(
    ("status", "confirmation", "state"),
    [
        (AlertStatus.OPEN, AlertConfirmation.PENDING, AlertState.CONFIRMING),
        (AlertStatus.OPEN, AlertConfirmation.TOO_NOISY, AlertState.UNCONFIRMED),
        (AlertStatus.OPEN, AlertConfirmation.REFUTED, AlertState.UNCONFIRMED),  # reopened by hand
        (AlertStatus.OPEN, AlertConfirmation.CONFIRMED, AlertState.OPEN),
        (AlertStatus.OPEN, AlertConfirmation.HELD, AlertState.OPEN),
        (AlertStatus.OPEN, AlertConfirmation.NOT_POSSIBLE, AlertState.OPEN),
        (AlertStatus.OPEN, AlertConfirmation.NOT_NEEDED, AlertState.OPEN),
        (AlertStatus.ACKNOWLEDGED, AlertConfirmation.TOO_NOISY, AlertState.ACKNOWLEDGED),
        (AlertStatus.INVALID, AlertConfirmation.REFUTED, AlertState.INVALID),
        (AlertStatus.FIXED, AlertConfirmation.CONFIRMED, AlertState.FIXED),
        (AlertStatus.EXPECTED, AlertConfirmation.CONFIRMED, AlertState.EXPECTED),
    ],
)
def test_a_suspect_is_never_open(
    status: AlertStatus, confirmation: AlertConfirmation, state: AlertState
) -> None:
    alert = Alert(
        metric=Metric.DENOISE_STEP_MS,
        direction=Direction.REGRESSION,
        status=status,
        confirmation=confirmation,
        before_value=100.0,
        after_value=103.6,
        change_pct=3.6,
        evidence={},
    )
    assert alert_state(alert) is state
    assert alert_display(alert, None).state is state


def test_the_state_filter_lists_exactly_the_alerts_in_that_state(session: Session) -> None:
    alerts = [
        stored_alert(session, 2 * index + 2, status=status, confirmation=confirmation)
        for index, (status, confirmation) in enumerate(
            [
                (AlertStatus.OPEN, AlertConfirmation.PENDING),
                (AlertStatus.OPEN, AlertConfirmation.TOO_NOISY),
                (AlertStatus.OPEN, AlertConfirmation.REFUTED),
                (AlertStatus.OPEN, AlertConfirmation.CONFIRMED),
                (AlertStatus.OPEN, AlertConfirmation.NOT_POSSIBLE),
                (AlertStatus.ACKNOWLEDGED, AlertConfirmation.TOO_NOISY),
                (AlertStatus.INVALID, AlertConfirmation.REFUTED),
            ]
        )
    ]
    for state in AlertState:
        listed = {alert.id for alert in list_alerts(session=session, status=state.value)}
        assert listed == {alert.id for alert in alerts if alert_state(alert) is state}, state


def test_an_output_alert_reads_in_db_never_as_a_time(session: Session) -> None:
    display = _display(session, output_alert(session, 6))
    assert (display.basis, display.unit, display.paired) == (EstimateBasis.OUTPUT, "dB", None)
    assert display.is_output
    assert (display.before, display.after) == (40.0, 27.1)
    assert display.text == display.reason == "output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB)"
    assert "ms" not in display.text


def test_paired_results_are_read_in_one_query_and_the_newest_rounds_speak(session: Session) -> None:
    again = stored_alert(session, 2, confirmation=AlertConfirmation.PENDING)
    paired_rounds(session, again, change_pct=-3.0, interval=(-4.0, -2.0), note="refuted")
    paired_rounds(session, again, change_pct=None, rounds=0, state=ComparisonState.PENDING)  # asked anew
    alerts = [again, *(unconfirmed_suspect(session, index) for index in (4, 6, 8)), stored_alert(session, 10)]
    with recorded_sql(session) as statements:
        shown = alert_displays(session=session, alerts=alerts)
    assert len(statements) == 1
    assert shown[again.id].basis is EstimateBasis.DETECTION  # the newest rounds measured nothing yet
    assert shown[again.id].reason == "paired rounds queued"
    assert [shown[alert.id].change_pct for alert in alerts[1:4]] == [-1.37] * 3
    assert shown[alerts[4].id].paired is None
    assert paired_estimates(session=session, alert_ids=[]) == {}


def test_the_overview_counts_no_suspect_and_no_output_change_as_a_regression(session: Session) -> None:
    build_history(session)  # with a too-noisy suspect, an output alert and a confirmed regression
    rows = {(row.case_slug, row.hardware): row for row in overview(session=session)}
    qwen = rows[(QWEN, "H200")]
    assert (qwen.open_regressions, qwen.open_output_changes) == (2, 1)  # an import's, and one by hand
    assert qwen.recent_regression is not None
    assert qwen.recent_regression.first_bad_sha == f"{26:07x}"  # not the suspect's 32, nor the output's 31
    assert qwen.recent_regression.basis is EstimateBasis.DETECTION
    flux = rows[("flux1-dev-serve-gb300", "GB300")]
    assert flux.recent_regression is not None
    assert (flux.recent_regression.change_pct, flux.recent_regression.basis) == (4.2, EstimateBasis.PAIRED)


def test_the_series_chart_marks_a_suspect_with_its_state_and_paired_estimate(session: Session) -> None:
    suspect = unconfirmed_suspect(session, 4)
    [marked] = chart_alerts(session=session, case=suspect.case, hardware_kind_id=suspect.hardware_kind_id)
    assert (marked.alert_id, marked.state, marked.change_pct) == (suspect.id, "unconfirmed", -1.37)
    assert (marked.before_value, marked.after_value) == (
        100.0,
        96.4,
    )  # detection's levels, on the chart's runs
