"""Lines that say a run died: a dead scheduler, an exit code or signal, an NCCL failure.

Each becomes one sentence for the failure reason. Out-of-memory errors and Python tracebacks are
read by the request scanner itself (they belong to the request they interrupt).
"""

from __future__ import annotations

import signal

from runners.parsing import _patterns as p
from runners.parsing._logtext import shorten

# Why a signal usually ends a GPU job, where there is a usual reason.
_SIGNAL_HINTS = {
    signal.SIGKILL: "often the kernel's out-of-memory killer, or a job scheduler's time limit",
    signal.SIGSEGV: "a crash in native code",
    signal.SIGABRT: "an abort, often a failed CUDA or NCCL assertion",
    signal.SIGTERM: "stopped from outside",
}


def fatal_reason(line: str) -> str | None:
    """The sentence a fatal line stands for, ``None`` for any other line."""
    if p.SCHEDULER_DEAD.search(line):
        return f"the scheduler died: {shorten(line.strip(), 200)}"
    if match := p.NCCL.search(line):
        return f"NCCL failure: {shorten(line[match.start() :].strip(), 200)}"
    if match := p.KILLED.search(line):
        return f"a process was {_signal_text(match['signal'])}"
    if match := p.EXIT_CODE.search(line):
        code = int(match["code"])
        if code == 0:
            return None
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            return f"a process ended with exit code {code}: {_signal_text(str(number))}"
        return f"a process ended with exit code {code}"
    return None


def _signal_text(raw: str) -> str:
    """``killed by signal 9 (SIGKILL: often ...)`` for a number or a name."""
    try:
        number = int(raw)
        known: signal.Signals | None = signal.Signals(number)
    except ValueError:
        known = signal.Signals.__members__.get(raw.upper())
        number = known.value if known is not None else -1
    if known is None:
        return f"killed by signal {raw}"
    hint = _SIGNAL_HINTS.get(known)
    return f"killed by signal {number} ({known.name}{': ' + hint if hint else ''})"
