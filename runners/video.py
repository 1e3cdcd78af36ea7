"""Decoding a saved video into frames, with PyAV: the runner extra (``perftrack[runner]``).

Only :mod:`runners.outputs` imports this module, and only when PyAV is installed: a tracker host's
base install reads pictures (Pillow) and reports a video it cannot decode as unreadable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import av
from av.container import InputContainer
from PIL import Image

# What PyAV raises for a file it cannot open or a stream it cannot decode.
DECODE_ERRORS: tuple[type[Exception], ...] = (av.FFmpegError,)


def video_frames(path: Path) -> Iterator[Image.Image]:
    """The decoded frames of the first video stream of ``path``, in order, as RGB pictures.

    Opening happens now (an error in :data:`DECODE_ERRORS` or :class:`OSError`); decoding as the
    frames are taken (:data:`DECODE_ERRORS`, or :class:`ValueError` when there is no video stream).
    """
    return _decoded(av.open(str(path), mode="r"))


def _decoded(container: InputContainer) -> Iterator[Image.Image]:
    with container:
        if not container.streams.video:
            raise ValueError("the file holds no video stream")
        for frame in container.decode(video=0):
            yield Image.fromarray(frame.to_ndarray(format="rgb24"))
