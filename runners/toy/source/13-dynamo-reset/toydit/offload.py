"""Layerwise offload of the DiT: each layer of a block has its weights loaded just before it runs.

On a GPU the weights live in host memory and a forward pre-hook copies them to the device; on the
CPU the hook copies them from a host copy into the layer's own parameters, the same kind of memory
traffic. The hooks sit on the layers that own weights (the blocks' linear projections). A hook
moves data and must not be traced: it runs outside torch.compile (``torch.compiler.disable``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

_HOST = "_offload_host_weights"
_HANDLES = "_offload_handles"


@torch.compiler.disable  # type: ignore[untyped-decorator]
def load_layer_weights(layer: nn.Module, args: tuple[object, ...]) -> None:
    """Forward pre-hook: copy the layer's weights from their host copy into place."""
    host: dict[str, torch.Tensor] = getattr(layer, _HOST)
    with torch.no_grad():
        for name, parameter in layer.named_parameters(recurse=False):
            parameter.copy_(host[name])


def weight_layers(blocks: nn.ModuleList) -> list[nn.Module]:
    """The modules inside the blocks that own parameters themselves, in call order."""
    return [
        module
        for block in blocks
        for module in block.modules()
        if next(module.parameters(recurse=False), None) is not None
    ]


def enable_offload(blocks: nn.ModuleList) -> None:
    """Keep a host copy of every layer's weights and load it before the layer runs."""
    handles: list[RemovableHandle] = []
    for layer in weight_layers(blocks):
        setattr(layer, _HOST, {name: p.detach().clone() for name, p in layer.named_parameters(recurse=False)})
        handles.append(layer.register_forward_pre_hook(load_layer_weights))
    setattr(blocks, _HANDLES, handles)


def disable_offload(blocks: nn.ModuleList) -> None:
    """Remove the hooks again; the weights stay where they are."""
    handles: list[RemovableHandle] = getattr(blocks, _HANDLES, [])
    for handle in handles:
        handle.remove()
    setattr(blocks, _HANDLES, [])
    if handles:
        # Code compiled while the hooks were installed was compiled around them, and Dynamo does
        # not guard on module hooks, so it outlives them: a hook inside the block loop is a graph
        # break in a loop, so Dynamo skips the DiT's forward frame for good, and every block's
        # own graph is split at each hooked layer. Drop that code so that the next call compiles
        # the DiT again, as one graph.
        torch._dynamo.reset()
