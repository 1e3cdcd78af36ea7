"""The DiT's normalisation: LayerNorm without affine parameters (adaLN modulates afterwards)."""

from __future__ import annotations

import torch
from torch import nn

from .kernels import fused_layer_norm


class LayerNorm(nn.Module):
    """LayerNorm over the last dimension, without weight or bias."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normalized: torch.Tensor = fused_layer_norm(x, self.eps)
        return normalized
