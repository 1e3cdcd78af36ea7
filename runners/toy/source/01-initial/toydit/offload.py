"""Layerwise offload of the DiT: each block's weights are loaded just before the block runs.

On a GPU the weights live in host memory and a forward pre-hook copies them to the device; on the
CPU the hook copies them from a host copy into the block's own parameters, the same kind of memory
traffic. The hook moves data and must not be traced: it runs outside torch.compile
(``torch.compiler.disable``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

_HOST = "_offload_host_weights"
_HANDLES = "_offload_handles"


@torch.compiler.disable  # type: ignore[untyped-decorator]
def load_block_weights(block: nn.Module, args: tuple[object, ...]) -> None:
    """Forward pre-hook: copy the block's weights from their host copy into place."""
    host: dict[str, torch.Tensor] = getattr(block, _HOST)
    with torch.no_grad():
        for name, parameter in block.named_parameters():
            parameter.copy_(host[name])


def enable_offload(blocks: nn.ModuleList) -> None:
    """Keep a host copy of every block's weights and load it before the block runs."""
    handles: list[RemovableHandle] = []
    for block in blocks:
        setattr(block, _HOST, {name: p.detach().clone() for name, p in block.named_parameters()})
        handles.append(block.register_forward_pre_hook(load_block_weights))
    setattr(blocks, _HANDLES, handles)


def disable_offload(blocks: nn.ModuleList) -> None:
    """Remove the hooks again; the weights stay where they are."""
    handles: list[RemovableHandle] = getattr(blocks, _HANDLES, [])
    for handle in handles:
        handle.remove()
    setattr(blocks, _HANDLES, [])
