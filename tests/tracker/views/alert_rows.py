"""Alerts in every state a reader meets, stored as rows: suspects with their paired rounds (a
finished or running ``confirmation`` comparison and its one result), established alerts, output
alerts. The workflows that reach these states are tested in ``tests/tracker/detection``; the read
side only needs the rows, whatever rule produced them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import Session

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import (
    AlertConfirmation,
    AlertStatus,
    ComparisonKind,
    ComparisonState,
    Direction,
    Metric,
    Verdict,
)
from tracker.models import Alert, Commit, Comparison, ComparisonResult
from tracker.vcs.commits import ensure_candidate, upsert_commit
from wire import CommitIn

CASE = "qwen-image-t2i-1024"
T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=dt.UTC)
NOISY_NOTE = "unconfirmed, too noisy: the interval straddles the threshold after 16 rounds"


def commit(session: Session, index: int, *, case: str = CASE) -> Commit:
    """Commit ``index`` of the case's repository, an hour after the one before."""
    repository = get_current_case(session=session, slug=case).repository
    assert repository is not None
    return upsert_commit(
        session=session,
        repository=repository,
        commit=CommitIn(
            sha=f"{index + 0xB000:07x}",
            committed_at=T0 + dt.timedelta(hours=index),
            title=f"Scheduler change {index}",
        ),
    )


def stored_alert(
    session: Session, index: int, *, case: str = CASE, hardware: str = "H200", **fields: Any
) -> Alert:
    """An alert of ``case`` on ``hardware`` between commits ``index - 1`` and ``index``: by default an
    open regression of 100 → 103.6 ms that needs no confirmation; ``fields`` override any column."""
    values: dict[str, Any] = {
        "metric": Metric.DENOISE_STEP_MS,
        "direction": Direction.REGRESSION,
        "status": AlertStatus.OPEN,
        "confirmation": AlertConfirmation.NOT_NEEDED,
        "before_value": 100.0,
        "after_value": 103.6,
        "change_pct": 3.6,
        "threshold_pct": 2.0,
        "noise_pct": 0.1,
        "evidence": {},
        "created_at": T0 + dt.timedelta(hours=index, minutes=30),
    }
    values.update(fields)
    alert = Alert(
        case_id=get_current_case(session=session, slug=case).id,
        hardware_kind_id=get_hardware_kind(session=session, name=hardware).id,
        last_good_commit=commit(session, index - 1, case=case),
        first_bad_commit=commit(session, index, case=case),
        **values,
    )
    session.add(alert)
    session.flush()
    return alert


def paired_rounds(
    session: Session,
    alert: Alert,
    *,
    change_pct: float | None,
    interval: tuple[float, float] | None = None,
    rounds: int = 16,
    note: str = "",
    state: ComparisonState = ComparisonState.DONE,
    verdict: Verdict = Verdict.INCONCLUSIVE,
) -> Comparison:
    """The alert's paired rounds (last good = base, first bad = head) and what they measured; the
    arms' levels follow from ``change_pct`` around 100 ms."""
    assert alert.last_good_commit is not None
    comparison = Comparison(
        repository_id=alert.first_bad_commit.repository_id,
        base_candidate_id=ensure_candidate(session=session, base=alert.last_good_commit, patches=[]).id,
        head_candidate_id=ensure_candidate(session=session, base=alert.first_bad_commit, patches=[]).id,
        kind=ComparisonKind.CONFIRMATION,
        state=state,
        rounds=rounds,
        rounds_scheduled=rounds,
        max_rounds=16,
        alert_id=alert.id,
    )
    session.add(comparison)
    session.flush()
    session.add(
        ComparisonResult(
            comparison_id=comparison.id,
            case_id=alert.case_id,
            hardware_kind_id=alert.hardware_kind_id,
            verdict=verdict,
            base_value=100.0 if change_pct is not None else None,
            head_value=100.0 * (1 + change_pct / 100) if change_pct is not None else None,
            change_pct=change_pct,
            ci_low_pct=interval[0] if interval else None,
            ci_high_pct=interval[1] if interval else None,
            rounds_done=rounds,
            threshold_pct=alert.threshold_pct,
            note=note,
        )
    )
    session.flush()
    return comparison


def unconfirmed_suspect(session: Session, index: int, **fields: Any) -> Alert:
    """The demo's alert 4: detection saw -3.6 %, sixteen paired rounds measured -1.37 % [-2.30,
    -0.45] and could not call it against the 2 % threshold: open, unconfirmed, too noisy."""
    values: dict[str, Any] = {
        "direction": Direction.IMPROVEMENT,
        "confirmation": AlertConfirmation.TOO_NOISY,
        "before_value": 100.0,
        "after_value": 96.4,
        "change_pct": -3.6,
    }
    alert = stored_alert(session, index, **(values | fields))
    paired_rounds(session, alert, change_pct=-1.37, interval=(-2.30, -0.45), note=NOISY_NOTE)
    return alert


def output_alert(session: Session, index: int, **fields: Any) -> Alert:
    """An open output alert: the seeded picture's PSNR fell to 27.1 dB against a 40 dB tolerance."""
    values: dict[str, Any] = {
        "metric": Metric.OUTPUT,
        "before_value": 40.0,
        "after_value": 27.1,
        "change_pct": (27.1 / 40.0 - 1) * 100,
        "threshold_pct": 0.0,
        "noise_pct": None,
        "output_psnr_db": 27.1,
        "output_ssim": 0.81,
        "evidence": {"tolerance_db": 40.0},
    }
    return stored_alert(session, index, **(values | fields))
