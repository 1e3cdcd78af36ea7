"""The DiT's normalisation: LayerNorm without affine parameters (adaLN modulates afterwards)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812 (the name PyTorch code uses)
from torch import nn


class LayerNorm(nn.Module):
    """LayerNorm over the last dimension, without weight or bias."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normalized: torch.Tensor = F.layer_norm(x, (x.shape[-1],), eps=self.eps)
        return normalized
