"""A reference PNG whose header declares more pixels than Pillow opens (a decompression bomb) is an
ImageError, the same refusal as any reference too big, never an exception of Pillow's own."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import pytest

from tracker.outputs.images import ImageError, png_size, rgb_pixels


def declared_png(width: int, height: int) -> bytes:
    """The smallest PNG declaring ``width``×``height`` RGB pixels: its header, no pixel data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


BOMB = declared_png(20_000, 20_000)  # 400 M pixels: over twice Pillow's MAX_IMAGE_PIXELS


@pytest.mark.parametrize("read", [png_size, rgb_pixels])
def test_a_decompression_bomb_is_an_image_error(read: Callable[[bytes], object]) -> None:
    with pytest.raises(ImageError, match="decompression bomb"):
        read(BOMB)


@pytest.mark.filterwarnings("error::PIL.Image.DecompressionBombWarning")
def test_a_bomb_warning_made_an_error_is_an_image_error_too() -> None:
    with pytest.raises(ImageError, match="decompression bomb"):
        png_size(declared_png(10_000, 10_000))  # 100 M pixels: Pillow warns


def test_a_declared_size_over_the_reference_side_is_refused() -> None:
    with pytest.raises(ImageError, match="at most 256 pixels"):
        png_size(declared_png(300, 10))
