"""The seeded output a generate run saved (``--save-output``): found, decoded, hashed, kept small.

``sglang generate --save-output`` (and the toy) log ``Output saved to <path>`` for each file they
write, relative to the process's working directory; sglang colours the path (``Output saved to
{CYAN}{path}{RESET}``, ``runtime/entrypoints/utils.py``), so the log is read as
:func:`runners.parsing.clean_console_text` leaves it. The runner reads the first such file, hashes
its decoded RGB pixels (every frame, in order), keeps lossless PNG references of at most
``MAX_REFERENCE_SIDE`` pixels on the longest side (an image; up to ``MAX_REFERENCE_FRAMES`` evenly
spaced frames of a video) and deletes what was saved. Nothing here fails a run: an output that is
missing or unreadable becomes a warning.

The digest is SHA-256 over, for each frame in order, ``"<width>x<height>\\n"`` then the frame's
``rgb24`` bytes (row-major, 3 bytes a pixel): two outputs share it only if every pixel and the
shape agree.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageSequence, UnidentifiedImageError

from runners.extra import RUNNER_EXTRA
from runners.parsing import clean_console_text
from wire.outputs import MAX_REFERENCE_FRAMES, MAX_REFERENCE_SIDE, OutputFrameIn, OutputIn

try:  # PyAV decodes videos; it comes with the runner extra, and a tracker host may lack it.
    from runners.video import DECODE_ERRORS, video_frames
except ModuleNotFoundError as missing:
    if missing.name != "av":
        raise
    DECODE_ERRORS = ()

    def video_frames(path: Path) -> Iterator[Image.Image]:
        """Without PyAV no video is decoded: say so, and which install brings it."""
        raise OutputReadError(f"decoding a video needs PyAV, which the runner extra brings: {RUNNER_EXTRA}")


# What opening a video, and summarising decoded frames, may raise for a file that is not usable.
_OPEN_ERRORS: tuple[type[Exception], ...] = (OSError, *DECODE_ERRORS)
_READ_ERRORS: tuple[type[Exception], ...] = (OSError, ValueError, *DECODE_ERRORS)

OUTPUT_DIR_NAME = "outputs"
VIDEO_SUFFIXES = frozenset({".mp4", ".webm", ".mkv", ".mov", ".avi", ".m4v"})
_SAVED = re.compile(r"Output saved to (?P<path>\S.*?)\s*$", re.MULTILINE)


class OutputReadError(Exception):
    """A saved output that cannot be read or decoded."""


@dataclass(frozen=True)
class CapturedOutput:
    """What a run saved, as uploaded (``None``: nothing usable), and why not, as warnings."""

    output: OutputIn | None = None
    warnings: tuple[str, ...] = ()


def output_options(
    params: Mapping[str, Any], flags: Mapping[str, Any], output_dir: Path
) -> list[tuple[str, Any]]:
    """``save-output`` and ``output-path DIR`` as (name, value) pairs, unless the case sets them itself."""
    given = {**params, **flags}
    options: list[tuple[str, Any]] = [] if given.get("save-output") else [("save-output", True)]
    if given.get("output-path") in (None, False):
        options.append(("output-path", str(output_dir)))
    return options


def saved_paths(log_text: str, cwd: Path) -> list[Path]:
    """The files the log says were saved, in order, resolved against ``cwd``, each once.

    ``log_text`` is console text as :func:`runners.parsing.clean_console_text` leaves it; raw
    text is cleaned here too, so a colour code never becomes part of a path.
    """
    paths: list[Path] = []
    for match in _SAVED.finditer(clean_console_text(log_text)):
        path = (cwd / match.group("path")).resolve()
        if path not in paths:
            paths.append(path)
    return paths


def capture_output(log_text: str, *, cwd: Path, roots: Sequence[Path]) -> CapturedOutput:
    """Read the first output the log names, then delete every file it names under ``roots``.

    ``log_text`` is the cleaned console text (see :func:`saved_paths`, which also cleans it).
    A path outside ``roots`` (the job's scratch directory, the working directory) is neither read
    nor deleted: a log is the benchmark's text, not an instruction to the runner.
    """
    paths = saved_paths(log_text, cwd)
    if not paths:
        return CapturedOutput(warnings=("the run saved no output (no 'Output saved to' line in its log)",))
    allowed = [path for path in paths if _inside(path, roots)]
    warnings = [
        f"ignored output {path}: outside the job's directories" for path in paths if path not in allowed
    ]
    if len(allowed) > 1:
        warnings.append(f"the run saved {len(allowed)} outputs; kept the first, {allowed[0].name}")
    output = None
    try:
        if allowed:
            output = read_output(allowed[0])
    except OutputReadError as error:
        warnings.append(f"could not read the saved output {allowed[0].name}: {error}")
    finally:
        for path in allowed:
            path.unlink(missing_ok=True)
    return CapturedOutput(output, tuple(warnings))


def read_output(path: Path) -> OutputIn:
    """The upload of one saved file: a video by its suffix (PyAV), anything else as an image (Pillow)."""
    if not path.is_file():
        raise OutputReadError("no such file")
    frames = _video_frames(path) if path.suffix.lower() in VIDEO_SUFFIXES else _image_frames(path)
    try:
        return summarize(frames, file_name=path.name[:255], video=path.suffix.lower() in VIDEO_SUFFIXES)
    except _READ_ERRORS as error:
        raise OutputReadError(f"{type(error).__name__}: {error}") from error


def summarize(frames: Iterable[Image.Image], *, file_name: str, video: bool = False) -> OutputIn:
    """Digest, shape and references of decoded frames; several frames make a video."""
    digest = hashlib.sha256()
    thumbnails: list[Image.Image] = []
    width = height = 0
    for frame in frames:
        rgb = frame.convert("RGB")
        width, height = rgb.size
        digest.update(f"{width}x{height}\n".encode())
        digest.update(rgb.tobytes())
        thumbnails.append(reference(rgb))
    if not thumbnails:
        raise ValueError("no frame decoded")
    kept = evenly_spaced(len(thumbnails), MAX_REFERENCE_FRAMES)
    return OutputIn(
        digest=f"sha256:{digest.hexdigest()}",
        media="video" if video or len(thumbnails) > 1 else "image",
        width=width,
        height=height,
        frame_count=len(thumbnails),
        file_name=file_name,
        frames=[OutputFrameIn(frame_index=index, png_base64=png_base64(thumbnails[index])) for index in kept],
    )


def reference(image: Image.Image) -> Image.Image:
    """``image`` scaled down (Lanczos) so its longest side is at most ``MAX_REFERENCE_SIDE``."""
    longest = max(image.size)
    if longest <= MAX_REFERENCE_SIDE:
        return image.copy()
    scale = MAX_REFERENCE_SIDE / longest
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


def evenly_spaced(count: int, most: int) -> list[int]:
    """Up to ``most`` indices out of ``count``, first and last included, evenly spaced."""
    if count <= most:
        return list(range(count))
    return sorted({round(i * (count - 1) / (most - 1)) for i in range(most)})


def png_base64(image: Image.Image) -> str:
    """A lossless PNG of ``image``, base64."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _image_frames(path: Path) -> list[Image.Image]:
    try:
        with Image.open(path) as image:
            return [frame.convert("RGB") for frame in ImageSequence.Iterator(image)]
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as error:
        raise OutputReadError(f"not a readable image: {error}") from error


def _video_frames(path: Path) -> Iterator[Image.Image]:
    try:
        return video_frames(path)
    except _OPEN_ERRORS as error:
        raise OutputReadError(f"not a readable video: {error}") from error


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path.is_relative_to(root.resolve()) for root in roots)
