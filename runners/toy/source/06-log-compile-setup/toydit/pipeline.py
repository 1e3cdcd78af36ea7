"""The text-to-image pipeline: sglang's stages over a seeded toy checkpoint."""

from __future__ import annotations

import hashlib
import statistics
import time
from dataclasses import dataclass

import torch

from .config import CONFIG, ModelConfig
from .dit import DiT
from .guidance import Denoiser, predict_velocity
from .log import Progress, get_logger
from .perf_dump import RequestTimings, StepClock
from .profiler import for_denoising
from .request import Request
from .scheduler import FlowMatchEulerScheduler
from .stages import STAGES, stage
from .text_encoder import TextEncoder
from .vae import Decoder


@dataclass
class RequestOutput:
    """Pixels of one request, their digest and the request's timings."""

    pixels: torch.Tensor
    digest: str
    timings: RequestTimings


def weights_seed(model_path: str) -> int:
    """The "checkpoint": weights are drawn from a seed derived from the model path."""
    return int.from_bytes(hashlib.sha256(model_path.encode("utf-8")).digest()[:4], "big")


def pixel_digest(pixels: torch.Tensor) -> str:
    """SHA-256 of the image as 8-bit pixels (rounded, so it is stable across runs of one build)."""
    quantized = (pixels * 255.0).round().clamp(0, 255).to(torch.uint8).flatten()
    return hashlib.sha256(bytes(quantized.tolist())).hexdigest()


class Pipeline:
    """Text encoder, DiT, scheduler and VAE, run stage by stage."""

    def __init__(self, model_path: str, config: ModelConfig = CONFIG) -> None:
        self.config = config
        torch.manual_seed(weights_seed(model_path))
        self.text_encoder = TextEncoder(config).eval().requires_grad_(False)
        self.transformer = DiT(config).eval().requires_grad_(False)
        self.vae = Decoder(config).eval().requires_grad_(False)
        self.scheduler = FlowMatchEulerScheduler()
        self.denoiser: Denoiser = self.transformer

    def compile(self, backend: str) -> None:
        """Compile the DiT with torch.compile (the text encoder and VAE stay eager, as in sglang)."""
        get_logger().info("Compiling the transformer with torch.compile (backend=%s, dynamic=False)", backend)
        self.denoiser = torch.compile(self.transformer, backend=backend, dynamic=False)

    def run(self, request: Request) -> RequestOutput:
        """Run every stage for one request."""
        logger = get_logger()
        timings = RequestTimings()
        start = time.perf_counter()
        logger.info("Running pipeline stages: %s", [name for name, _ in STAGES])
        with stage("InputValidationStage", timings):
            self.validate(request)
        with stage("TextEncodingStage", timings):
            text = self.text_encoder(request.prompt)
            negative_text = self.text_encoder(request.negative_prompt) if request.do_cfg else None
        with stage("ConditioningStage", timings):
            guidance_scale = request.guidance_scale
        with stage("TimestepPreparationStage", timings):
            self.scheduler.set_timesteps(request.num_inference_steps)
        with stage("LatentPreparationStage", timings):
            latents = self.initial_latents(request)
        with stage("DenoisingStage", timings):
            latents = self.denoise(request, latents, text, negative_text, guidance_scale, timings)
        with stage("DecodingStage", timings):
            pixels = self.vae(latents)
        timings.total_duration_ms = (time.perf_counter() - start) * 1000.0
        return RequestOutput(pixels=pixels, digest=pixel_digest(pixels), timings=timings)

    def validate(self, request: Request) -> None:
        """Reject what the toy checkpoint cannot generate."""
        multiple = self.config.pixels_per_token
        for name, value in (("width", request.width), ("height", request.height)):
            if value <= 0 or value % multiple:
                raise ValueError(f"{name} must be a positive multiple of {multiple}, got {value}")
        if request.num_inference_steps < 1:
            raise ValueError(f"num_inference_steps must be at least 1, got {request.num_inference_steps}")
        if request.num_frames < 1:
            raise ValueError(f"num_frames must be at least 1, got {request.num_frames}")

    def initial_latents(self, request: Request) -> torch.Tensor:
        """Seeded Gaussian noise of the latent's shape."""
        scale = self.config.vae_scale
        shape = (
            1,
            self.config.latent_channels,
            request.num_frames,
            request.height // scale,
            request.width // scale,
        )
        generator = torch.Generator().manual_seed(request.seed)
        return torch.randn(shape, generator=generator)

    def denoise(
        self,
        request: Request,
        latents: torch.Tensor,
        text: torch.Tensor,
        negative_text: torch.Tensor | None,
        guidance_scale: float,
        timings: RequestTimings,
    ) -> torch.Tensor:
        """The Euler loop; each step (DiT forwards, guidance, scheduler update) is timed on its own.

        On one thread a step is timed by the CPU time of this thread, not the wall clock: a step
        lasts about a millisecond, and on a small shared machine any other runnable process (the
        runner, the tracker, a test) takes a scheduler time slice of several milliseconds out of
        whichever steps it lands in. The CPU time leaves those slices out; the wall time of every
        step is kept beside it. With more threads the wall clock is the only honest measure.
        """
        steps = request.num_inference_steps
        clock = StepClock.THREAD_CPU if torch.get_num_threads() == 1 else StepClock.WALL
        timings.step_clock = clock.value
        progress = Progress(steps)
        profiler = for_denoising(steps)  # --profile: a trace of steady steps (after the timing)
        for index in range(steps):
            wall_start, cpu_start = time.perf_counter_ns(), time.thread_time_ns()
            velocity = predict_velocity(
                self.denoiser, latents, self.scheduler.timestep(index), text, negative_text, guidance_scale
            )
            latents = self.scheduler.step(velocity, index, latents)
            cpu_ns, wall_ns = time.thread_time_ns() - cpu_start, time.perf_counter_ns() - wall_start
            timings.denoise_steps_ms.append((cpu_ns if clock is StepClock.THREAD_CPU else wall_ns) / 1e6)
            timings.denoise_steps_wall_ms.append(wall_ns / 1e6)
            progress.update()
            if profiler is not None:
                profiler.step()
        if profiler is not None:
            profiler.stop()
        average_s = statistics.fmean(timings.denoise_steps_ms) / 1000.0
        get_logger().info("[DenoisingStage] average time per step: %.4f seconds", average_s)
        return latents
