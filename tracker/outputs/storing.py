"""Storing a run's output as the runner uploaded it (``wire.OutputIn``): one row and its references."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from tracker.errors import InvalidInput
from tracker.models import RunOutput, RunOutputFrame
from tracker.outputs.images import ImageError, png_size
from wire import OutputIn


def output_row(run_id: int, output: OutputIn) -> dict[str, Any]:
    """The ``run_outputs`` row of ``output`` for run ``run_id``."""
    return {
        "run_id": run_id,
        "digest": output.digest,
        "media": output.media,
        "width": output.width,
        "height": output.height,
        "frame_count": output.frame_count,
        "file_name": output.file_name,
    }


def frame_rows(run_id: int, output: OutputIn) -> list[dict[str, Any]]:
    """The ``run_output_frames`` rows of ``output``: each reference's PNG and its size as decoded.

    Raises :class:`InvalidInput` naming the frame for a PNG that does not decode or is too big.
    """
    rows = []
    for position, frame in enumerate(output.frames):
        png = frame.png()
        try:
            width, height = png_size(png)
        except ImageError as error:
            raise InvalidInput(f"output.frames.{position}.png_base64", str(error)) from error
        rows.append(
            {
                "run_id": run_id,
                "position": position,
                "frame_index": frame.frame_index,
                "width": width,
                "height": height,
                "png": png,
            }
        )
    return rows


def insert_outputs(session: Session, outputs: dict[int, OutputIn]) -> None:
    """Store the outputs of several runs (run id → output) with two multi-row inserts."""
    if not outputs:
        return
    frames = [row for run_id, output in outputs.items() for row in frame_rows(run_id, output)]
    session.execute(insert(RunOutput), [output_row(run_id, output) for run_id, output in outputs.items()])
    session.execute(insert(RunOutputFrame), frames)
