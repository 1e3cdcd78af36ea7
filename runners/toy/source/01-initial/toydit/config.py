"""Model sizes of the toy checkpoint: small enough for a laptop CPU, large enough to time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    """Shapes of the text encoder, the DiT and the VAE."""

    text_tokens: int = 16  # prompts are cut or padded to this many bytes
    text_dim: int = 64
    width: int = 64
    depth: int = 4  # each block adds Dynamo tracing time to every run
    heads: int = 2
    mlp_ratio: int = 4
    latent_channels: int = 16
    vae_scale: int = 16  # pixels per latent cell
    patch: int = 4  # latent cells per token side

    @property
    def pixels_per_token(self) -> int:
        """Width and height must be multiples of this."""
        return self.vae_scale * self.patch


CONFIG = ModelConfig()
