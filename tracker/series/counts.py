"""Per-series run counts, kept as runs are stored (``series_counts``)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import case, delete, func, insert, select
from sqlalchemy.orm import Session

from tracker import db
from tracker.enums import RunStatus
from tracker.models import Run, SeriesCount


def count_run(*, session: Session, case_id: int, hardware_kind_id: int, failed: bool) -> None:
    """Add one stored run to its series' counts (an atomic upsert: concurrent uploads add up)."""
    count_runs(session=session, added={(case_id, hardware_kind_id): (1, int(failed))})


def count_runs(*, session: Session, added: Mapping[tuple[int, int], tuple[int, int]]) -> None:
    """Add stored runs to their series' counts in one upsert: ``(case_id, hardware_kind_id)`` to
    ``(runs, failed)`` added. Series in id order, so concurrent batches lock rows in one order."""
    if not added:
        return
    statement = db.upsert_insert(session, SeriesCount).values(
        [
            {"case_id": case_id, "hardware_kind_id": kind_id, "runs": runs, "failed": failed}
            for (case_id, kind_id), (runs, failed) in sorted(added.items())
        ]
    )
    statement = statement.on_conflict_do_update(
        index_elements=[SeriesCount.case_id, SeriesCount.hardware_kind_id],
        set_={
            "runs": SeriesCount.runs + statement.excluded.runs,
            "failed": SeriesCount.failed + statement.excluded.failed,
        },
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
