"""Splitting an ``sglang generate`` log into the requests it ran.

With warmup on (``--warmup`` up to 0.5.17, ``--warmup-mode request`` from 0.5.14) sglang first
runs a warmup copy of the request (one denoising step by default, often with torch.compile
doing its work), then the real request(s). The scheduler marks warmups with "Processing warmup
req..." before and "Warmup req processed in X seconds" (or "... processing failed") after;
since 0.5.14 it draws a "Warmup requests: k/N" bar instead and the warmup prints nothing else.
A request's own lines ("Processing prompt i/N", "Sampling params:", "Running pipeline stages:",
then "[Stage] started/finished") follow; "Pixel data generated successfully" closes it, and a
served request's "Peak memory usage" comes after that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runners.parsing import _patterns as p
from runners.parsing._fatal import fatal_reason
from runners.parsing._logtext import (
    Progress,
    gib_to_mib,
    logical_lines,
    parse_progress,
    seconds_to_ms,
    shorten,
    strip_ansi,
    valid_number,
)
from runners.parsing.model import StageTiming, is_denoise_stage


@dataclass
class Failure:
    """Something that went wrong inside one request: a stage error, an OOM, an exception."""

    kind: str  # "oom", "stage_error", "request_error" or "exception"
    message: str
    stage: str | None = None
    after_ms: float | None = None
    size: str | None = None  # for OOMs: what allocation failed ("20.00 GiB")


@dataclass
class Request:
    """Everything the log says about one request, warmup or real."""

    warmup: bool = False
    closed: bool = False
    started: list[str] = field(default_factory=list)
    stages: list[StageTiming] = field(default_factory=list)  # in ms, in the order they finished
    denoise_stage: str | None = None
    denoise_s: float | None = None  # seconds, as printed
    average_s: float | None = None
    denoise_reported: bool = False  # a "finished"/"average" line came, even with an invalid number
    average_reported: bool = False  # an "average time per step" line came
    progress: Progress | None = None
    progress_totals: set[int] = field(default_factory=set)
    infer_steps: int | None = None
    peak_mb: float | None = None  # MiB: "Peak GPU memory" (GiB) or "Peak memory usage" (MiB)
    pixel_s: float | None = None
    failures: list[Failure] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)

    @property
    def has_content(self) -> bool:
        """Whether the request ran any stage or failed in one (lines such as "Processing prompt"
        alone do not count)."""
        return bool(self.started or self.stages or self.denoise_reported or self.failures)

    @property
    def counted(self) -> bool:
        """Whether it counts as a request seen: it ran a stage, or it is a finished warmup."""
        return self.has_content or (self.warmup and self.closed)

    @property
    def denoise_done(self) -> bool:
        """Whether its denoising loop reported a result."""
        return self.denoise_reported

    @property
    def open_stage(self) -> str | None:
        """The last stage that started and has not finished."""
        finished = {stage.name for stage in self.stages}
        unfinished = [name for name in self.started if name not in finished]
        return unfinished[-1] if unfinished else None


@dataclass
class ScannedLog:
    """A log split into requests, plus the run-level summary lines."""

    requests: list[Request]
    warmed_up_s: float | None = None
    batch_outputs: int | None = None
    batch_s: float | None = None
    max_peak_mb: float | None = None
    warmup_flag: bool = False  # warmup switched on: the last word of a command line or server args
    explicit_warmup: bool = False
    exceptions: list[str] = field(default_factory=list)
    fatal: list[str] = field(default_factory=list)  # the run died: scheduler dead, a signal, NCCL
    warnings: list[str] = field(default_factory=list)


class _Scanner:
    """Walks the logical lines once, opening a new request at each request boundary."""

    def __init__(self) -> None:
        self.log = ScannedLog(requests=[Request()])
        self.next_is_warmup = False
        self.in_traceback = False
        # A denoising bar seen before any stage line of its request: a log pasted from mid-way, or
        # the next of back-to-back runs whose "started" lines are missing.
        self.orphan: Progress | None = None

    @property
    def current(self) -> Request:
        return self.log.requests[-1]

    def open_request(self, warmup: bool = False) -> Request:
        """Start a new request unless the current one has not begun yet."""
        warmup = warmup or self.next_is_warmup
        self.next_is_warmup = False
        current = self.current
        if current.has_content or current.closed:
            current = Request()
            self.log.requests.append(current)
        current.warmup = current.warmup or warmup
        return current

    def adopt_orphan(self) -> None:
        """Give the current request the denoising bar seen before its first stage line."""
        if self.orphan is not None and self.current.progress is None:
            self.current.progress = self.orphan
            self.current.progress_totals.add(self.orphan.total)
        self.orphan = None

    def number(self, raw: str, line: str) -> float | None:
        """Validate a number from the log; a NaN, infinite or negative one becomes a warning."""
        value = valid_number(raw)
        if value is None:
            self.log.warnings.append(f"ignored invalid value {raw!r} in log line: {shorten(line, 160)}")
        return value

    def feed(self, line: str) -> None:
        """Interpret one logical line."""
        if self._traceback(line):
            return
        for handler in (self._stage, self._warmup, self._request, self._summary):
            if handler(line):
                return
        self._misc(line)

    def _traceback(self, line: str) -> bool:
        if p.TRACEBACK.match(line):
            self.in_traceback = True
            return True
        if not self.in_traceback:
            return False
        if line[:1].isspace():
            return True  # a frame or source line
        self.in_traceback = False
        match = p.EXCEPTION.match(line)
        if match is None:
            return False
        text = shorten(line)
        self.current.exceptions.append(text)
        self.log.exceptions.append(text)
        self._oom(line)
        return True

    def _stage(self, line: str) -> bool:
        if match := p.STARTED.search(line):
            self._started(match["stage"])
        elif match := p.FINISHED.search(line):
            self._finished(match["stage"], self.number(match["v"], line))
        elif match := p.AVERAGE.search(line):
            if self.current.average_reported:
                self.open_request()  # a second average: the next run, its "started" lines missing
            self.current.denoise_stage = self.current.denoise_stage or match["stage"]
            self.current.average_s = self.number(match["v"], line)
            self.current.denoise_reported = self.current.average_reported = True
            self.adopt_orphan()
        elif match := p.STAGE_ERROR.search(line):
            after = valid_number(match["v"])
            if after is not None and match["unit"] != "ms":
                after *= 1000.0
            kind = "oom" if p.OOM.search(line) else "stage_error"
            size = p.OOM_SIZE.search(line)
            failure = Failure(
                kind, shorten(match["msg"]), match["stage"], after, size["size"] if size else None
            )
            self.current.failures.append(failure)
        else:
            progress = parse_progress(line)
            if progress is None:
                return False
            self._progress(progress)
        return True

    def _started(self, name: str) -> None:
        if name in self.current.started or self.current.closed:
            self.open_request()
        self.orphan = None  # the bars of this stage follow its "started" line
        self.current.started.append(name)
        if is_denoise_stage(name):
            if self.current.denoise_stage not in (None, name):
                self.log.warnings.append(
                    f"request has two denoising stages; using {self.current.denoise_stage}"
                )
            else:
                self.current.denoise_stage = name

    def _finished(self, name: str, value: float | None) -> None:
        if any(stage.name == name for stage in self.current.stages):
            self.open_request()  # a stage finishing twice: the next run, its "started" lines missing
        if self.current.denoise_stage is None and is_denoise_stage(name):
            self.current.denoise_stage = name  # an excerpt may start after "started..."
        if name == self.current.denoise_stage:
            self.current.denoise_reported = True
            self.adopt_orphan()
        else:
            self.orphan = None  # a bar before another stage's end was that stage's (VAE tiling)
        if value is not None:
            self.current.stages.append(StageTiming(name, seconds_to_ms(value)))
            if name == self.current.denoise_stage:
                self.current.denoise_s = value

    def _progress(self, progress: Progress) -> None:
        """A tqdm bar: the warmup count, the current denoising loop's, or one for the next request."""
        current = self.current
        if "warmup" in progress.desc.lower():
            self._warmup_count(progress.n, progress.total)
        elif current.denoise_stage is not None and not current.denoise_reported:
            # Only bars inside a denoising stage count: other stages (VAE tiling) draw bars too.
            current.progress = progress
            current.progress_totals.add(progress.total)
        elif current.denoise_reported and _late(current, progress):
            # This loop's bar, flushed after its summary lines (stderr piped behind stdout).
            current.progress = progress
            current.progress_totals.add(progress.total)
        elif current.denoise_reported or current.open_stage is None:
            self.orphan = progress

    def _warmup(self, line: str) -> bool:
        if p.WARMUP_START.search(line):
            self.log.explicit_warmup = True
            self.open_request(warmup=True)
        elif match := p.WARMUP_DONE.search(line):
            self._close_warmup()
        elif match := p.WARMUP_FAILED.search(line):
            self._close_warmup()
            self.current.failures.append(Failure("request_error", shorten(match["msg"] or line)))
        elif match := p.WARMUP_COUNT.search(line):
            self._warmup_count(int(match["k"]), int(match["n"]))
        elif p.SERVER_READY.search(line):
            if self.current.warmup:
                self.current.closed = True
        else:
            return False
        return True

    def _warmup_count(self, done: int, total: int) -> None:
        """Handle "Warmup requests: k/N": 0 opens the first warmup, k > 0 closes the k-th."""
        self.log.explicit_warmup = True
        if done == 0:
            self.open_request(warmup=True)
            return
        # The current request is the warmup that just finished, even when its stage lines were
        # suppressed (newer sglang does that) and it shows no content.
        self._close_warmup()
        self.next_is_warmup = done < total

    def _close_warmup(self) -> None:
        self.log.explicit_warmup = True
        self.current.warmup = True
        self.current.closed = True

    def _request(self, line: str) -> bool:
        if p.REQUEST_START.search(line):
            self.open_request()
            return True
        if match := p.PIXEL.search(line):
            self.current.pixel_s = self.number(match["v"], line)
            self.current.closed = True
            return True
        if match := p.REQUEST_ERROR.search(line):
            self.current.failures.append(Failure("request_error", shorten(match["msg"] or line)))
            self._oom(line)
            return True
        if match := p.PEAK.search(line):
            self._peak(self.number(match["v"], line), gib=True)
            return True
        if match := p.PEAK_USAGE.search(line):
            self._peak(self.number(match["v"], line), gib=False)
            return True
        if match := p.INFER_STEPS.match(line):
            self.current.infer_steps = int(match["n"])
            return True
        return False

    def _peak(self, value: float | None, *, gib: bool) -> None:
        """Note the request's peak memory; an invalid figure (already warned about) keeps none."""
        if value is not None:
            self.current.peak_mb = gib_to_mib(value) if gib else value

    def _summary(self, line: str) -> bool:
        if match := p.WARMED_UP.search(line):
            self.log.warmed_up_s = self.number(match["v"], line)
            self.log.warmup_flag = True
        elif match := p.BATCH.search(line):
            self.log.batch_outputs = int(match["n"])
            self.log.batch_s = self.number(match["v"], line)
        elif match := p.MAX_PEAK.search(line):
            self.log.max_peak_mb = self.number(match["v"], line)
        else:
            return False
        return True

    def _misc(self, line: str) -> None:
        if p.COMMAND_LINE.search(line):
            self.open_request()  # a new run pasted after the last one
            self.orphan = None
        if "warmup" in line and (setting := warmup_setting(line)) is not None:
            self.log.warmup_flag = setting
        if (reason := fatal_reason(line)) is not None:
            self.log.fatal.append(reason)
        self._oom(line)

    def _oom(self, line: str) -> None:
        """Note an out-of-memory error, or add the allocation size to one already noted."""
        match = p.OOM.search(line)
        if match is None:
            return
        size_match = p.OOM_SIZE.search(line)
        size = size_match["size"] if size_match else None
        for failure in self.current.failures:
            if failure.kind == "oom" or "out of memory" in failure.message.lower():
                failure.kind = "oom"
                failure.size = failure.size or size
                return
        device = match["device"] or "CUDA"
        self.current.failures.append(
            Failure("oom", f"{device} out of memory", self.current.open_stage, size=size)
        )


