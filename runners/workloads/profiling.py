"""Evidence runs: the profiler flags sglang takes, and the trace it leaves, read back for upload.

``sglang generate --profile --num-profiled-timesteps N`` profiles N denoising steps after one
warmup step and writes a gzipped Chrome trace under ``SGLANG_TORCH_PROFILER_DIR``, logging
"Saved profiler traces to: <path>" (in colour on a terminal). The runner points that directory
into the job's scratch directory, takes the logged trace (else the newest one there), gzips it
if it is not already, and leaves it out with a warning when it is over the upload's limit.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping
from pathlib import Path

from runners.workloads.base import CapturedFile
from wire.files import FILE_NAME_PATTERN, MAX_FILE_BYTES

PROFILER_DIR_VARIABLE = "SGLANG_TORCH_PROFILER_DIR"
PROFILE_DIR_NAME = "profile"
_SAVED = re.compile(r"Saved profiler traces to: (?:\x1b\[[0-9;]*m)?(?P<path>[^\x1b\s]+)")
_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]")


def profile_args(steps: int) -> list[str]:
    """The flags that turn the profiler on for ``steps`` steady steps (none for 0)."""
    return ["--profile", "--num-profiled-timesteps", str(steps)] if steps > 0 else []


def profile_env(job_dir: Path, steps: int) -> Mapping[str, str]:
    """Where the benchmark writes its trace (nothing when it does not profile)."""
    return {PROFILER_DIR_VARIABLE: str(job_dir / PROFILE_DIR_NAME)} if steps > 0 else {}


def find_trace(log_text: str, directory: Path) -> Path | None:
    """The trace the log says was saved (the last one), else the newest ``*.json*`` in ``directory``."""
    for match in reversed(list(_SAVED.finditer(log_text))):
        path = Path(match["path"])
        if path.is_file():
            return path
    if not directory.is_dir():
        return None
    traces = sorted(directory.glob("*.json*"), key=lambda item: item.stat().st_mtime)
    return traces[-1] if traces else None


def trace_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> CapturedFile | str:
    """The trace at ``path``, gzipped, as an upload's file; or why it cannot go up."""
    try:
        content = path.read_bytes()
    except OSError as error:
        return f"profiler trace {path.name}: unreadable ({error})"
    name = _UNSAFE.sub("_", path.name)
    if content[:2] != b"\x1f\x8b":
        content = gzip.compress(content, mtime=0)
        name = f"{name}.gz"
    if not re.match(FILE_NAME_PATTERN, name):
        name = "trace.json.gz"
    if len(content) > max_bytes:
        return f"profiler trace {name}: {len(content)} bytes gzipped is over the upload limit of {max_bytes}"
    return CapturedFile(name=name, content=content)


def collect_trace(log_text: str, job_dir: Path) -> tuple[tuple[CapturedFile, ...], str | None]:
    """The profiled run's trace as files to upload, and a warning when there is none to send."""
    path = find_trace(log_text, job_dir / PROFILE_DIR_NAME)
    if path is None:
        return (), "the profiled run left no profiler trace"
    captured = trace_file(path)
    if isinstance(captured, str):
        return (), captured
    return (captured,), None
