"""The files a job's upload brings (a gzipped profiler trace), stored beside its run."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from tracker.models import RunFile
from wire.files import FileIn

EVIDENCE_EXCLUSION = (
    "evidence run: measured again with compile logs and a profiler on, to show why; not a measurement"
)


def store_files(*, session: Session, run_id: int, files: Sequence[FileIn]) -> list[RunFile]:
    """Add the rows of ``files`` to run ``run_id`` (validated by the wire model: names, sizes)."""
    rows = []
    for uploaded in files:
        content = uploaded.content()
        rows.append(
            RunFile(
                run_id=run_id,
                name=uploaded.name,
                media_type=uploaded.media_type,
                kind=uploaded.kind,
                size_bytes=len(content),
                sha256=uploaded.sha256(),
                content=content,
            )
        )
    session.add_all(rows)
    session.flush()
    return rows
