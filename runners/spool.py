"""Results the tracker has not taken yet, kept on disk until it does.

Each pending upload is one JSON file, written atomically (temporary file, fsync, rename), so a
runner killed mid-write leaves either the old state or the whole file, never half of one.
Uploads the tracker refused for good (the attempt lost its lease) move to ``rejected/`` with the
reason, so nothing a benchmark measured is ever silently dropped.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SpooledResult:
    """One upload waiting for the tracker."""

    path: Path
    job_id: int
    runner: str
    payload: dict[str, Any]


class Spool:
    """A directory of pending uploads under the runner's workdir."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.rejected = directory / "rejected"
        self.directory.mkdir(parents=True, exist_ok=True)

    def put(self, *, job_id: int, runner: str, payload: dict[str, Any]) -> Path:
        """Keep an upload; the same attempt spooled twice is one file."""
        attempt = int(payload["attempt"])
        path = self.directory / f"job-{job_id}-attempt-{attempt}.json"
        _write_atomically(path, {"job_id": job_id, "runner": runner, "payload": payload})
        return path

    def pending(self) -> list[SpooledResult]:
        """Waiting uploads, oldest first; unreadable files are set aside, not lost."""
        results = []
        for path in sorted(self.directory.glob("job-*.json"), key=lambda p: p.stat().st_mtime):
            try:
                data = json.loads(path.read_text())
                results.append(
                    SpooledResult(
                        path=path,
                        job_id=int(data["job_id"]),
                        runner=str(data["runner"]),
                        payload=data["payload"],
                    )
                )
            except (OSError, ValueError, KeyError, TypeError) as error:
                self._set_aside(path, f"unreadable spool file: {error}")
        return results

    def done(self, item: SpooledResult) -> None:
        """The tracker took it."""
        item.path.unlink(missing_ok=True)

    def reject(self, item: SpooledResult, reason: str) -> Path:
        """The tracker will never take it: keep it with the reason, out of the queue."""
        return self._set_aside(item.path, reason)

    def _set_aside(self, path: Path, reason: str) -> Path:
        self.rejected.mkdir(parents=True, exist_ok=True)
        target = self.rejected / path.name
        os.replace(path, target)
        target.with_suffix(".reason.txt").write_text(reason + "\n")
        return target


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(descriptor, "w") as handle:
            json.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
