"""A run's output references as the pages show them: one lossless PNG thumbnail per position."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.errors import NotFound
from tracker.models import RunOutputFrame


def output_frame_png(*, session: Session, run_id: int, position: int) -> bytes:
    """The PNG of reference ``position`` (0 for an image) of run ``run_id``'s output;
    :class:`NotFound` when the run saved no output or has no such reference."""
    png = session.scalar(
        select(RunOutputFrame.png).where(RunOutputFrame.run_id == run_id, RunOutputFrame.position == position)
    )
    if png is None:
        raise NotFound(f"run {run_id} has no output reference {position}")
    return png
