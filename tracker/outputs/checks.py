"""Checking one side's seeded output against another's: identical, the same picture, or changed.

A side is a set of runs of one seed (a commit's nightly runs, a comparison arm's rounds). Their
outputs should agree among themselves (a seeded pipeline on one machine is deterministic); the
newest run with an output speaks for its side. Equal digests are identical without decoding
anything; otherwise the two references are scored frame by frame (``tracker.statistics.fidelity``)
against the case's tolerance.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.enums import OutputStatus
from tracker.models import Case, Run, RunOutput, RunOutputFrame
from tracker.outputs.images import ImageError, rgb_pixels
from tracker.statistics.fidelity import DEFAULT_PSNR_DB, FidelityError, FrameScore, OutputScore, score_output

# Scores of pairs of outputs, by their digests (content, so the same whatever the database): a
# series is re-checked pair by pair on every evaluation, and decoding two references and scoring
# them costs milliseconds a pair; a pair's score never changes.
_SCORES: OrderedDict[tuple[str, str], OutputScore] = OrderedDict()
_SCORES_LOCK = threading.Lock()  # requests check outputs on several threads
SCORES_KEPT = 20_000


def _remembered(key: tuple[str, str]) -> OutputScore | None:
    with _SCORES_LOCK:
        return _SCORES.get(key)


def _remember(key: tuple[str, str], score: OutputScore) -> None:
    with _SCORES_LOCK:
        _SCORES[key] = score
        _SCORES.move_to_end(key)
        while len(_SCORES) > SCORES_KEPT:
            _SCORES.popitem(last=False)


def tolerance_of(case: Case) -> float:
    """The PSNR (dB) at or above which two outputs of ``case`` are the same picture."""
    return case.output_psnr_db if case.output_psnr_db is not None else DEFAULT_PSNR_DB


@dataclass(frozen=True)
class OutputCheck:
    """How the ``after`` side's output compares with the ``before`` side's."""

    status: OutputStatus
    tolerance_db: float
    before_run_id: int | None = None
    after_run_id: int | None = None
    frames: tuple[FrameScore, ...] = ()
    note: str = ""  # why nothing could be compared, for ``missing``

    @property
    def psnr_db(self) -> float | None:
        """Lowest PSNR over the frames (None when identical or not compared: no finite value)."""
        finite = [frame.psnr_db for frame in self.frames if not math.isinf(frame.psnr_db)]
        return min(finite) if finite else None

    @property
    def ssim(self) -> float | None:
        """Lowest SSIM over the frames (None when identical or not compared)."""
        return min(frame.ssim for frame in self.frames) if self.psnr_db is not None else None

    @property
    def changed(self) -> bool:
        """Beyond the tolerance."""
        return self.status is OutputStatus.CHANGED

    def summary(self) -> str:
        """One line: "output identical", "output changed (PSNR 27.1 dB, SSIM 0.812; tolerance 40 dB)"."""
        if self.status is OutputStatus.IDENTICAL:
            return "output identical"
        if self.status is OutputStatus.MISSING:
            return f"output not compared: {self.note}" if self.note else "output not compared"
        word = "changed" if self.changed else "the same picture"
        if self.psnr_db is None or self.ssim is None:  # equal references, pixels differ below their size
            return f"output {word} (references identical; full-size pixels differ)"
        return f"output {word} (PSNR {self.psnr_db:.1f} dB, SSIM {self.ssim:.3f}; tolerance {self.tolerance_db:g} dB)"


def series_has_outputs(session: Session, *, case_id: int, hardware_kind_id: int) -> bool:
    """Whether any run of the series saved an output (one indexed query: a series without any is
    not loaded a second time to compare nothing)."""
    found = session.scalar(
        select(RunOutput.run_id)
        .join(Run, Run.id == RunOutput.run_id)
        .where(Run.case_id == case_id, Run.hardware_kind_id == hardware_kind_id)
        .limit(1)
    )
    return found is not None


def newest_outputs(session: Session, run_ids: Collection[int]) -> dict[int, RunOutput]:
    """The outputs of ``run_ids`` that have one, by run id (one query, frames not loaded)."""
    if not run_ids:
        return {}
    rows = session.scalars(select(RunOutput).where(RunOutput.run_id.in_(sorted(run_ids)))).all()
    return {row.run_id: row for row in rows}


def reference_frames(session: Session, run_ids: Collection[int]) -> dict[int, list[bytes]]:
    """Per run, its reference PNGs in frame order (one query)."""
    frames: dict[int, list[bytes]] = {}
    if not run_ids:
        return frames
    for run_id, png in session.execute(
        select(RunOutputFrame.run_id, RunOutputFrame.png)
        .where(RunOutputFrame.run_id.in_(sorted(run_ids)))
        .order_by(RunOutputFrame.run_id, RunOutputFrame.position)
    ):
        frames.setdefault(run_id, []).append(png)
    return frames


def check_outputs(
    session: Session, *, before: Collection[int], after: Collection[int], tolerance_db: float
) -> OutputCheck:
    """Compare the newest output among the runs ``before`` with the newest among ``after``."""
    outputs = newest_outputs(session, {*before, *after})
    return compare_sides(session, outputs, before=before, after=after, tolerance_db=tolerance_db)


def compare_sides(
    session: Session,
    outputs: Mapping[int, RunOutput],
    *,
    before: Collection[int],
    after: Collection[int],
    tolerance_db: float,
) -> OutputCheck:
    """As :func:`check_outputs`, with the runs' outputs already read (for many checks at once)."""
    old = [outputs[run_id] for run_id in sorted(before, reverse=True) if run_id in outputs]
    new = [outputs[run_id] for run_id in sorted(after, reverse=True) if run_id in outputs]
    if not old or not new:
        side = "either side" if not old and not new else ("the before side" if not old else "the after side")
        return OutputCheck(OutputStatus.MISSING, tolerance_db, note=f"no saved output on {side}")
    first, second = old[0], new[0]
    runs = (first.run_id, second.run_id)
    if first.digest == second.digest:
        return OutputCheck(OutputStatus.IDENTICAL, tolerance_db, *runs)
    score = _remembered((first.digest, second.digest))
    if score is None:
        pngs = reference_frames(session, [first.run_id, second.run_id])
        try:
            score = score_output(
                [rgb_pixels(png) for png in pngs.get(first.run_id, [])],
                [rgb_pixels(png) for png in pngs.get(second.run_id, [])],
            )
        except (FidelityError, ImageError) as error:
            return OutputCheck(OutputStatus.MISSING, tolerance_db, *runs, note=str(error))
        _remember((first.digest, second.digest), score)
    status = OutputStatus.SAME if score.same_picture(tolerance_db) else OutputStatus.CHANGED
    if score.identical:  # equal references of outputs whose full pixels differ: below what is kept
        status = OutputStatus.SAME
    return OutputCheck(status, tolerance_db, *runs, frames=score.frames)
