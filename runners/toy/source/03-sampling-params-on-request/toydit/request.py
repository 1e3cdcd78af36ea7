"""What one generation asks for (sampling params) and how the pipeline runs (server args)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Request:
    """Sampling parameters of one request, as ``sglang generate`` names them."""

    prompt: str
    negative_prompt: str
    width: int
    height: int
    num_frames: int
    num_inference_steps: int
    guidance_scale: float
    seed: int

    @property
    def do_cfg(self) -> bool:
        """Classifier-free guidance runs a second (negative-prompt) branch when the scale is > 1."""
        return self.guidance_scale > 1.0

    def sampling_params(self) -> dict[str, object]:
        """The fields sglang lists under "Sampling params:", in its order and with its names."""
        return {
            "width": self.width,
            "height": self.height,
            "num_frames": self.num_frames,
            "prompt": self.prompt,
            "neg_prompt": self.negative_prompt,
            "seed": self.seed,
            "infer_steps": self.num_inference_steps,
            "num_outputs_per_prompt": 1,
            "guidance_scale": self.guidance_scale,
        }

    def with_steps(self, steps: int) -> Request:
        """The same request with another step count (the warmup runs one step)."""
        return replace(self, num_inference_steps=steps)


@dataclass(frozen=True)
class ServerArgs:
    """How the pipeline is set up: compilation, warmup, offloading, where to dump metrics."""

    model_path: str
    num_gpus: int = 1
    enable_torch_compile: bool = False
    warmup: bool = False
    offload_during_compile: bool = False
    dit_layerwise_offload: bool = False
    dit_cpu_offload: bool = False
    perf_dump_path: str | None = None
