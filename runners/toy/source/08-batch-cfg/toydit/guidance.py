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
    """Run the DiT for the prompt and, with guidance on, for the negative prompt; combine them.

    Both branches go through the DiT as one batch of two: one forward instead of two.
    """
    if negative_text is None:
        return denoiser(latents, torch.full((latents.shape[0],), timestep), text)
    batch = latents.shape[0]
    both = denoiser(
        torch.cat([latents, latents]),
        torch.full((2 * batch,), timestep),
        torch.cat([text, negative_text]),
    )
    cond, uncond = both.chunk(2)
    return uncond + guidance_scale * (cond - uncond)
