"""The sweep: every series with runs evaluated again, as after a change of thresholds or code."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select, true
from sqlalchemy.orm import Session

from tracker.models import Alert, Case, HardwareKind, Run
from tracker.observability.metrics import timed_detection
from tracker.settings import CulpritTelling
from tracker.workflows.reactions import evaluate_and_bisect


@dataclass(frozen=True)
class SweepReport:
    """What a sweep looked at and changed."""

    series: int
    alerts_touched: list[Alert]


@timed_detection("sweep")
def sweep(*, session: Session, now: dt.datetime, telling: CulpritTelling | None = None) -> SweepReport:
    """Evaluate every series with runs; alerts created or changed are returned. ``telling``: whether
    a culprit's pull request may be told (None: not)."""
    # Each current case × hardware kind probed through ix_runs_series: a few hundred index look-ups,
    # where SELECT DISTINCT over runs would read every run. A scalar sub-select with LIMIT 1, not
    # EXISTS: PostgreSQL turns EXISTS into one aggregate over all runs.
    first_run = (
        select(Run.id)
        .where(Run.case_id == Case.id, Run.hardware_kind_id == HardwareKind.id)
        .limit(1)
        .scalar_subquery()
    )
    pairs = session.execute(
        select(Case.id, HardwareKind.id)
        .join(HardwareKind, true())  # every kind: runs may exist on kinds a case no longer lists
        .where(Case.is_current.is_(True), first_run.is_not(None))
        .order_by(Case.id, HardwareKind.id)
    ).all()
    touched: list[Alert] = []
    count = 0
    for case_id, kind_id in pairs:
        case = session.get(Case, case_id)
        kind = session.get(HardwareKind, kind_id)
        if case is None or kind is None or not case.is_current:
            continue
        count += 1
        touched.extend(
            evaluate_and_bisect(session=session, case=case, hardware=kind, now=now, telling=telling)
        )
    return SweepReport(series=count, alerts_touched=touched)
