"""Merge what a log, a perf dump and ``performance.log`` say about one run into one :class:`ParsedRun`.

Precedence, field by field (DESIGN: per-step times come from ``--perf-dump-path`` JSON when
present, else from the log):

* per-step times, stage times, e2e and peak memory: perf dump, then the last
  ``performance.log`` record, then the log. The dumps time each stage and step themselves
  with ``perf_counter`` and keep full precision; the log rounds to 4 (stages) or 2 (e2e,
  memory) decimals.
* with per-step times known the value of record is their median, else the log's average.
* a failed log stays failed: a dump cannot vouch for a run whose log shows it broke.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from runners.parsing.model import ParsedRun, ParseError, PerfDump, RunStatus, StageTiming
from runners.parsing.sglang_log import PER_STEP_UNKNOWN

_TOLERANCE = 0.05
_T = TypeVar("_T")


_LABELS = {"perf_dump": "perf dump", "performance_log": "performance.log"}


def combine(
    log: ParsedRun | None,
    dump: PerfDump | None,
    performance_log: Sequence[PerfDump] | None = None,
) -> ParsedRun:
    """Merge a parsed log with a perf dump and/or ``performance.log`` records."""
    if log is None and dump is None and not performance_log:
        raise ParseError("nothing to combine: no log, perf dump or performance.log")
    record = performance_log[-1] if performance_log else None
    named = [(name, d) for name, d in (("perf_dump", dump), ("performance_log", record)) if d is not None]
    if log is not None and log.status is RunStatus.FAILED:
        if not named:
            return log
        ignored = " and ".join(_LABELS[name] for name, _ in named)
        return replace(log, warnings=(*log.warnings, f"{ignored} ignored: the log shows a failed run"))
    warnings: list[str] = list(log.warnings) if log is not None else []
    if performance_log and len(performance_log) > 1:
        warnings.append(
            f"performance.log holds {len(performance_log)} request records; using the last "
            f"(request_id {record.request_id if record else None})"
        )
    return _Merge(log, named, warnings).result()


class _Merge:
    """Field-by-field merge; remembers which sources contributed."""

    def __init__(self, log: ParsedRun | None, named: list[tuple[str, PerfDump]], warnings: list[str]) -> None:
        self.log = log
        self.named = named  # in order of precedence
        self.warnings = warnings
        self.used: list[str] = []
        for _, dump in named:
            warnings.extend(dump.warnings)

    def _pick(self, get: Callable[[PerfDump], _T], from_log: _T) -> tuple[_T, str | None]:
        """The first dump's value that is present (not ``None``, not empty), else the log's; and its source."""
        for name, dump in self.named:
            value = get(dump)
            if value is not None and value != ():
                if name not in self.used:
                    self.used.append(name)
                return value, name
        return from_log, None

    def result(self) -> ParsedRun:
        """The merged run."""
        log = self.log
        steps, steps_from = self._pick(lambda d: d.denoise_steps_ms, log.step_times_ms if log else ())
        stages, stages_from = self._pick(lambda d: d.stages, log.stages if log else ())
        e2e, _ = self._pick(lambda d: d.total_duration_ms, log.e2e_ms if log else None)
        peak, _ = self._pick(lambda d: d.peak_memory_mb, log.peak_memory_mb if log else None)
        stage_ms = _denoise_stage_ms(stages) if stages_from else (log.denoise_stage_ms if log else None)
        if steps:
            self.warnings = [w for w in self.warnings if w != PER_STEP_UNKNOWN]
            self._compare(steps, stage_ms, e2e, _LABELS.get(steps_from or "", "log"))
            count: int | None = len(steps)
            mean: float | None = statistics.fmean(steps)
            median: float | None = statistics.median(steps)
            value: float | None = median
            basis: str | None = "median"
        elif log is not None:
            count, mean, median = log.denoise_step_count, log.denoise_step_mean_ms, log.denoise_step_median_ms
            value, basis = log.denoise_step_ms, log.denoise_step_basis
        else:
            reason = "no denoising stage found in perf dump"
            if stage_ms is not None:
                reason = "perf dump has no per-step times (denoise_steps_ms) and there is no log"
            return ParsedRun(status=RunStatus.FAILED, failure_reason=reason, warnings=tuple(self.warnings))
        return ParsedRun(
            status=RunStatus.OK,
            denoise_step_count=count,
            step_times_ms=steps,
            denoise_step_ms=value,
            denoise_step_basis=basis,
            denoise_step_mean_ms=mean,
            denoise_step_median_ms=median,
            denoise_stage_ms=stage_ms,
            stages=stages,
            e2e_ms=e2e,
            peak_memory_mb=peak,
            requests_seen=log.requests_seen if log else 1,
            warmup_requests=log.warmup_requests if log else 0,
            warnings=tuple(self.warnings),
            sources=("log", *self.used) if log is not None else tuple(self.used),
            requests=log.requests if log is not None else (),
        )

    def _compare(
        self, steps: tuple[float, ...], stage_ms: float | None, e2e: float | None, label: str
    ) -> None:
        """Warn where the sources disagree noticeably."""
        log = self.log
        if stage_ms is not None and sum(steps) > stage_ms * (1 + _TOLERANCE):
            self.warnings.append(
                f"per-step times sum to {sum(steps):.1f} ms, more than the denoising stage's {stage_ms:.1f} ms"
            )
        if log is None:
            return
        if log.denoise_step_count is not None and log.denoise_step_count != len(steps):
            self.warnings.append(
                f"step count differs: log says {log.denoise_step_count}, {label} has {len(steps)} step times"
            )
        pairs = (
            ("mean step time", log.denoise_step_mean_ms, statistics.fmean(steps)),
            ("denoising stage time", log.denoise_stage_ms, stage_ms),
            ("e2e time", log.e2e_ms, e2e),
        )
        for what, from_log, from_dump in pairs:
            if from_log and from_dump is not None and abs(from_dump - from_log) > _TOLERANCE * from_log:
                self.warnings.append(
                    f"{what} differs by more than 5%: log {from_log:.1f} ms, {label} {from_dump:.1f} ms"
                )


def _denoise_stage_ms(stages: Sequence[StageTiming]) -> float | None:
    return PerfDump(stages=tuple(stages)).denoise_stage_ms
