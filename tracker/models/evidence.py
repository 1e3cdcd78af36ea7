"""Evidence for a culprit: the profiled re-runs of an alert's culprit (or a comparison's regression)
and the files runs bring with them.

An evidence job (``JobReason.EVIDENCE``) runs one side of a change once more with the compile
logs and a ``torch.profiler`` trace on; :class:`EvidenceJob` says what it is evidence for and
keeps what was read from its run. Such a run never counts as a measurement of its series
(ingest marks it excluded). :class:`RunFile` holds a file a run uploaded (a gzipped trace).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, Integer, LargeBinary, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import Arm
from tracker.models.base import Base, JSONType, UTCDateTime, created_at, int_pk, str_enum
from tracker.models.jobs import Job


class EvidenceJob(Base):
    """An evidence job, what it is evidence for, and what its run showed.

    ``side`` is ``base`` for the last good commit (or a comparison's base), ``head`` for the culprit
    (or the comparison's head). Exactly one of ``alert_id`` and ``comparison_result_id`` is set.
    An upload only links its run (``run_id``, ``recorded_at``); the run is read after the answer
    (``summarized_at``; ``summary`` stays NULL for a failed run or one nothing could read), by one
    reader at a time (``reading_until``: the claim of the reading under way).
    """

    __tablename__ = "evidence_jobs"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    alert_id: Mapped[int | None] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"), index=True, comment="the alert whose culprit it shows"
    )
    comparison_result_id: Mapped[int | None] = mapped_column(
        ForeignKey("comparison_results.id", ondelete="CASCADE"),
        index=True,
        comment="the comparison result whose regression it shows",
    )
    side: Mapped[Arm] = mapped_column(
        str_enum(Arm, "arm"), nullable=False, comment="base: last good commit; head: the culprit"
    )
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL"), comment="the run that answered the job"
    )
    summary: Mapped[dict[str, Any] | None] = mapped_column(
        JSONType,
        comment="read from the run: graph breaks [{site, reason}], per-operator self time ms/step, steps",
    )
    recorded_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="when the run was stored and linked here, UTC"
    )
    summarized_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(),
        index=True,
        comment="when the run was read into summary, UTC; NULL with run_id set: waiting to be read",
    )
    read_attempts: Mapped[int] = mapped_column(
        Integer,
        nullable=False,
        default=0,
        server_default=text("0"),
        comment="readings begun; a row whose readers never finished (a trace that kills its reader) is given up",
    )
    reading_until: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="a reading holds the row until then, UTC; NULL or past: free to read"
    )
    created_at: Mapped[created_at]

    job: Mapped[Job] = relationship()


class RunFile(Base):
    """A file a run uploaded with its result (a profiler trace), served from the run's page."""

    __tablename__ = "run_files"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: Mapped[int_pk]
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False, comment="file name, no directories")
    media_type: Mapped[str] = mapped_column(String(128), nullable=False, comment="as served")
    kind: Mapped[str] = mapped_column(String(32), nullable=False, comment="what it is: trace")
    size_bytes: Mapped[int] = mapped_column(Integer, nullable=False, comment="of content, bytes")
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    content: Mapped[bytes] = mapped_column(LargeBinary, nullable=False, deferred=True)
    created_at: Mapped[created_at]
