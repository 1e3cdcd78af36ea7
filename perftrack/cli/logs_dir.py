"""``perftrack import-log DIRECTORY``: every log in a directory, parsed here, stored in batches.

The logs are the directory's ``*.log`` and ``*.txt`` files, in name order. Beside ``NAME.log`` (or
``NAME.txt``) may lie ``NAME.perf.json``, its perf dump, and ``NAME.meta.json``, a JSON object with
any of ``case``, ``hardware``, ``commit``, ``commit_time``, ``title``, ``author`` and ``patches``
that overrides the command's options for that log (``patches`` replaces ``--patch``), and
``NAME.output.png`` (or ``.mp4``, ...), the seeded output the run saved. The logs go
to the tracker through ``POST /api/v1/results/batch`` with ``--server``, or through the same
set-based store in-process without it, up to 500 a batch; in-process, the series the logs feed are
then evaluated once, as the scheduler's pending pass does after a batch over HTTP. A log that
cannot be parsed, or that the tracker refuses, is reported on its line and never stops the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.orm import Session

from perftrack.cli.common import console, database_session, fail, settings
from perftrack.cli.log_payloads import (
    ImportFields,
    ImportOptions,
    LogError,
    import_payload,
    iso_time,
    output_beside,
    parse_files,
    with_output,
)
from perftrack.cli.tracker_http import open_tracker, post_results
from runners.http import TrackerHttp
from runners.outputs import OutputReadError
from tracker.ingest.results import IngestLimits
from tracker.models import utcnow
from tracker.workflows.batches import store_results
from tracker.workflows.reactions import evaluate_pending_series
from wire import MAX_BATCH_ITEMS, BatchItemOut, BatchOut, ResultIn, validation_message

LOG_SUFFIXES = (".log", ".txt")
DUMP_SUFFIX = ".perf.json"
META_SUFFIX = ".meta.json"
BATCH_BYTES = 8 * 1024 * 1024  # of JSON a request, under the tracker's default 16 MiB body limit
UNPARSED = "could not parse"


class LogMeta(BaseModel):
    """``NAME.meta.json``: what one log of a directory says about itself (overrides the options)."""

    model_config = ConfigDict(extra="forbid")

    case: str | None = None
    hardware: str | None = None
    commit: str | None = None
    commit_time: str | None = None
    title: str | None = None
    author: str | None = None
    patches: list[str] | None = None


class _Refused(Exception):
    """A log that parsed, but whose import the tracker would refuse (a field missing or invalid)."""


def import_directory(
    directory: Path, options: ImportOptions, *, server: str | None, token: str | None
) -> int:
    """Import every log of ``directory``, printing one line a log and a summary; the exit status."""
    logs = sorted(path for path in directory.iterdir() if path.is_file() and path.suffix in LOG_SUFFIXES)
    if not logs:
        fail(f"{directory}: no *.log or *.txt file in it")
    outcomes: list[str] = []
    if server:
        if not token:
            fail("--server needs a token: pass --token or set PERFTRACK_TOKEN (perftrack token create NAME)")
        with open_tracker(server, token) as tracker:
            for chunk in _chunks(logs):
                outcomes += _import_chunk(chunk, options, lambda payloads: _post(tracker, payloads))
    else:
        with database_session() as session:
            for chunk in _chunks(logs):
                outcomes += _import_chunk(chunk, options, lambda payloads: _store(session, payloads))
            # As the scheduler's pending pass would: each series the logs fed, evaluated once.
            evaluate_pending_series(session=session, now=utcnow(), telling=settings().culprit_telling())
    counts = {name: outcomes.count(name) for name in ("stored", "duplicate", "refused", UNPARSED)}
    console.print(
        f"{len(logs)} logs: {counts['stored']} stored, {counts['duplicate']} already stored, "
        f"{counts['refused']} refused, {counts[UNPARSED]} could not be parsed",
        highlight=False,
    )
    return 0 if counts["stored"] + counts["duplicate"] == len(logs) else 1


def _chunks(logs: Sequence[Path]) -> Iterator[Sequence[Path]]:
    for start in range(0, len(logs), MAX_BATCH_ITEMS):
        yield logs[start : start + MAX_BATCH_ITEMS]


def _import_chunk(
    chunk: Sequence[Path], options: ImportOptions, send: Callable[[list[dict[str, Any]]], list[BatchItemOut]]
) -> list[str]:
    """Parse ``chunk``'s logs, send those that parsed as one batch, print a line a log; the outcomes."""
    limit = settings().max_log_bytes
    lines: dict[Path, tuple[str, str, Sequence[str]]] = {}
    prepared: list[tuple[Path, dict[str, Any], Sequence[str]]] = []
    for log in chunk:
        try:
            payload, warnings = _prepare(log, options, limit)
        except LogError as error:
            lines[log] = (UNPARSED, f"{UNPARSED}: {error}", ())
        except _Refused as error:
            lines[log] = ("refused", f"refused: {error}", ())
        else:
            prepared.append((log, payload, warnings))
    answers = send([payload for _, payload, _ in prepared]) if prepared else []
    for (log, _, warnings), answer in zip(prepared, answers, strict=True):
        lines[log] = (answer.outcome, _described(answer), [*answer.warnings, *warnings])
    for log in chunk:
        _, text, warnings = lines[log]
        console.print(f"{log.name}: {text}", highlight=False)
        for warning in warnings:
            console.print(f"  [yellow]warning:[/] {warning}", highlight=False)
    return [lines[log][0] for log in chunk]


