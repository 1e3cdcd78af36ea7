"""The phase clock of a benchmark process: start-up, warmup and what follows, from the moments its
output lines arrive; and the warmup marks of sglang's log (the toy prints the same words)."""

from __future__ import annotations

from runners.parsing import warmup_mark
from runners.workloads.phases import ProcessPhases
from runners.workloads.watch import Tee


class Clock:
    """A hand-moved monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_warmup_marks_in_each_wording_sglang_used() -> None:
    assert warmup_mark("[12-03 18:00:01] Processing warmup req...") == "start"
    assert warmup_mark("[12-03 18:00:04] Warmup req processed in 2.31 seconds") == "done"
    assert warmup_mark("Warmup req (1/1) processed in 0.98 seconds") == "done"
    assert warmup_mark("warmup req (1024x1024, 1 step) processing failed: CUDA error") == "done"
    # 0.5.14 on, with CI=true: the bar's counts as log lines.
    assert warmup_mark("Warmup requests: 0/2") == "start"
    assert warmup_mark("Warmup requests: 1/2") is None
    assert warmup_mark("Warmup requests: 2/2") == "done"
    # Colour codes (the toy's 0.2.0 release prints them) do not hide a mark.
    assert warmup_mark("\x1b[32mProcessing warmup req...\x1b[0m") == "start"
    for line in ("Processing prompt 1/1: a fox", "Warmed-up request processed in 0.4000 seconds", ""):
        assert warmup_mark(line) is None


def test_a_warmed_up_run_splits_into_start_up_warmup_and_the_rest() -> None:
    clock = Clock()
    phases = ProcessPhases(clock=clock)
    phases.started()
    clock.now += 1.5
    phases.feed("[12-03 18:00:01] Processing prompt 1/1: a fox")
    clock.now += 0.25
    phases.feed("[12-03 18:00:01] Processing warmup req...")
    clock.now += 2.0
    phases.feed("[12-03 18:00:03] Warmup req processed in 2.00 seconds")
    clock.now += 0.5
    phases.feed("Processing warmup req...")  # a second warmup: the first one's marks count
    clock.now += 0.75
    phases.ended()
    clock.now += 9.0
    phases.ended()  # the first end counts
    assert phases.timings() == {
        "process_s": 5.0,
        "startup_s": 1.75,
        "warmup_s": 2.0,
        "after_warmup_s": 1.25,
    }


def test_without_warmup_marks_only_the_whole_process_is_timed() -> None:
    clock = Clock()
    phases = ProcessPhases(clock=clock)
    assert phases.timings() == {}  # never started
    phases.started()
    phases.feed("Warmup req processed in 1.00 seconds")  # an end without a start is no warmup
    clock.now += 3.0
    phases.ended()
    assert phases.timings() == {"process_s": 3.0}


def test_the_tee_feeds_every_reader_and_survives_a_broken_display() -> None:
    seen: list[str] = []
    phases = ProcessPhases(clock=Clock())

    def broken(line: str) -> None:
        raise RuntimeError("display gone")

    tee = Tee((seen.append, phases.feed), broken)
    phases.started()
    tee("Processing warmup req...")
    tee("Warmup req processed in 0.10 seconds")
    phases.ended()
    assert seen == ["Processing warmup req...", "Warmup req processed in 0.10 seconds"]
    assert set(phases.timings()) == {"process_s", "startup_s", "warmup_s", "after_warmup_s"}
