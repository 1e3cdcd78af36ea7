"""Output fidelity: do two seeded outputs show the same picture?

Frames are RGB arrays, ``uint8`` of shape (height, width, 3), as decoded from the runs' lossless
references. Equal pixels are identical (PSNR infinite, SSIM 1). Otherwise each pair of frames is
scored with scikit-image's PSNR and SSIM (data range 255, SSIM over the three channels), and an
output is the same picture when every frame's PSNR is at or above the tolerance: one bad frame
of a video is a changed video.

PSNR's scale, for 8-bit pictures: above ~45 dB differences are invisible and typical of kernel
reorderings or TF32; 30–40 dB is a visible but faint change (lower precision, a cache); under
25 dB the picture differs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from tracker.errors import PerftrackError

DEFAULT_PSNR_DB = 40.0  # at or above: the same picture (the suite may set a case's own)
Frame = NDArray[np.uint8]


class FidelityError(PerftrackError, ValueError):
    """Two outputs that cannot be compared (different frame counts or sizes)."""


@dataclass(frozen=True)
class FrameScore:
    """One pair of frames: PSNR in dB (``math.inf`` when equal) and SSIM (1.0 when equal)."""

    psnr_db: float
    ssim: float


@dataclass(frozen=True)
class OutputScore:
    """Two outputs frame by frame; the lowest PSNR and SSIM speak for the whole."""

    frames: tuple[FrameScore, ...]

    @property
    def identical(self) -> bool:
        """Every frame has the same pixels."""
        return all(math.isinf(frame.psnr_db) for frame in self.frames)

    @property
    def psnr_db(self) -> float:
        """The lowest PSNR over the frames."""
        return min(frame.psnr_db for frame in self.frames)

    @property
    def ssim(self) -> float:
        """The lowest SSIM over the frames."""
        return min(frame.ssim for frame in self.frames)

    def same_picture(self, tolerance_db: float = DEFAULT_PSNR_DB) -> bool:
        """Every frame at or above ``tolerance_db``."""
        return self.psnr_db >= tolerance_db


def score_frame(before: Frame, after: Frame) -> FrameScore:
    """PSNR and SSIM of one pair of frames of one shape."""
    if before.shape != after.shape:
        raise FidelityError(f"frames of different sizes: {before.shape} and {after.shape}")
    if before.ndim != 3 or before.shape[2] != 3:
        raise FidelityError(f"not an RGB frame: shape {before.shape}")
    if np.array_equal(before, after):
        return FrameScore(psnr_db=math.inf, ssim=1.0)
    psnr = float(peak_signal_noise_ratio(before, after, data_range=255))  # type: ignore[no-untyped-call]
    # SSIM's window is odd and no bigger than the frame: 7×7, less for a tiny frame.
    window = min(7, before.shape[0], before.shape[1])
    window -= 0 if window % 2 else 1
    if window < 3:
        raise FidelityError(f"frames too small to compare: {before.shape}")
    ssim = structural_similarity(  # type: ignore[no-untyped-call]
        before, after, data_range=255, channel_axis=2, win_size=window
    )
    return FrameScore(psnr_db=psnr, ssim=float(ssim))


def score_output(before: Sequence[Frame], after: Sequence[Frame]) -> OutputScore:
    """Two outputs' frames in order; they must have as many frames, each of one size."""
    if not before or len(before) != len(after):
        raise FidelityError(f"outputs of {len(before)} and {len(after)} frames cannot be compared")
    return OutputScore(frames=tuple(score_frame(b, a) for b, a in zip(before, after, strict=True)))


def describe(score: OutputScore) -> str:
    """ "identical", or "PSNR 31.2 dB, SSIM 0.912" (the lowest frame's)."""
    if score.identical:
        return "identical"
    return f"PSNR {score.psnr_db:.1f} dB, SSIM {score.ssim:.3f}"
