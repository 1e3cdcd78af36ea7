"""Parse the console log of an ``sglang generate`` run into a :class:`ParsedRun`.

Decisions (each explained where it is made):

* Warmup: requests marked by sglang's warmup lines (or its "Warmup requests" bar) are warmups;
  without markers but with warmup on (``--warmup``, ``--warmup-mode request|server``), the first
  of several requests is. A warmup is never the measurement.
* Measurement: the last complete non-warmup request (complete = its denoising stage reported
  and nothing failed in it). Several of them give a warning naming the count.
* Peak memory: that request's own "Peak GPU memory" (GiB) or "Peak memory usage" (MiB) line;
  the run-level "Memory usage - Max peak" (which already excludes warmups) only when the
  request printed none.
* e2e: "Warmed-up request processed in" when it describes the measured request, else its
  "Pixel data generated successfully in", except when that figure also counts the warmup.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from runners.parsing._logtext import looks_binary, seconds_to_ms
from runners.parsing._requests import Failure, Request, ScannedLog, scan
from runners.parsing.model import ParsedRun, ParseError, RequestSummary, RunStatus

PER_STEP_UNKNOWN = "per-step times unknown (no perf dump); value of record is the log's average step time"
NO_DENOISE = "no denoising stage found in log"
_MISMATCH_TOLERANCE = 0.05


def parse_sglang_log(text: str) -> ParsedRun:
    """Parse an ``sglang generate`` log; a failed run comes back with ``status=FAILED``."""
    if not text.strip():
        raise ParseError("log is empty")
    log = scan(text)
    warnings = list(log.warnings)
    counted = [request for request in log.requests if request.counted]
    _infer_warmup(log, counted, warnings)
    measured = [request for request in counted if not request.warmup]
    complete = [request for request in measured if _is_complete(request)]
    if not complete:
        reason = _failure_reason(text, log, counted, measured)
        result = ParsedRun(status=RunStatus.FAILED, failure_reason=reason, warnings=tuple(warnings))
    else:
        result = _measured(log, counted, measured, complete, warnings)
    chosen = complete[-1] if complete and result.status is RunStatus.OK else None
    return replace(
        result,
        requests_seen=len(counted),
        warmup_requests=sum(r.warmup for r in counted),
        sources=("log",),
        requests=tuple(_summary(position, request, chosen) for position, request in enumerate(counted, 1)),
    )


def parse_sglang_log_file(path: str | Path) -> ParsedRun:
    """Read a log file (undecodable bytes replaced) and parse it."""
    return parse_sglang_log(Path(path).read_text(encoding="utf-8", errors="replace"))


def _measured(
    log: ScannedLog,
    counted: list[Request],
    measured: list[Request],
    complete: list[Request],
    warnings: list[str],
) -> ParsedRun:
    """Result for a log with at least one complete measured request: report the last one."""
    chosen = complete[-1]
    if len(complete) > 1:
        warnings.append(f"{len(complete)} measured requests in log; reporting the last")
    for request in measured:
        if request is not chosen and not _is_complete(request):
            warnings.append(
                f"request {_ordinal(request, counted)} did not complete: {_request_failure(request)}"
            )
    for request in counted:
        if request.warmup and request.failures:
            warnings.append(f"warmup request failed: {_request_failure(request)}")
    reported = [r for r in counted if r is not chosen and (r.failures or not r.denoise_done)]
    if log.fatal:
        warnings.append(f"log reports a fatal error, but a measured request completed: {log.fatal[0]}")
    stray = [exc for exc in log.exceptions if not any(exc in r.exceptions for r in reported)]
    if stray:
        warnings.append(
            f"log contains a Python exception (ignored: a measured request completed): {stray[-1]}"
        )
    return _measurement(log, chosen, measured, warnings)


def _summary(position: int, request: Request, chosen: Request | None) -> RequestSummary:
    """How ``parse-log`` lists one request: what it measured, and whether it is the one stored."""
    if request.failures or (request.exceptions and not request.denoise_done):
        outcome, note = "failed", _request_failure(request)
    elif request.denoise_done:
        outcome, note = "complete", ""
    elif request.warmup and request.closed and not request.has_content:
        # Since 0.5.14 a warmup prints no stage lines; its bar or marker said it finished.
        outcome, note = "complete", "sglang prints no stage lines for it"
    else:
        outcome, note = "incomplete", _cut_off(request) if request.denoise_stage else "no denoising stage ran"
    if request is chosen:
        note = "stored: the last complete measured request"
    elif request.warmup:
        note = "warmup: never stored" + (f" ({note})" if note else "")
    elif outcome == "complete":
        note = "not stored: a later complete request is the one stored"
    return RequestSummary(
        position=position,
        warmup=request.warmup,
        outcome=outcome,
        denoise_step_count=_steps_of(request),
        denoise_step_mean_ms=seconds_to_ms(request.average_s) if request.average_s is not None else None,
        denoise_stage_ms=seconds_to_ms(request.denoise_s) if request.denoise_s is not None else None,
        stored=request is chosen,
        note=note,
    )


def _infer_warmup(log: ScannedLog, counted: list[Request], warnings: list[str]) -> None:
    """Mark the warmup when sglang printed no warmup marker but warmup was switched on.

    Only on evidence: a warmed-up ``sglang generate`` runs one warmup copy of the first request,
    one denoising step by default, first. A first request that ran as many steps as the others
    is kept.
    """
    if log.explicit_warmup or not log.warmup_flag or not counted:
        return
    if len(counted) == 1:
        warnings.append(
            "warmup is on but the log shows a single request; taking it as the measured one "
            "(sglang may suppress the warmup's stage lines, or the log was cut)"
        )
        return
    first, rest = _steps_of(counted[0]), [_steps_of(request) for request in counted[1:]]
    if first == 1 and any(steps is not None and steps > 1 for steps in rest):
        counted[0].warmup = True
        warnings.append(
            f"no warmup marker in log; treating the first of {len(counted)} requests as the warmup "
            "(warmup is on, and it ran 1 denoising step where the others ran more)"
        )
        return
    shown = "an unknown number of" if first is None else str(first)
    warnings.append(
        f"warmup is on but no request looks like a warmup (no warmup marker; the first ran {shown} "
        f"denoising steps); all {len(counted)} requests are taken as measured"
    )


def _steps_of(request: Request) -> int | None:
    """A request's denoising step count: its bar's total, else its sampling params."""
    if request.progress is not None:
        return request.progress.total
    return request.infer_steps


def _is_complete(request: Request) -> bool:
    return request.denoise_done and not request.failures


def _measurement(log: ScannedLog, chosen: Request, measured: list[Request], warnings: list[str]) -> ParsedRun:
    """Build the OK result from the chosen request."""
    steps = _step_count(chosen, warnings)
    mean_ms = seconds_to_ms(chosen.average_s) if chosen.average_s is not None else None
    stage_ms = seconds_to_ms(chosen.denoise_s) if chosen.denoise_s is not None else None
    if stage_ms is None:
        warnings.append(f"{chosen.denoise_stage or 'DenoisingStage'} printed no 'finished in' time")
    if mean_ms is None and stage_ms is not None and steps:
        mean_ms = round(stage_ms / steps, 6)
        warnings.append("log has no 'average time per step'; derived it as denoising stage time / step count")
    elif mean_ms is not None and stage_ms is not None and steps:
        total = mean_ms * steps
        if abs(total - stage_ms) > _MISMATCH_TOLERANCE * stage_ms:
            warnings.append(
                f"average step time x {steps} steps = {total:.1f} ms differs from the denoising stage "
                f"time {stage_ms:.1f} ms by more than 5%"
            )
    if mean_ms is None:
        return ParsedRun(
            status=RunStatus.FAILED,
            failure_reason=(
                "denoising step time unknown: no valid 'average time per step', "
                "and no valid stage time with a step count"
            ),
            warnings=tuple(warnings),
        )
    warnings.append(PER_STEP_UNKNOWN)
    return ParsedRun(
        status=RunStatus.OK,
        denoise_step_count=steps,
        denoise_step_ms=mean_ms,
        denoise_step_basis="mean",
        denoise_step_mean_ms=mean_ms,
        denoise_stage_ms=stage_ms,
        stages=tuple(chosen.stages),
        e2e_ms=_e2e_ms(log, chosen, measured, warnings),
        peak_memory_mb=_peak_mb(log, chosen, measured, warnings),
        warnings=tuple(warnings),
        sources=("log",),
    )


def _step_count(request: Request, warnings: list[str]) -> int | None:
    """The denoising step count: tqdm's total, else the request's sampling params."""
    progress = request.progress
    if progress is not None:
        if len(request.progress_totals) > 1:
            warnings.append(
                f"denoising progress bars with different totals {sorted(request.progress_totals)}"
            )
        if progress.n < progress.total:
            warnings.append(f"last denoising progress shown is {progress.n}/{progress.total}")
        return progress.total
    if request.infer_steps is not None:
        return request.infer_steps
    warnings.append("denoising step count unknown (no tqdm progress bar in log)")
    return None


def _e2e_ms(log: ScannedLog, chosen: Request, measured: list[Request], warnings: list[str]) -> float | None:
    """End-to-end time of the measured request, never one that includes the warmup."""
    first = chosen is measured[0]
    if first and log.warmed_up_s is not None:
        # sglang logs this for the first real request, from its own timer, warmup excluded.
        return seconds_to_ms(log.warmed_up_s)
    warmed = log.warmup_flag or log.explicit_warmup
    if chosen.pixel_s is not None:
        if first and warmed:
            # The client-side timer of the first request also runs while the scheduler does the
            # warmup it inserted in front, so this figure is warmup + request.
            warnings.append(
                f"e2e unknown: 'Pixel data generated successfully in {chosen.pixel_s:.2f} seconds' includes the "
                "warmup request and the log has no 'Warmed-up request processed' line"
            )
            return None
        return seconds_to_ms(chosen.pixel_s)
    if len(measured) == 1 and not warmed and log.batch_outputs == 1 and log.batch_s is not None:
        return seconds_to_ms(log.batch_s)
    warnings.append("no end-to-end time for the measured request in log")
    return None


def _peak_mb(log: ScannedLog, chosen: Request, measured: list[Request], warnings: list[str]) -> float | None:
    """Peak GPU memory (reserved) of the measured request, in MiB."""
    if chosen.peak_mb is not None:
        return chosen.peak_mb
    if log.max_peak_mb is not None:
        # sglang computes "Max peak" over the real requests only, so it never includes a warmup.
        if len(measured) > 1:
            warnings.append("peak memory is the run-level 'Max peak' over all measured requests")
        return log.max_peak_mb
    return None


def _failure_reason(text: str, log: ScannedLog, counted: list[Request], measured: list[Request]) -> str:
    """One sentence saying why no measured request completed."""
    for request in measured:
        if request.failures or (request.exceptions and not request.denoise_done):
            return _request_failure(request)
    if log.fatal:
        return log.fatal[0] + _stopped_in(measured)
    for request in measured:
        if request.denoise_stage is not None and not request.denoise_done:
            return _cut_off(request)
    for request in measured:
        if request.open_stage is not None:
            return f"log ends in {request.open_stage}, before any denoising stage ran"
    if log.exceptions:
        return f"Python exception and no measured request completed: {log.exceptions[-1]}"
    warmups = [request for request in counted if request.warmup]
    failed = [request for request in warmups if request.failures]
    if failed:
        return f"warmup request failed and no measured request ran: {_request_failure(failed[-1])}"
    if any(request.denoise_done for request in warmups):
        return "only the warmup request ran its denoising stage; no measured request in log"
    if warmups:
        count = f"{len(warmups)} warmup request{'s' if len(warmups) > 1 else ''}"
        return f"only warmup requests ran ({count}); no measured request in log"
    if looks_binary(text):
        return f"{NO_DENOISE} (input does not look like a text log)"
    return NO_DENOISE


def _stopped_in(measured: list[Request]) -> str:
    """Where the last measured request stood when the log ends (" (during X at step n/N)"), if open."""
    for request in reversed(measured):
        stage = request.open_stage
        if stage is not None:
            return f" (during {stage}{_at_step(request, stage)})"
    return ""


def _request_failure(request: Request) -> str:
    """Describe what went wrong in one request."""
    failures = request.failures
    oom = next((f for f in failures if f.kind == "oom"), None)
    if oom is not None:
        stage = oom.stage or request.open_stage
        where = f" in {stage}{_at_step(request, stage)}" if stage else ""
        size = f" (tried to allocate {oom.size})" if oom.size else ""
        device = oom.message.split(" out of memory")[0] if " out of memory" in oom.message else "CUDA"
        return f"{device} out of memory{where}{size}"
    stage_error = next((f for f in failures if f.kind == "stage_error"), None)
    if stage_error is not None:
        return _stage_error(request, stage_error)
    if failures:
        detail = request.exceptions[-1] if request.exceptions else failures[0].message
        return f"request failed: {detail}"
    if request.exceptions:
        stage = request.open_stage
        where = f" in {stage}{_at_step(request, stage)}" if stage else ""
        return f"Python exception{where}: {request.exceptions[-1]}"
    return _cut_off(request)


def _stage_error(request: Request, failure: Failure) -> str:
    after = f" after {failure.after_ms / 1000.0:.2f} s" if failure.after_ms is not None else ""
    detail = request.exceptions[-1] if request.exceptions else failure.message
    return f"{failure.stage} failed{after}{_at_step(request, failure.stage)}: {detail}"


def _cut_off(request: Request) -> str:
    name = request.denoise_stage or "DenoisingStage"
    progress = request.progress
    where = f"cut off at step {progress.n}/{progress.total}" if progress else "no step progress in log"
    return f"log ends mid-denoise: {name} started but never finished ({where})"


def _at_step(request: Request, stage: str | None) -> str:
    progress = request.progress
    if progress is None or stage is None or stage != request.denoise_stage:
        return ""
    return f" at step {progress.n}/{progress.total}"


def _ordinal(request: Request, counted: list[Request]) -> str:
    return f"{counted.index(request) + 1} of {len(counted)}"
