"""Advisory file locks (``fcntl.flock``); the kernel drops them when the holding process dies."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType


class FileLock:
    """An exclusive ``flock`` on one file; a context manager that blocks until it holds the lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, *, blocking: bool = True) -> bool:
        """Take the lock; without ``blocking``, return False at once when someone else holds it."""
        if self._fd is not None:
            raise RuntimeError(f"lock {self.path} is already held by this object")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self, *, remove: bool = False) -> None:
        """Drop the lock, first deleting the lock file when ``remove`` (it guarded something now gone)."""
        if self._fd is None:
            return
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self._fd)  # closing the descriptor releases the flock
        self._fd = None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
