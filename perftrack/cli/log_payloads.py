"""Logs in, upload bodies out: reading a log and its perf dump, parsing them, building the import.

Shared by ``import-log`` on one log (a problem ends the command) and on a directory (a problem is
that log's line, and the others go on): everything here raises :class:`LogError` rather than exiting.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners.outputs import read_output
from runners.parsing import ParsedRun, ParseError, parse_run
from runners.payload import CommitInfo, as_body, import_key, import_result

OUTPUT_INFIX = ".output."  # NAME.output.png beside NAME.log: the seeded output that run saved


class LogError(Exception):
    """A log, perf dump or metadata file that cannot be read or parsed; the message names it."""


@dataclass(frozen=True)
class ImportFields:
    """What an import says beside its log: the case, hardware and commit it measured."""

    case: str
    hardware: str
    commit: str
    commit_time: str | None = None  # ISO 8601 with offset (see :func:`iso_time`)
    title: str = ""
    author: str = ""
    patches: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportOptions:
    """``import-log``'s options: a single log's fields, or a directory's defaults (any may be missing
    there, given by a log's metadata instead)."""

    case: str | None = None
    hardware: str | None = None
    commit: str | None = None
    commit_time: str | None = None
    title: str = ""
    author: str = ""
    patches: tuple[str, ...] = ()


def read_text(path: Path, what: str, limit: int | None = None) -> str:
    """The file's text (undecodable bytes replaced); :class:`LogError` if unreadable or over ``limit`` bytes."""
    try:
        size = path.stat().st_size
        if limit is not None and size > limit:
            raise LogError(f"{path}: {what} is {size} bytes, over the limit of {limit} bytes")
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        raise LogError(f"cannot read {what} {path}: {error}") from error


def parse_files(log: Path, perf_dump: Path | None, limit: int | None = None) -> tuple[ParsedRun, str, str]:
    """The parsed run, the log's text and the perf dump's text ("" without one)."""
    log_text = read_text(log, "log", limit)
    dump_text = read_text(perf_dump, "perf dump", limit) if perf_dump else ""
    try:
        parsed = parse_run(log_text, dump_text or None)
    except ParseError as error:
        source = perf_dump if perf_dump is not None and "dump" in str(error).lower() else log
        raise LogError(f"{source}: {error}") from error
    return parsed, log_text, dump_text


def iso_time(text: str, name: str) -> str:
    """``text`` as an ISO 8601 time with offset; :class:`LogError` naming the option ``name`` if it is not."""
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise LogError(f"{name}: {text!r} is not an ISO 8601 time such as 2026-03-01T12:00:00Z") from None
    if moment.tzinfo is None:
        raise LogError(f"{name}: {text!r} has no timezone; add Z or an offset such as +08:00")
    return moment.isoformat()


def import_payload(
    parsed: ParsedRun, *, log_text: str, dump_text: str, fields: ImportFields
) -> dict[str, Any]:
    """The body of ``POST /api/v1/results`` for a parsed log, keyed by its content.

    Built as the tracker validates it: a bad commit or patch raises ``pydantic.ValidationError``
    naming the field.
    """
    patches = list(fields.patches)
    commit = CommitInfo(
        sha=fields.commit, committed_at=fields.commit_time, title=fields.title, author_name=fields.author
    )
    key = import_key(
        case=fields.case,
        hardware=fields.hardware,
        commit_sha=fields.commit,
        patches=patches,
        log_text=log_text,
        dump_text=dump_text,
    )
    return as_body(
        import_result(
            parsed,
            case=fields.case,
            hardware=fields.hardware,
            commit=commit,
            idempotency_key=key,
            patches=patches,
            raw_log=log_text,
            perf_dump=json.loads(dump_text) if dump_text else None,
        )
    )


def with_output(payload: dict[str, Any], path: Path) -> dict[str, Any]:
    """``payload`` with the seeded output saved at ``path`` (an image, or a video by its suffix):
    its pixels' digest and lossless references, as a runner uploads them.

    Raises :class:`runners.outputs.OutputReadError` when the file cannot be read as either.
    """
    return {**payload, "output": read_output(path).model_dump(mode="json")}


def output_beside(log: Path) -> Path | None:
    """``NAME.output.png`` (or any other suffix: ``.mp4``, ``.webp``, ...) beside ``NAME.log``, if one is there."""
    found = sorted(log.parent.glob(f"{log.stem}{OUTPUT_INFIX}*"))
    return found[0] if found else None
