"""Classifier-free guidance: the velocity from the prompt, pushed away from the negative prompt's."""

from __future__ import annotations

from collections.abc import Callable

import torch

Denoiser = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def predict_velocity(
    denoiser: Denoiser,
    latents: torch.Tensor,
    timestep: float,
    text: torch.Tensor,
    negative_text: torch.Tensor | None,
    guidance_scale: float,
) -> torch.Tensor:
    """Run the DiT for the prompt and, with guidance on, for the negative prompt; combine them."""
    time_input = torch.full((latents.shape[0],), timestep)
    cond = denoiser(latents, time_input, text)
    if negative_text is None:
        return cond
    uncond = denoiser(latents, time_input, negative_text)
    return uncond + guidance_scale * (cond - uncond)
