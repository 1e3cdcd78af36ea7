"""Per-series run counts, kept as runs are stored (``series_counts``)."""

from __future__ import annotations

from sqlalchemy import case, delete, func, insert, select
from sqlalchemy.orm import Session

from tracker import db
from tracker.models import Run, RunStatus, SeriesCount


def count_run(*, session: Session, case_id: int, hardware_kind_id: int, failed: bool) -> None:
    """Add one stored run to its series' counts (an atomic upsert: concurrent uploads add up)."""
    statement = db.upsert_insert(session, SeriesCount).values(
        case_id=case_id, hardware_kind_id=hardware_kind_id, runs=1, failed=int(failed)
    )
    statement = statement.on_conflict_do_update(
        index_elements=[SeriesCount.case_id, SeriesCount.hardware_kind_id],
        set_={"runs": SeriesCount.runs + 1, "failed": SeriesCount.failed + int(failed)},
    )
    session.execute(statement)


def rebuild_series_counts(*, session: Session) -> None:
    """Recount every series from ``runs`` (after a bulk load that bypassed ingest)."""
    session.execute(delete(SeriesCount))
    session.execute(
        insert(SeriesCount).from_select(
            ["case_id", "hardware_kind_id", "runs", "failed"],
            select(
                Run.case_id,
                Run.hardware_kind_id,
                func.count(),
                func.sum(case((Run.status == RunStatus.FAILED, 1), else_=0)),
            ).group_by(Run.case_id, Run.hardware_kind_id),
        )
    )
