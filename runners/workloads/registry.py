"""The workloads a runner offers, by the name a case's ``workload`` field uses."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from runners.workloads.base import Workload
from runners.workloads.environment import EnvironmentProbe
from runners.workloads.sglang import SglangWorkload

TOY_MODULE = "toydit"


def default_workloads(
    *, sglang: str = "sglang", cache_dir: Path, base_env: Mapping[str, str] | None = None
) -> Mapping[str, Workload]:
    """``sglang``: the real CLI (``sglang`` may be a command prefix such as ``python -m sglang.cli``);
    ``toy``: the CPU toy pipeline of the candidate tree, run by this interpreter.

    Benchmarks and probes run in ``base_env`` (``None``: the agent's environment through the job
    allow-list of :mod:`runners.jobenv`).

    The toy's compiled kernels are cached under ``cache_dir`` across jobs: every candidate is a
    fresh tree, and recompiling inductor kernels each time would dominate a CPU run.
    """
    prefix = tuple(shlex.split(sglang)) or ("sglang",)
    return {
        "sglang": SglangWorkload(
            generate_executable=(*prefix, "generate"),
            serve_executable=(*prefix, "serve"),
            base_env=base_env,
            probe=EnvironmentProbe(env=base_env),
        ),
        "toy": SglangWorkload(
            generate_executable=(sys.executable, "-m", TOY_MODULE, "generate"),
            serve_executable=(sys.executable, "-m", TOY_MODULE, "serve"),
            workdir="tree",
            tree_on_pythonpath=True,
            # The toy times its steps in its thread's CPU time and has no server to ask.
            sync_steps=None,
            serve_help_args=(),
            base_env=base_env,
            probe=EnvironmentProbe(env=base_env),
            extra_env={
                "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "inductor"),
                # The toy sets this itself before importing torch; set here too, it also holds
                # for a run forked from a preloaded interpreter (torch imported before the toy
                # runs), so both launches compile with one inductor config and share its cache.
                "TORCHINDUCTOR_VEC_ISA_OK": "1",
                # A cold compile in the run's own process: inductor's pool of compile workers
                # costs each run that compiles ~3 s of CPU to start (they import torch) and, on the
                # 2-core hosts the toy runs on, finishes later than one thread (docs/demo.md).
                "TORCHINDUCTOR_COMPILE_THREADS": "1",
            },
        ),
    }
