"""Stand-in text encoder: the prompt's UTF-8 bytes through an embedding and a small MLP."""

from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig

_PAD = 256


class TextEncoder(nn.Module):
    """Maps a prompt to ``text_tokens`` vectors of ``text_dim``."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.tokens = config.text_tokens
        self.embed = nn.Embedding(257, config.text_dim)
        self.position = nn.Parameter(torch.randn(config.text_tokens, config.text_dim) * 0.02)
        self.mlp = nn.Sequential(
            nn.Linear(config.text_dim, 4 * config.text_dim),
            nn.GELU(),
            nn.Linear(4 * config.text_dim, config.text_dim),
        )

    def tokenize(self, prompt: str) -> torch.Tensor:
        """Byte-level token ids, cut or padded to the fixed length."""
        ids = list(prompt.encode("utf-8"))[: self.tokens]
        ids += [_PAD] * (self.tokens - len(ids))
        return torch.tensor([ids], dtype=torch.long)

    def forward(self, prompt: str) -> torch.Tensor:
        hidden: torch.Tensor = self.embed(self.tokenize(prompt)) + self.position
        mixed: torch.Tensor = self.mlp(hidden)
        return hidden + mixed
