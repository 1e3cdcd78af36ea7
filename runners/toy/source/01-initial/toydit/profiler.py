"""``--profile``: a torch.profiler trace of a few steady denoising steps, as sglang writes it.

Like sglang's ``SGLDiffusionProfiler`` (denoising stage only): one warmup step, then
``--num-profiled-timesteps`` active steps, the trace exported as a gzipped Chrome trace under
``SGLANG_TORCH_PROFILER_DIR`` (default ``./logs``) and its path logged as "Saved profiler traces
to: ...". Only the first request with more than one step is profiled (never a one-step warmup).
"""

from __future__ import annotations

import os

import torch

from .log import get_logger

_settings: dict[str, int] = {}


def configure(num_profiled_timesteps: int) -> None:
    """Turn profiling on for this process (``--profile``)."""
    _settings["steps"] = num_profiled_timesteps


class DenoisingProfiler:
    """Profiles ``active`` denoising steps after one warmup step; call :meth:`step` after each."""

    def __init__(self, active: int, request_id: str = "profile_trace") -> None:
        self.active = active
        self.request_id = request_id
        self.remaining = active + 1
        self.log_dir = os.environ.get("SGLANG_TORCH_PROFILER_DIR", "./logs")
        self.profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            record_shapes=True,
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=active, repeat=1),
        )
        get_logger().info(
            "Profiling request: %s for %d steps (rank=0, pid=%d)...", request_id, active, os.getpid()
        )
        self.profiler.start()

    def step(self) -> None:
        """One denoising step ended; stop and export once the active steps are recorded."""
        if self.remaining <= 0:
            return
        self.profiler.step()
        self.remaining -= 1
        if self.remaining == 0:
            self.stop()

    def stop(self) -> None:
        """Stop and write the trace (also when the loop ended early)."""
        if self.profiler is None:
            return
        profiler, self.profiler = self.profiler, None
        profiler.stop()
        os.makedirs(self.log_dir, exist_ok=True)
        name = f"{self.request_id}-{self.active}_steps-global-rank0.trace.json.gz"
        path = os.path.abspath(os.path.join(self.log_dir, name))
        profiler.export_chrome_trace(path)  # a ".gz" name is written gzipped
        get_logger().info("Saved profiler traces to: %s", path)


def for_denoising(num_steps: int) -> DenoisingProfiler | None:
    """The profiler of this request's denoising loop, or ``None`` (off, done, or a warmup request)."""
    wanted = _settings.get("steps", 0)
    if wanted == 0 or num_steps < 2:
        return None
    _settings["steps"] = 0  # one trace per process
    active = num_steps - 1 if wanted < 0 else min(wanted, num_steps - 1)
    return DenoisingProfiler(active)
