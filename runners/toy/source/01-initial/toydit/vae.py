"""Stand-in VAE decoder: a convolution, then a pixel shuffle up to full resolution."""

from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig


class Decoder(nn.Module):
    """Latents (batch, channels, frames, h, w) to pixels in [0, 1] (batch, frames, 3, H, W)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        scale = config.vae_scale
        self.conv_in = nn.Conv2d(config.latent_channels, 64, kernel_size=3, padding=1)
        self.act = nn.SiLU()
        self.conv_out = nn.Conv2d(64, 3 * scale * scale, kernel_size=1)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        batch, channels, frames, height, width = latents.shape
        x = latents.permute(0, 2, 1, 3, 4).reshape(batch * frames, channels, height, width)
        x = self.shuffle(self.conv_out(self.act(self.conv_in(x))))
        pixels = (torch.tanh(x) + 1.0) / 2.0
        return pixels.reshape(batch, frames, *pixels.shape[1:])
