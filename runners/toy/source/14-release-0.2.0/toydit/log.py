"""sglang's console output: timestamped log records on stdout, tqdm-style progress on stderr."""

from __future__ import annotations

import logging
import sys
import time

# The colours sglang's logger puts around paths and timings (ANSI, as its logging utilities define them).
CYAN = "\x1b[1;36m"
GREEN = "\x1b[92m"
RESET = "\x1b[0;0m"
_FORMAT = "[%(asctime)s] %(message)s"
_DATE_FORMAT = "%m-%d %H:%M:%S"
# tqdm's unicode bar: a full block per tenth, and eighths for the partial cell.
_BAR_CHARS = " " + "".join(chr(code) for code in range(0x258F, 0x2587, -1))
_BAR_WIDTH = 10


def get_logger() -> logging.Logger:
    """The pipeline's logger, writing ``[MM-DD HH:MM:SS] message`` lines to stdout."""
    logger = logging.getLogger("toydit")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter(_FORMAT, _DATE_FORMAT))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def format_meter(n: int, total: int, elapsed: float) -> str:
    """One progress line as ``tqdm.format_meter`` draws it: ``35%|███▌      | 7/20 [00:01<00:02, 6.10it/s]``."""
    fraction = n / total if total else 0.0
    whole, part = divmod(int(fraction * _BAR_WIDTH * 8), 8)
    bar = _BAR_CHARS[-1] * whole
    if whole < _BAR_WIDTH:
        bar += _BAR_CHARS[part] + " " * (_BAR_WIDTH - whole - 1)
    if n == 0 or elapsed <= 0:
        return f"{fraction * 100:3.0f}%|{bar}| {n}/{total} [{_clock(elapsed)}<?, ?it/s]"
    rate = n / elapsed
    remaining = (total - n) / rate
    speed = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
    return f"{fraction * 100:3.0f}%|{bar}| {n}/{total} [{_clock(elapsed)}<{_clock(remaining)}, {speed}]"


class Progress:
    """A progress bar printed the way tqdm prints to a pipe: a line per refresh, on stderr.

    Like tqdm, it redraws at most every ``MIN_INTERVAL_S`` (and always at the start and the end):
    a line per millisecond-long step would keep the runner that reads the pipe busy beside the
    very steps it measures.
    """

    MIN_INTERVAL_S = 0.1  # tqdm's default mininterval

    def __init__(self, total: int) -> None:
        self.total = total
        self.n = 0
        self.started = time.perf_counter()
        self._last = self.started
        self._write()

    def update(self) -> None:
        """Count one more step done."""
        self.n += 1
        now = time.perf_counter()
        if self.n >= self.total or now - self._last >= self.MIN_INTERVAL_S:
            self._last = now
            self._write()

    def _write(self) -> None:
        sys.stderr.write(format_meter(self.n, self.total, time.perf_counter() - self.started) + "\n")
        sys.stderr.flush()
