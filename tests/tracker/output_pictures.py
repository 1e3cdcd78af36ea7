"""Small seeded pictures as a run's uploaded output (``wire.OutputIn``): a base picture, the same one
slightly perturbed (above the 40 dB tolerance) or changed (well below it)."""

from __future__ import annotations

import base64
import hashlib
import io

import numpy as np
from PIL import Image
from sqlalchemy.orm import Session

from tracker.outputs.storing import insert_outputs
from wire import OutputIn
from wire.outputs import OutputFrameIn

SIDE = 32


def picture(*, change: float = 0.0, seed: int = 7) -> np.ndarray:
    """A smooth seeded RGB picture; ``change`` adds that much seeded noise (0–255 scale)."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(30, 220, SIDE)
    pixels = np.stack(
        [np.add.outer(ramp, ramp) / 2, np.tile(ramp, (SIDE, 1)), np.tile(ramp[:, None], SIDE)], -1
    )
    if change:
        pixels = pixels + np.random.default_rng(seed + 1).normal(0, change, pixels.shape)
    pixels = pixels + rng.integers(0, 2, pixels.shape)
    return np.clip(pixels, 0, 255).astype(np.uint8)


def png_bytes(pixels: np.ndarray) -> bytes:
    """``pixels`` as a lossless PNG."""
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def output_of(pixels: np.ndarray) -> OutputIn:
    """An uploaded output of one image whose reference is ``pixels`` itself."""
    return OutputIn(
        digest="sha256:" + hashlib.sha256(pixels.tobytes()).hexdigest(),
        width=pixels.shape[1],
        height=pixels.shape[0],
        frames=[OutputFrameIn(png_base64=base64.b64encode(png_bytes(pixels)).decode())],
    )


def give_output(session: Session, run_id: int, pixels: np.ndarray) -> None:
    """Store ``pixels`` as run ``run_id``'s output."""
    insert_outputs(session, {run_id: output_of(pixels)})
    session.flush()
