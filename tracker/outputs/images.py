"""Decoding the lossless PNG references (Pillow): their size, and their pixels as RGB arrays."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, UnidentifiedImageError

from tracker.errors import PerftrackError
from tracker.statistics.fidelity import Frame
from wire.outputs import MAX_REFERENCE_SIDE

# A reference is at most MAX_REFERENCE_SIDE on its longest side; refuse anything that decodes
# bigger before its pixels are read (a PNG bomb).
MAX_PIXELS = MAX_REFERENCE_SIDE * MAX_REFERENCE_SIDE


class ImageError(PerftrackError):
    """A reference that is not a PNG of an allowed size."""


def _open(png: bytes) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(png), formats=["PNG"])
    except UnidentifiedImageError as error:  # its message names the buffer object: no use to the reader
        raise ImageError("not a readable PNG") from error
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        # Pillow refuses (or, where warnings are errors, warns of) a header declaring more pixels than
        # Image.MAX_IMAGE_PIXELS, before reading any: the same refusal as any reference too big.
        raise ImageError(
            f"a reference declares too many pixels (a decompression bomb): at most {MAX_REFERENCE_SIDE} "
            f"pixels on its longest side; {error}"
        ) from error
    except (OSError, ValueError) as error:
        raise ImageError(f"not a readable PNG: {error}") from error
    if image.width < 1 or image.height < 1 or max(image.width, image.height) > MAX_REFERENCE_SIDE:
        raise ImageError(
            f"a reference is {image.width}×{image.height}: at most {MAX_REFERENCE_SIDE} pixels on its longest side"
        )
    return image


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a reference; :class:`ImageError` unless it decodes, within the size."""
    image = _open(png)
    try:
        image.load()
    except (OSError, ValueError) as error:
        raise ImageError(f"a truncated or corrupt PNG: {error}") from error
    return image.width, image.height


def rgb_pixels(png: bytes) -> Frame:
    """A reference's pixels, ``uint8`` (height, width, 3); alpha and palettes converted to RGB."""
    image = _open(png)
    try:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except (OSError, ValueError) as error:
        raise ImageError(f"a truncated or corrupt PNG: {error}") from error
