"""Fused kernels for the DiT blocks.

``fused_layer_norm`` normalises in a single pass with ATen's fused LayerNorm kernel
(``torch.native_layer_norm``) instead of the mean, variance and scaling ops that
``F.layer_norm`` is traced into. It is an opaque kernel: keep torch.compile from tracing into it.
"""

from __future__ import annotations

import torch


@torch._dynamo.disable  # type: ignore[untyped-decorator]
def fused_layer_norm(x: torch.Tensor, eps: float) -> torch.Tensor:
    """LayerNorm over the last dimension, without weight or bias, in one fused kernel."""
    output, _mean, _rstd = torch.native_layer_norm(x, (x.shape[-1],), None, None, eps)
    return output
