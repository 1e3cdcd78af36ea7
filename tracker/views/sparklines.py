"""Sparklines as SVG coordinates: pure geometry over a sequence of values, drawn by the template."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Sparkline:
    """A polyline in a ``width`` × ``height`` box and its last point (the latest run)."""

    points: str
    last_x: float
    last_y: float
    width: int
    height: int


def sparkline(
    values: Sequence[float], *, width: int = 120, height: int = 28, pad: float = 3.0
) -> Sparkline | None:
    """Scale ``values`` (oldest first) into the box; ``None`` for fewer than two values.

    The vertical range is at least 1 % of the level, so a flat series stays a flat line instead of
    magnifying noise into a zigzag.
    """
    if len(values) < 2:
        return None
    low, high = min(values), max(values)
    middle = (low + high) / 2
    span = max(high - low, abs(middle) * 0.01, 1e-9)
    low, high = middle - span / 2, middle + span / 2
    step = (width - 2 * pad) / (len(values) - 1)
    coords = [
        (pad + index * step, pad + (high - value) / (high - low) * (height - 2 * pad))
        for index, value in enumerate(values)
    ]
    return Sparkline(
        points=" ".join(f"{x:.1f},{y:.1f}" for x, y in coords),
        last_x=round(coords[-1][0], 1),
        last_y=round(coords[-1][1], 1),
        width=width,
        height=height,
    )
