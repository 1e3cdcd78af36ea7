"""Evidence runs: the profiler flags sglang takes, and the trace it leaves, read back for upload.

``sglang generate --profile --num-profiled-timesteps N`` profiles N denoising steps after one
warmup step and writes a gzipped Chrome trace, logging ``Saved profiler traces to:
{CYAN}{path}{RESET}`` (``runtime/utils/profiler.py``; the colour codes are there whatever the
output is). Its directory is ``SGLANG_DIFFUSION_TORCH_PROFILER_DIR`` when set, else
``SGLANG_TORCH_PROFILER_DIR`` (``_resolve_profiler_log_dir``, 0.5.14 to 0.5.23; 0.5.10 reads only
the second). The runner sets both to a folder of the job's scratch directory, so a value the
host's environment holds for either cannot send the trace elsewhere; it takes the logged trace
(else the newest one there), gzips it if it is not already, and leaves it out with a warning
when it is over the upload's limit.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping
from pathlib import Path

from runners.parsing import clean_console_text
from runners.workloads.base import CapturedFile
from wire.files import FILE_NAME_PATTERN, MAX_FILE_BYTES

# Read first, then second, by sglang (module docstring); both are set.
PROFILER_DIR_VARIABLES = ("SGLANG_DIFFUSION_TORCH_PROFILER_DIR", "SGLANG_TORCH_PROFILER_DIR")
PROFILE_DIR_NAME = "profile"
_SAVED = re.compile(r"Saved profiler traces to: (?P<path>\S.*?)\s*$", re.MULTILINE)
_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]")


def profile_options(steps: int) -> list[tuple[str, object]]:
    """The options that turn the profiler on for ``steps`` steady steps, as (name, value) pairs."""
    return [("profile", True), ("num-profiled-timesteps", steps)] if steps > 0 else []


def profile_env(job_dir: Path, steps: int) -> Mapping[str, str]:
    """Where the benchmark writes its trace (nothing when it does not profile).

    Every variable sglang reads is set, to an absolute path (envs.py asks for one).
    """
    if steps <= 0:
        return {}
    directory = str((job_dir / PROFILE_DIR_NAME).absolute())
    return dict.fromkeys(PROFILER_DIR_VARIABLES, directory)


def find_trace(log_text: str, directory: Path) -> Path | None:
    """The trace the log says was saved (the last one), else the newest ``*.json*`` in ``directory``.

    ``log_text`` is console text as :func:`runners.parsing.clean_console_text` leaves it; raw
    text is cleaned here too, so the colour codes around the path never become part of it.
    """
    for match in reversed(list(_SAVED.finditer(clean_console_text(log_text)))):
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
    """The profiled run's trace as files to upload, and a warning when there is none to send.

    ``log_text`` is the cleaned console text (see :func:`find_trace`, which also cleans it).
    """
    path = find_trace(log_text, job_dir / PROFILE_DIR_NAME)
    if path is None:
        return (), "the profiled run left no profiler trace"
    captured = trace_file(path)
    if isinstance(captured, str):
        return (), captured
    return (captured,), None
