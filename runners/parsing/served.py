"""Summarise a served run: the server's log plus the client's timed requests, as one :class:`ParsedRun`.

Maintainers report a served case as "median of N requests after warmup". The server log holds
every request the server ran: its own startup warmup(s) (marked by sglang's warmup lines), the
client's unmeasured warmup request(s), then the N timed ones. Requests run one after another,
so the timed requests are the last N in the log; that holds whatever warmups came before.

Value of record: the median over the timed requests of each request's average denoising step
time (basis "median"). The log has no per-step times, so ``step_times_ms`` stays empty;
``e2e_ms`` is the median client-side latency (HTTP round trip included; for a video, from its
POST until its content is downloaded). Peak memory is the highest of the timed requests' own
figures: "Peak memory usage: X MB" (MiB, every version that serves) or the older "Peak GPU
memory: X GB" (GiB); both are the peak reserved memory since that request began.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from runners.parsing._logtext import seconds_to_ms
from runners.parsing._requests import Request, scan
from runners.parsing.model import ParsedRun, ParseError, RunStatus
from runners.parsing.sglang_log import _request_failure  # one wording for generate and serve

PER_STEP_UNKNOWN_SERVED = (
    "per-step times unknown in serve mode; value of record is the median over the timed requests "
    "of each request's average step time"
)


def summarize_served(
    log_text: str, request_latencies_ms: Sequence[float], *, requested: int | None = None
) -> ParsedRun:
    """Summarise the timed requests of a served log; ``requested``: how many were asked for."""
    if not log_text.strip():
        raise ParseError("server log is empty")
    log = scan(log_text)
    counted = [request for request in log.requests if request.counted]
    warnings = list(log.warnings)
    timed = len(request_latencies_ms)
    if requested is not None and timed < requested:
        warnings.append(f"only {timed} of {requested} requests succeeded")
    if timed == 0:
        return _failed("no request was timed", counted, warnings)
    served = [request for request in counted if not request.warmup]
    if len(served) < timed:
        warnings.append(f"server log shows {len(served)} requests for {timed} timed ones")
    measured = served[-timed:]
    complete = [request for request in measured if _complete(request)]
    for number, request in enumerate(measured, start=1):
        if not _complete(request):
            warnings.append(
                f"timed request {number} of {len(measured)} did not complete: {_request_failure(request)}"
            )
    per_request = [ms for ms in (_average_step_ms(request) for request in complete) if ms is not None]
    if not per_request:
        reason = "no timed request reported a denoising step time"
        if measured and not complete:
            reason = f"no timed request completed: {_request_failure(measured[-1])}"
        return _failed(reason, counted, warnings)
    if len(per_request) < timed:
        warnings.append(f"step time of {len(per_request)} of {timed} timed requests known; median over those")
    last = complete[-1]
    stage_times = [seconds_to_ms(r.denoise_s) for r in complete if r.denoise_s is not None]
    peaks = [r.peak_mb for r in measured if r.peak_mb is not None]
    warnings.append(PER_STEP_UNKNOWN_SERVED)
    median = statistics.median(per_request)
    return ParsedRun(
        status=RunStatus.OK,
        denoise_step_count=_step_count(last),
        denoise_step_ms=median,
        denoise_step_basis="median",
        denoise_step_mean_ms=round(statistics.fmean(per_request), 6),
        denoise_step_median_ms=median,
        denoise_stage_ms=statistics.median(stage_times) if stage_times else None,
        stages=tuple(last.stages),
        e2e_ms=statistics.median(request_latencies_ms),
        peak_memory_mb=max(peaks) if peaks else log.max_peak_mb,
        requests_seen=len(counted),
        warmup_requests=len(counted) - len(measured),
        warnings=tuple(warnings),
        sources=("log",),
    )


def _complete(request: Request) -> bool:
    return request.denoise_done and not request.failures


def _average_step_ms(request: Request) -> float | None:
    """The request's average step time: as logged, else its denoising stage time / step count."""
    if request.average_s is not None:
        return seconds_to_ms(request.average_s)
    steps = _step_count(request)
    if request.denoise_s is not None and steps:
        return round(seconds_to_ms(request.denoise_s) / steps, 6)
    return None


def _step_count(request: Request) -> int | None:
    if request.progress is not None:
        return request.progress.total
    return request.infer_steps


def _failed(reason: str, counted: list[Request], warnings: list[str]) -> ParsedRun:
    return ParsedRun(
        status=RunStatus.FAILED,
        failure_reason=reason,
        requests_seen=len(counted),
        warmup_requests=sum(request.warmup for request in counted),
        warnings=tuple(warnings),
        sources=("log",),
    )
