"""Rotary position embedding over three axes (frame, row, column), as FLUX and Qwen-Image use it."""

from __future__ import annotations

import torch


def rope_tables(
    text_tokens: int, frames: int, rows: int, cols: int, head_dim: int, theta: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine tables, one row per token: text tokens first (along the frame axis), then the image."""
    spatial = 2 * (head_dim // 12)  # rotary pairs for rows and for columns; the rest go to frames
    axes = (head_dim // 2 - spatial, spatial // 2 + spatial % 2, spatial // 2)
    image = frames * rows * cols
    frame_index = torch.arange(frames, dtype=torch.float32).repeat_interleave(rows * cols) + text_tokens
    row_index = torch.arange(rows, dtype=torch.float32).repeat_interleave(cols).repeat(frames)
    col_index = torch.arange(cols, dtype=torch.float32).repeat(frames * rows)
    text_index = torch.arange(text_tokens, dtype=torch.float32)
    zeros = torch.zeros(text_tokens)
    positions = (
        torch.cat([text_index, frame_index]),
        torch.cat([zeros, row_index]),
        torch.cat([zeros, col_index]),
    )
    angles = []
    for position, pairs in zip(positions, axes, strict=True):
        freqs = 1.0 / theta ** (torch.arange(pairs, dtype=torch.float32) / pairs)
        angles.append(position[:, None] * freqs[None, :])
    angle = torch.cat(angles, dim=-1)
    assert angle.shape == (text_tokens + image, head_dim // 2)
    return torch.cos(angle), torch.sin(angle)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive pairs of ``x``'s last dimension by the tabled angles."""
    real, imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    rotated = torch.stack([real * cos - imag * sin, real * sin + imag * cos], dim=-1)
    return rotated.flatten(-2)
