"""A run's seeded output as the runner uploads it: digest, shape and small lossless references.

The runner decodes what the workload saved (an image, or a video's frames), hashes the pixels and
keeps references of at most :data:`MAX_REFERENCE_SIDE` pixels on the longest side, as PNG (one for
an image, up to :data:`MAX_REFERENCE_FRAMES` evenly spaced frames for a video). The tracker
compares two runs' outputs on these references, so they must be lossless: never JPEG.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

from pydantic import Field, Strict, field_validator

from wire.base import RecordIn

MAX_REFERENCE_SIDE = 256  # pixels, longest side of a reference frame
MAX_REFERENCE_FRAMES = 8  # reference frames of a video
MAX_REFERENCE_PNG_BYTES = 512 * 1024  # one reference frame, PNG, decoded from base64
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# base64 grows 4/3; a few bytes for padding.
_MAX_BASE64 = (MAX_REFERENCE_PNG_BYTES + 2) // 3 * 4

Dimension = Annotated[int, Strict(), Field(ge=1, le=65_536)]


class OutputFrameIn(RecordIn):
    """One reference frame: a PNG, base64, of the output's frame ``frame_index``."""

    frame_index: Annotated[int, Strict(), Field(ge=0, le=10_000_000)] = 0
    png_base64: Annotated[str, Field(min_length=8, max_length=_MAX_BASE64)]

    @field_validator("png_base64")
    @classmethod
    def _png(cls, value: str) -> str:
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as error:
            raise ValueError("not base64") from error
        if not data.startswith(PNG_SIGNATURE):
            raise ValueError("not a PNG (references must be lossless)")
        return value

    def png(self) -> bytes:
        """The PNG's bytes."""
        return base64.b64decode(self.png_base64)


class OutputIn(RecordIn):
    """What a run generated with its seed: the pixels' digest, the shape, and references."""

    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$", description="of the decoded RGB pixels")]
    media: Literal["image", "video"] = "image"
    width: Dimension
    height: Dimension
    frame_count: Annotated[int, Strict(), Field(ge=1, le=10_000_000)] = 1
    file_name: Annotated[str, Field(max_length=255)] = ""
    frames: Annotated[list[OutputFrameIn], Field(min_length=1, max_length=MAX_REFERENCE_FRAMES)]