def _described(answer: BatchItemOut) -> str:
    if answer.outcome == "stored":
        return f"run {answer.run_id} stored"
    if answer.outcome == "duplicate":
        return f"run {answer.run_id} already stored"
    return f"refused: {answer.reason}"


def _prepare(log: Path, options: ImportOptions, limit: int) -> tuple[dict[str, Any], Sequence[str]]:
    """The upload body of one log (with its dump and metadata, if any) and the parser's warnings."""
    fields = _fields(log, options, _meta(log))
    dump = log.with_name(log.stem + DUMP_SUFFIX)
    parsed, log_text, dump_text = parse_files(log, dump if dump.is_file() else None, limit)
    output = output_beside(log)
    try:
        payload = import_payload(parsed, log_text=log_text, dump_text=dump_text, fields=fields)
        if output is not None:
            payload = with_output(payload, output)
    except ValidationError as error:
        raise _Refused(validation_message(error)) from error
    except OutputReadError as error:
        raise _Refused(f"{output.name if output else 'output'}: {error}") from error
    return payload, parsed.warnings


def _meta(log: Path) -> LogMeta | None:
    path = log.with_name(log.stem + META_SUFFIX)
    if not path.is_file():
        return None
    try:
        return LogMeta.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:  # unreadable, not JSON, or (ValidationError) not metadata
        problem = validation_message(error) if isinstance(error, ValidationError) else str(error)
        raise LogError(f"{path.name}: {problem}") from error


def _fields(log: Path, options: ImportOptions, meta: LogMeta | None) -> ImportFields:
    """The options, overridden by what the log's metadata says; :class:`_Refused` if one is missing."""
    given = meta.model_dump(exclude_none=True) if meta is not None else {}

    def required(name: str, option: str | None) -> str:
        value = given.get(name, option)
        if not value:
            raise _Refused(f'{name}: not given (--{name}, or "{name}" in {log.stem}{META_SUFFIX})')
        return str(value)

    commit_time = given.get("commit_time", options.commit_time)
    try:
        when = (
            iso_time(commit_time, "commit_time" if "commit_time" in given else "--commit-time")
            if commit_time
            else None
        )
    except LogError as error:
        raise _Refused(str(error)) from error
    return ImportFields(
        case=required("case", options.case),
        hardware=required("hardware", options.hardware),
        commit=required("commit", options.commit),
        commit_time=when,
        title=given.get("title", options.title),
        author=given.get("author", options.author),
        patches=tuple(given.get("patches", options.patches)),
    )


def _post(tracker: TrackerHttp, payloads: list[dict[str, Any]]) -> list[BatchItemOut]:
    """Send ``payloads`` through ``POST /api/v1/results/batch``, as few requests as the size allows."""
    answers: list[BatchItemOut] = []
    for part in _by_size(payloads):
        answer = post_results(tracker, part)
        answers += BatchOut.model_validate(answer).items
    return answers


def _by_size(payloads: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    part: list[dict[str, Any]] = []
    size = 0
    for payload in payloads:
        payload_size = len(json.dumps(payload))
        if part and size + payload_size > BATCH_BYTES:
            yield part
            part, size = [], 0
        part.append(payload)
        size += payload_size
    if part:
        yield part


def _store(session: Session, payloads: list[dict[str, Any]]) -> list[BatchItemOut]:
    """Store ``payloads`` in-process with the tracker's set-based batch store, and commit them."""
    limits = IngestLimits.from_settings(settings())
    results = [ResultIn.model_validate(payload) for payload in payloads]  # built as ResultIn: valid
    items = store_results(session=session, results=results, limits=limits)
    session.commit()
    return [
        BatchItemOut(
            index=item.index,
            outcome=item.outcome.value,
            run_id=item.run_id,
            reason=None if item.error is None else str(item.error),
            warnings=list(item.warnings),
        )
        for item in items
    ]