def warmup_setting(line: str) -> bool | None:
    """Whether a command line or server-args dump switches warmup on, off, or says nothing (None).

    ``--warmup-mode`` decides when present: 0.5.14-0.5.17 let it override ``--warmup``, and it
    is the only option since 0.5.18. ``off`` is no warmup; ``request`` and ``server`` are on, as
    sglang's own summary counts them ("(with warmup excluded)" whenever the mode is not off).
    In server mode only ``sglang serve`` runs a warmup request; a ``generate`` log then shows
    none, and the log parser's "single request" warning says so. The last line that says
    anything wins: the resolved server args are logged after the command line.
    """
    for match in p.WARMUP_MODE.finditer(line):
        mode = (match["flag"] or match["dump"]).lower()
        if mode in ("request", "server"):
            return True
        if mode == "off":
            return False
        # "warmup_mode": null (0.5.14-0.5.17 before resolution) says nothing.
    if p.WARMUP_FLAG.search(line):
        return True
    return None


def warmup_mark(line: str) -> Literal["start", "done"] | None:
    """Whether one console line begins the warmup (``"start"``), ends it (``"done"``, a failed
    warmup included) or neither: "Processing warmup req..." and "Warmup req processed in", or the
    "Warmup requests: k/N" count, 0 first and N last. Colour codes are allowed."""
    line = strip_ansi(line)
    if p.WARMUP_START.search(line):
        return "start"
    if p.WARMUP_DONE.search(line) or p.WARMUP_FAILED.search(line):
        return "done"
    if match := p.WARMUP_COUNT.search(line):
        done, total = int(match["k"]), int(match["n"])
        return "start" if done == 0 else ("done" if done >= total else None)
    return None


def _late(request: Request, bar: Progress) -> bool:
    """Whether a bar after the request's denoising summary is still its own: it goes on from the
    bar last shown (same total, not behind, that one not at its end), or the request showed none
    though its loop's "started" line is there (so the bar cannot be an excerpt's next run)."""
    shown = request.progress
    if shown is None:
        return request.denoise_stage is not None and request.denoise_stage in request.started
    return shown.n < shown.total and bar.total == shown.total and bar.n >= shown.n


def scan(text: str) -> ScannedLog:
    """Split a log into requests and collect the run-level summary lines."""
    scanner = _Scanner()
    for line in logical_lines(text):
        scanner.feed(line)
    return scanner.log
