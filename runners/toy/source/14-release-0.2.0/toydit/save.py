"""``--save-output``: write the decoded picture as a PNG, and log where, as ``sglang generate`` does."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import torch
from PIL import Image

from .log import CYAN, RESET, get_logger
from .request import Request


@dataclass(frozen=True)
class OutputOptions:
    """sglang's output flags: whether to save, into which directory, under which file name."""

    save_output: bool = False
    output_path: str = "outputs"
    output_file_name: str | None = None


def default_file_name(prompt: str) -> str:
    """sglang's name: the prompt's first words, the time and a random tag (``cat_20260312-010712_73d9a86a``)."""
    words = re.sub(r"[^A-Za-z0-9]+", "_", prompt[:100]).strip("_") or "output"
    return f"{words}_{time.strftime('%Y%m%d-%H%M%S')}_{uuid.uuid4().hex[:8]}"


def to_images(pixels: torch.Tensor) -> list[Image.Image]:
    """The first output's frames (frames, 3, H, W in [0, 1]) as 8-bit RGB pictures."""
    quantized = (pixels[0] * 255.0).round().clamp(0, 255).to(torch.uint8)
    images = []
    for frame in quantized:
        height, width = frame.shape[1:]
        # Bytes through a list, not NumPy: the toy runs where NumPy may be missing.
        images.append(
            Image.frombytes("RGB", (width, height), bytes(frame.permute(1, 2, 0).flatten().tolist()))
        )
    return images


def save_output(pixels: torch.Tensor, request: Request, options: OutputOptions) -> Path | None:
    """Write the picture (several frames: an animated PNG, still lossless); ``None`` when not asked."""
    if not options.save_output:
        return None
    name = options.output_file_name or default_file_name(request.prompt)
    path = Path(options.output_path) / (name if name.endswith(".png") else f"{name}.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    first, *rest = to_images(pixels)
    if rest:
        first.save(path, format="PNG", save_all=True, append_images=rest)
    else:
        first.save(path, format="PNG")
    get_logger().info(f"Output saved to {CYAN}%s{RESET}", path)
    return path
