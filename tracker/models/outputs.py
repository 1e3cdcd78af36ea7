"""Runs' seeded outputs: what a run generated, kept small enough to compare and show.

A run that saved its output (sglang's ``--save-output``) has one ``run_outputs`` row: the digest
of the decoded pixels (every frame, in order), what it was and how big. Its references are
``run_output_frames``: lossless PNGs, the longest side at most
:data:`wire.outputs.MAX_REFERENCE_SIDE` pixels, one for an image and a few evenly spaced frames
for a video. Two runs of one seed compare by digest first (equal: identical), then frame by frame
on the references (PSNR and SSIM, ``tracker.statistics.fidelity``). A reference is also the
thumbnail the pages show.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.models.base import Base
from tracker.models.runs import Run


class RunOutput(Base):
    """The seeded output of one run: its digest and shape (1:1 with the run, when it saved one)."""

    __tablename__ = "run_outputs"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    digest: Mapped[str] = mapped_column(
        String(80), nullable=False, comment="sha256:<hex> of the decoded RGB pixels, every frame in order"
    )
    media: Mapped[str] = mapped_column(String(16), nullable=False, comment="image or video")
    width: Mapped[int] = mapped_column(Integer, nullable=False, comment="of the output, pixels")
    height: Mapped[int] = mapped_column(Integer, nullable=False)
    frame_count: Mapped[int] = mapped_column(Integer, nullable=False, default=1, comment="1 for an image")
    file_name: Mapped[str] = mapped_column(
        String(255), nullable=False, default="", comment="as the run saved it"
    )

    run: Mapped[Run] = relationship()
    frames: Mapped[list[RunOutputFrame]] = relationship(
        order_by="RunOutputFrame.position", cascade="all, delete-orphan", passive_deletes=True
    )


class RunOutputFrame(Base):
    """One reference frame of a run's output: a lossless PNG, small enough to compare and show."""

    __tablename__ = "run_output_frames"

    run_id: Mapped[int] = mapped_column(
        ForeignKey("run_outputs.run_id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True, comment="0, 1, ... in frame order")
    frame_index: Mapped[int] = mapped_column(
        Integer, nullable=False, default=0, comment="the frame of the output it shows (0 for an image)"
    )
    width: Mapped[int] = mapped_column(Integer, nullable=False, comment="of the reference, pixels")
    height: Mapped[int] = mapped_column(Integer, nullable=False)
    png: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
