"""Parse sglang's ``--perf-dump-path`` JSON into a :class:`PerfDump`.

Shapes handled (all written by sglang's ``PerformanceLogger``, ``runtime/utils/perf_logger.py``):

* older dump: ``total_duration_ms``, ``steps: [{name, duration_ms}]`` (pipeline *stages*),
  ``meta``, ``commit_hash``, ``tag``, ``timestamp``, ``request_id``;
* newer dump (0.5.10 to 0.5.23, ``dump_benchmark_report``): adds ``denoise_steps_ms: [{step,
  duration_ms}]`` (a plain list of numbers is accepted too) and ``memory_checkpoints: {name:
  {allocated_mb, reserved_mb, peak_allocated_mb, peak_reserved_mb}}``; 0.5.23 adds
  ``peak_host_anon_mb`` to each checkpoint and the replica-wide checkpoints below;
* a request record (the shape ``performance.log`` lines use): ``stages: [{name,
  execution_time_ms}]`` or ``{name: ms}``, ``steps: [ms, ...]`` (per-step times),
  ``memory_snapshots`` in place of ``memory_checkpoints``.

Peak memory: the highest ``peak_reserved_mb`` over the checkpoints that belong to the request
(``before_forward``, ``after_forward``, ``mem_analysis``: peaks since the worker reset its
counters as the request began), which is what sglang logs for a request as "Peak GPU memory" /
"Peak memory usage" and as the run's "Memory usage - Max peak". 0.5.23 also writes, per dump,
replica-wide peaks (``runtime/managers/gpu_worker.py``, ``_record_replica_peak_memory``):
``load_peak`` (model loading), ``warmup_peak`` (every warmup so far, which sglang says may exceed
any real request) and ``runtime_peak`` (every real request so far). They stay in
``memory_checkpoints`` but would put loading or the warmup into the figure of record, so only
``runtime_peak`` is used, and only when the request's own checkpoints give no peak.

Wrong values are a :class:`ParseError` naming the field path; sglang never writes them, so a
dump that has them was damaged or hand-edited and none of its numbers can be trusted.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType

from runners.parsing import _json
from runners.parsing.model import MemoryCheckpoint, ParseError, PerfDump, StageTiming

_DENOISE_STEP_NAME = re.compile(r"denoising_step_(?P<i>\d+)$")
_CHECKPOINT_FIELDS = ("allocated_mb", "reserved_mb", "peak_allocated_mb", "peak_reserved_mb")
_HOST_FIELD = "peak_host_anon_mb"
_RUNTIME_PEAK = "runtime_peak"
# Replica-wide checkpoints (0.5.23): not this request's own peak.
_REPLICA_WIDE = frozenset({"load_peak", "warmup_peak", _RUNTIME_PEAK})


def parse_perf_dump(text: str) -> PerfDump:
    """Parse a ``--perf-dump-path`` JSON document."""
    data = _json.as_object(_json.load_json(text, "perf dump"), "perf dump")
    return record_from_object(data, at="", what="perf dump")


def parse_perf_dump_file(path: str | Path) -> PerfDump:
    """Read and parse a perf dump file."""
    return parse_perf_dump(Path(path).read_text(encoding="utf-8", errors="replace"))


def record_from_object(data: dict[str, object], at: str, what: str) -> PerfDump:
    """Build a :class:`PerfDump` from one decoded dump or record; ``at`` prefixes error paths."""
    warnings: list[str] = []
    stages, steps_from_steps = _stages_and_steps(data, at)
    denoise = _denoise_steps(data["denoise_steps_ms"], at) if "denoise_steps_ms" in data else steps_from_steps
    total = _json.optional_duration(data.get("total_duration_ms"), f"{at}total_duration_ms")
    if total is None and not stages and not denoise:
        raise ParseError(f"{at}{what} has no timing fields (total_duration_ms, steps, denoise_steps_ms)")
    checkpoints = _checkpoints(data, at)
    meta = _json.as_object(data["meta"], f"{at}meta") if data.get("meta") is not None else {}
    return PerfDump(
        total_duration_ms=total,
        stages=stages,
        denoise_steps_ms=denoise,
        memory_checkpoints=checkpoints,
        peak_memory_mb=_peak(checkpoints, warnings),
        request_id=_json.optional_text(data.get("request_id"), f"{at}request_id"),
        commit_hash=_json.optional_text(data.get("commit_hash"), f"{at}commit_hash"),
        tag=_json.optional_text(data.get("tag"), f"{at}tag"),
        timestamp=_json.optional_text(data.get("timestamp"), f"{at}timestamp"),
        meta=MappingProxyType(meta),
        warnings=tuple(warnings),
    )


def _stages_and_steps(data: dict[str, object], at: str) -> tuple[tuple[StageTiming, ...], tuple[float, ...]]:
    """Read ``steps`` (stages, or per-step times in the record shape) and ``stages``."""
    stages: list[StageTiming] = []
    numbered: list[tuple[int, float]] = []
    plain: list[float] = []
    if data.get("steps") is not None:
        for i, item in enumerate(_json.as_list(data["steps"], f"{at}steps")):
            path = f"{at}steps[{i}]"
            if not isinstance(item, dict):
                if stages or numbered:
                    raise ParseError(f"{path}: must be an object like the other entries (got {item!r})")
                plain.append(_json.duration(item, path))
                continue
            if plain:
                raise ParseError(f"{path}: must be a number like the other entries")
            stage = _stage(_json.as_object(item, path), path)
            # The legacy logger timed each denoising step as a block named "denoising_step_<i>".
            if step := _DENOISE_STEP_NAME.match(stage.name):
                numbered.append((int(step["i"]), stage.duration_ms))
            else:
                stages.append(stage)
    if data.get("stages") is not None:
        stages = list(_stage_list(data["stages"], f"{at}stages"))
    steps = tuple(plain) if plain else _in_step_order(numbered, f"{at}steps")
    return tuple(stages), steps


def _stage_list(value: object, path: str) -> tuple[StageTiming, ...]:
    """Read ``stages`` as a list of ``{name, execution_time_ms}`` or a ``{name: ms}`` map."""
    if isinstance(value, dict):
        return tuple(StageTiming(str(k), _json.duration(v, f"{path}.{k}")) for k, v in value.items())
    items = _json.as_list(value, path)
    return tuple(
        _stage(_json.as_object(item, f"{path}[{i}]"), f"{path}[{i}]") for i, item in enumerate(items)
    )


def _stage(entry: dict[str, object], path: str) -> StageTiming:
    stage_name = _json.name(entry.get("name", entry.get("stage")), f"{path}.name")
    for key in ("duration_ms", "execution_time_ms"):
        if key in entry:
            return StageTiming(stage_name, _json.duration(entry[key], f"{path}.{key}"))
    raise ParseError(f"{path}: has no duration_ms")


def _denoise_steps(value: object, at: str) -> tuple[float, ...]:
    """Read ``denoise_steps_ms``: numbers, or ``{step, duration_ms}`` objects in any order."""
    path = f"{at}denoise_steps_ms"
    items = _json.as_list(value, path)
    if all(not isinstance(item, dict) for item in items):
        return tuple(_json.duration(item, f"{path}[{i}]") for i, item in enumerate(items))
    numbered = []
    for i, item in enumerate(items):
        entry = _json.as_object(item, f"{path}[{i}]")
        if "duration_ms" not in entry:
            raise ParseError(f"{path}[{i}]: has no duration_ms")
        step = _json.index(entry.get("step", i), f"{path}[{i}].step")
        numbered.append((step, _json.duration(entry["duration_ms"], f"{path}[{i}].duration_ms")))
    return _in_step_order(numbered, path)


def _in_step_order(numbered: list[tuple[int, float]], path: str) -> tuple[float, ...]:
    """Order per-step times by step index, which must run 0..N-1 exactly once each."""
    numbered.sort(key=lambda pair: pair[0])
    indices = [step for step, _ in numbered]
    if indices != list(range(len(indices))):
        shown = ", ".join(map(str, indices[:12])) + (", ..." if len(indices) > 12 else "")
        raise ParseError(f"{path}: step indices must run 0..{len(indices) - 1} once each (got {shown})")
    return tuple(ms for _, ms in numbered)


def _checkpoints(data: dict[str, object], at: str) -> tuple[MemoryCheckpoint, ...]:
    """Read ``memory_checkpoints`` (dump) or ``memory_snapshots`` (record): ``{name: {...}}``."""
    key = "memory_checkpoints" if "memory_checkpoints" in data else "memory_snapshots"
    value = data.get(key)
    if value is None:
        return ()
    path = f"{at}{key}"
    if isinstance(value, list):
        entries = [_json.as_object(item, f"{path}[{i}]") for i, item in enumerate(value)]
        named = [
            (_json.name(e.get("name"), f"{path}[{i}].name"), e, f"{path}[{i}]") for i, e in enumerate(entries)
        ]
    else:
        mapping = _json.as_object(value, path)
        named = [(k, _json.as_object(v, f"{path}.{k}"), f"{path}.{k}") for k, v in mapping.items()]
    result = []
    for checkpoint_name, entry, entry_path in named:
        sizes = {f: _json.optional_duration(entry.get(f), f"{entry_path}.{f}") for f in _CHECKPOINT_FIELDS}
        host = _json.optional_duration(entry.get(_HOST_FIELD), f"{entry_path}.{_HOST_FIELD}")
        # sglang writes 0.0 where no sampler ran; `sglang generate` rebuilds its checkpoints
        # without the field (entrypoints/cli/generate.py), so its dumps always say 0.0.
        result.append(MemoryCheckpoint(checkpoint_name, **sizes, peak_host_anon_mb=host or None))
    return tuple(result)


def _peak(checkpoints: tuple[MemoryCheckpoint, ...], warnings: list[str]) -> float | None:
    """The request's peak reserved memory (module docstring), else its allocated peak."""
    own = [c for c in checkpoints if c.name not in _REPLICA_WIDE]
    reserved = [c.peak_reserved_mb for c in own if c.peak_reserved_mb is not None]
    if reserved:
        return max(reserved)
    runtime = next((c for c in checkpoints if c.name == _RUNTIME_PEAK), None)
    if runtime is not None and runtime.peak_reserved_mb is not None:
        warnings.append(
            "memory checkpoints hold no peak of the request itself; peak memory is runtime_peak "
            "(the highest over every real request this server ran)"
        )
        return runtime.peak_reserved_mb
    allocated = [c.peak_allocated_mb for c in own if c.peak_allocated_mb is not None]
    if allocated:
        warnings.append("memory checkpoints have no peak_reserved_mb; peak memory is peak_allocated_mb")
        return max(allocated)
    if checkpoints:
        names = ", ".join(c.name for c in checkpoints)
        warnings.append(f"memory checkpoints ({names}) hold no peak of the request; peak memory unknown")
    return None
