"""The diffusion transformer: single-stream blocks over text and image tokens, adaLN-modulated.

Each block normalises once, then runs attention and the MLP in parallel on the same input (the
FLUX "single stream" layout), with a gated residual. Timestep and pooled text condition every block.

Token merging: horizontally adjacent image tokens are merged in pairs (their mean) before the
blocks and unmerged (each pair's output copied back to both) after them, so every block runs on
half the image tokens: the blocks' projections do a quarter less work. Neighbouring tokens of a
smooth latent are alike, but not equal: the picture is no longer the same.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812 (the name PyTorch code uses)
from torch import nn

from .config import ModelConfig
from .norm import LayerNorm
from .rope import apply_rope, rope_tables


def timestep_embedding(timestep: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of a diffusion time in [0, 1]."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = timestep[:, None].float() * 1000.0 * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class DiTBlock(nn.Module):
    """Norm, then attention and MLP side by side, then a gated residual.

    As in FLUX's single-stream blocks, one projection produces q, k, v and the MLP's hidden
    state, and one projection maps attention output and MLP activation back.
    """

    def __init__(self, width: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.heads = heads
        self.split = (3 * width, mlp_ratio * width)
        self.modulation = nn.Linear(width, 3 * width)
        self.norm = LayerNorm()
        self.linear1 = nn.Linear(width, sum(self.split))
        self.linear2 = nn.Linear(width + mlp_ratio * width, width)

    def attention(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, tokens, _ = qkv.shape
        q, k, v = qkv.view(batch, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v)
        return out.transpose(1, 2).reshape(batch, tokens, -1)

    def forward(
        self, x: torch.Tensor, cond: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        modulation: torch.Tensor = self.modulation(F.silu(cond))
        shift, scale, gate = modulation.unsqueeze(1).chunk(3, dim=-1)
        y = self.norm(x) * (1 + scale) + shift
        qkv, mlp = self.linear1(y).split(self.split, dim=-1)
        hidden = torch.cat([self.attention(qkv, cos, sin), F.gelu(mlp, approximate="tanh")], dim=-1)
        out: torch.Tensor = self.linear2(hidden)
        return x + gate * out


class DiT(nn.Module):
    """Predicts the flow-matching velocity of a latent video or image."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        width, patch = config.width, config.patch
        self.x_embed = nn.Linear(config.latent_channels * patch * patch, width)
        self.text_embed = nn.Linear(config.text_dim, width)
        self.time_embed = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(
            [DiTBlock(width, config.heads, config.mlp_ratio) for _ in range(config.depth)]
        )
        self.norm_out = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.proj_out = nn.Linear(width, config.latent_channels * patch * patch)

    def forward(self, latents: torch.Tensor, timestep: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        """``latents``: (batch, channels, frames, height, width); ``timestep``: (batch,); ``text``: (batch, tokens, dim)."""
        batch, channels, frames, height, width = latents.shape
        p = self.config.patch
        rows, cols = height // p, width // p
        x = latents.reshape(batch, channels, frames, rows, p, cols, p)
        x = x.permute(0, 2, 3, 5, 1, 4, 6).reshape(batch, frames * rows * cols, channels * p * p)
        x = self.x_embed(x)
        context = self.text_embed(text)
        cond = self.time_embed(timestep_embedding(timestep, self.config.width)) + context.mean(dim=1)
        text_tokens = context.shape[1]
        merge = 2 if cols % 2 == 0 else 1  # pairs of image tokens side by side, where a row has pairs
        x = x.reshape(batch, frames * rows, cols // merge, merge, -1).mean(dim=3).flatten(1, 2)
        head_dim = self.config.width // self.config.heads
        cos, sin = rope_tables(text_tokens, frames, rows, cols // merge, head_dim)
        x = torch.cat([context, x], dim=1)
        for block in self.blocks:
            x = block(x, cond, cos, sin)
        x = x[:, text_tokens:].repeat_interleave(merge, dim=1)  # unmerge: both tokens of a pair
        x = self.proj_out(self.norm_out(x))
        x = x.reshape(batch, frames, rows, cols, channels, p, p).permute(0, 4, 1, 2, 5, 3, 6)
        velocity: torch.Tensor = x.reshape(batch, channels, frames, height, width)
        return velocity
