"""Command lines and environment of a benchmark run, built from a case the way maintainers type them.

``CaseSpec.params`` and ``CaseSpec.flags`` are keyed by sglang's own flag names: ``True`` renders
``--flag``, a string or number ``--flag value``, a list ``--flag v1 v2``, ``False``/``None`` nothing,
each as the build being measured accepts it (:mod:`runners.workloads.cli.intents`: ``warmup`` is an
intent spelled per build, and an option the build lacks is refused by name).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runners.jobspec import CaseSpec
from runners.workloads.cli.intents import render_for_build
from runners.workloads.cli.options import CliOptions

DEFAULT_GENERATE = ("sglang", "generate")
DEFAULT_SERVE = ("sglang", "serve")
TORCH_LOGS = "graph_breaks,recompiles"

# Generation parameters come first, in the order maintainers write them; any other parameter
# follows in the case's order. A fixed order keeps the command (and the case's identity) stable
# even if the case went through a JSON store that reorders keys.
_PARAM_ORDER = (
    "prompt",
    "negative-prompt",
    "image-path",
    "width",
    "height",
    "num-frames",
    "fps",
    "num-inference-steps",
    "guidance-scale",
    "true-cfg-scale",
    "seed",
)
# Shown in the reproduction line when set; the rest of the inherited environment is noise.
SHOWN_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "SGLANG_GIT_COMMIT",
    "TORCH_LOGS",
    "SGLANG_DIFFUSION_SYNC_STAGE_PROFILING",
)
# sglang times each stage and denoising step with the host's clock and, unless this is "1", without a
# device sync (runtime/utils/perf_logger.py, 0.5.23): a step's time is then when the host finished
# queueing it. The runner asks for synchronised times and records which it asked for.
SYNC_STEPS_VARIABLE = "SGLANG_DIFFUSION_SYNC_STAGE_PROFILING"


def render_value(value: Any) -> list[str]:
    """The argv words for one flag value (after the flag itself), without knowing the build."""
    if isinstance(value, bool):
        return []
    if isinstance(value, list | tuple):
        return [word for item in value for word in render_value(item)]
    return [str(value)]


def render_options(options: Iterable[tuple[str, Any]]) -> list[str]:
    """``--name value`` words for (name, value) pairs as written, checked against no build.

    Only for showing a case's options; a command line that runs goes through
    :func:`runners.workloads.cli.intents.render_for_build`.
    """
    words: list[str] = []
    for name, value in options:
        if value is False or value is None:
            continue
        words.append(f"--{name}")
        if value is not True:
            words.extend(render_value(value))
    return words


def ordered_params(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The case's generation parameters in command-line order."""
    known = [(name, params[name]) for name in _PARAM_ORDER if name in params]
    rest = [(name, value) for name, value in params.items() if name not in _PARAM_ORDER]
    return known + rest


def generate_options(
    case: CaseSpec, perf_dump_path: Path, extra: Sequence[tuple[str, Any]] = ()
) -> list[tuple[str, Any]]:
    """``--model-path M <params> <flags in suite order> --perf-dump-path P <extra>`` as (name, value)."""
    return [
        ("model-path", case.model),
        *ordered_params(case.params),
        *case.flags.items(),
        ("perf-dump-path", str(perf_dump_path)),
        *extra,
    ]


def serve_options(case: CaseSpec, port: int) -> list[tuple[str, Any]]:
    """``--model-path M <flags in suite order> --port P``; parameters go into the requests."""
    return [("model-path", case.model), *case.flags.items(), ("port", port)]


def build_generate_command(
    case: CaseSpec,
    perf_dump_path: Path,
    executable: Sequence[str],
    build: CliOptions,
    extra: Sequence[tuple[str, Any]] = (),
) -> list[str]:
    """The ``sglang generate`` argv for ``case``, spelled as ``build`` accepts it.

    Raises :class:`~runners.workloads.cli.intents.UnsupportedOption` for an option ``build`` lacks.
    """
    return [*executable, *render_for_build(generate_options(case, perf_dump_path, extra), build)]


def build_serve_command(case: CaseSpec, port: int, executable: Sequence[str], build: CliOptions) -> list[str]:
    """The ``sglang serve`` argv for ``case``, spelled as ``build`` accepts it (see above)."""
    return [*executable, *render_for_build(serve_options(case, port), build)]


def benchmark_env(
    base: Mapping[str, str],
    *,
    candidate_sha: str,
    gpu_ids: Sequence[int],
    extra: Mapping[str, str] | None = None,
    pythonpath: Path | None = None,
    sync_steps: bool | None = None,
) -> dict[str, str]:
    """The child's environment: ``base`` plus what every benchmark run sets.

    ``sync_steps``: ``True`` asks sglang for device-synchronised stage and step times, ``False``
    for host times; ``None`` leaves the variable as ``base`` has it (a workload that times its steps
    by other means, the toy).
    """
    env = dict(base)
    env.update(extra or {})
    if sync_steps is not None:
        env[SYNC_STEPS_VARIABLE] = "1" if sync_steps else "0"
    env["SGLANG_GIT_COMMIT"] = candidate_sha  # perf dumps record the commit they measured
    if gpu_ids:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(gpu) for gpu in gpu_ids)
    else:
        env.pop("CUDA_VISIBLE_DEVICES", None)
    env["TORCH_LOGS"] = TORCH_LOGS  # graph breaks and recompiles, counted from the output
    env["PYTHONUNBUFFERED"] = "1"  # lines arrive as printed, so a timeout keeps the last ones
    if pythonpath is not None:
        inherited = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{pythonpath}:{inherited}" if inherited else str(pythonpath)
    return env


def render_command(argv: Sequence[str], env: Mapping[str, str], shown: Iterable[str] = SHOWN_ENV) -> str:
    """The shell line that reproduces a run: the variables named in ``shown`` that are set, then argv."""
    names = list(dict.fromkeys(shown))
    assignments = [f"{name}={shlex.quote(env[name])}" for name in names if name in env]
    return " ".join([*assignments, shlex.join(argv)])
