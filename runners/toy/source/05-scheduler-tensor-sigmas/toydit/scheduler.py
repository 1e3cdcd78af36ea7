"""Flow-matching Euler scheduler with a shifted sigma schedule (SD3, FLUX, Qwen-Image)."""

from __future__ import annotations

import torch


class FlowMatchEulerScheduler:
    """Integrates dx/dsigma = v from sigma = 1 (noise) to sigma = 0 (image)."""

    def __init__(self, shift: float = 3.0) -> None:
        self.shift = shift
        self.sigmas = torch.ones(1)

    def set_timesteps(self, steps: int) -> None:
        """Compute the ``steps + 1`` sigmas, the last one 0."""
        sigmas = 1.0 - torch.arange(steps, dtype=torch.float64) / steps
        shifted = self.shift * sigmas / (1.0 + (self.shift - 1.0) * sigmas)
        self.sigmas = torch.cat([shifted, torch.zeros(1, dtype=torch.float64)]).float()

    def timestep(self, index: int) -> float:
        """The model's time input at step ``index``."""
        return float(self.sigmas[index])

    def step(self, velocity: torch.Tensor, index: int, latents: torch.Tensor) -> torch.Tensor:
        """One Euler step from sigma[index] to sigma[index + 1]."""
        delta = float(self.sigmas[index + 1] - self.sigmas[index])
        return latents + delta * velocity
