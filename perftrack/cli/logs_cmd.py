"""``perftrack parse-log`` and ``perftrack import-log``: logs and perf dumps in, runs out."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import httpx
import typer
from pydantic import ValidationError

from perftrack.cli.common import console, database_session, fail, settings
from perftrack.cli.tracker_http import call_tracker
from runners.parsing import ParsedRun, ParseError, RunStatus, parse_run
from runners.payload import CommitInfo, as_body, import_key, import_result, parsed_as_json
from tracker.errors import PerftrackError
from tracker.ingest.results import IngestLimits
from tracker.workflows.results import store_result
from wire import ResultIn, validation_message

# parse-log's exit status for a log that parsed and shows a failed run (1: could not parse).
EXIT_RUN_FAILED = 3
LOG_ARG = typer.Argument(
    ..., help="An `sglang generate` log (stdout and stderr).", exists=True, dir_okay=False
)
DUMP_OPT = typer.Option(
    None, "--perf-dump", help="The run's --perf-dump-path JSON.", exists=True, dir_okay=False
)


def _read(path: Path, what: str, limit: int | None = None) -> str:
    try:
        size = path.stat().st_size
        if limit is not None and size > limit:
            fail(f"{path}: {what} is {size} bytes, over the limit of {limit} bytes")
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        fail(f"cannot read {what} {path}: {error}")


def _parse(log: Path, perf_dump: Path | None, limit: int | None = None) -> tuple[ParsedRun, str, str]:
    log_text = _read(log, "log", limit)
    dump_text = _read(perf_dump, "perf dump", limit) if perf_dump else ""
    try:
        parsed = parse_run(log_text, dump_text or None)
    except ParseError as error:
        source = perf_dump if perf_dump is not None and "dump" in str(error).lower() else log
        fail(f"{source}: {error}")
    return parsed, log_text, dump_text


def parse_log(log: Path = LOG_ARG, perf_dump: Path | None = DUMP_OPT) -> None:
    """Print, as JSON, what would be stored for a log (and perf dump): steps, stages, e2e, memory,
    warnings, and every request the log shows with the one that would be stored.

    Exit status: 0 the log holds a measurement; 3 it parsed, and the run failed (failure_reason
    says why); 1 the input could not be read or parsed; 2 wrong arguments.
    """
    parsed, _log_text, _dump_text = _parse(log, perf_dump)
    print(parsed_as_json(parsed))
    if parsed.status is RunStatus.FAILED:
        raise typer.Exit(EXIT_RUN_FAILED)


def import_log(
    log: Path = LOG_ARG,
    case: str = typer.Option(..., "--case", help="Case slug, e.g. qwen-image-t2i-1024."),
    hardware: str = typer.Option(..., "--hardware", help="Hardware kind, e.g. H200."),
    commit: str = typer.Option(..., "--commit", help="Measured commit sha (7-40 hex digits)."),
    commit_time: str | None = typer.Option(
        None, "--commit-time", help="Committer time, ISO 8601 (e.g. 2026-03-01T12:00:00Z). Default: now."
    ),
    title: str = typer.Option("", "--title", help="Commit title, shown on the series page."),
    author: str = typer.Option("", "--author", help="Commit author."),
    patch: list[str] = typer.Option(
        [], "--patch", help="A patch stacked on the commit (sha or #PR); repeatable."
    ),
    perf_dump: Path | None = DUMP_OPT,
    server: str | None = typer.Option(
        None, "--server", help="Tracker URL; without it, write to the database."
    ),
    token: str | None = typer.Option(None, "--token", help="Runner or admin token (or PERFTRACK_TOKEN)."),
) -> None:
    """Parse a log locally and store it as a run: over the API with --server, else in the configured database."""
    config = settings()
    parsed, log_text, dump_text = _parse(log, perf_dump, config.max_log_bytes)
    committed_at = _iso_time(commit_time) if commit_time else None
    try:  # built as the tracker validates it: a bad --commit or --patch is refused here, naming it
        payload = as_body(
            import_result(
                parsed,
                case=case,
                hardware=hardware,
                commit=CommitInfo(sha=commit, committed_at=committed_at, title=title, author_name=author),
                idempotency_key=import_key(
                    case=case,
                    hardware=hardware,
                    commit_sha=commit,
                    patches=patch,
                    log_text=log_text,
                    dump_text=dump_text,
                ),
                patches=patch,
                raw_log=log_text,
                perf_dump=json.loads(dump_text) if dump_text else None,
            )
        )
    except ValidationError as error:
        fail(validation_message(error))
    server = server or config.server_url
    if server:
        secret = token or (config.token.get_secret_value() if config.token else None)
        answer = _post(server, secret, payload, config.http_timeout_s)
    else:
        answer = _store(payload)
    verb = "stored" if answer["created"] else "already stored (same log, case, hardware and commit)"
    value = answer.get("denoise_step_ms")
    shown = f"{value:.1f} ms/step" if isinstance(value, float) else answer.get("status", "")
    console.print(
        f"run {answer['run_id']} {verb}: {case} on {hardware} at {commit[:12]}: {shown}", highlight=False
    )
    _say_which_request(parsed)


def _say_which_request(parsed: ParsedRun) -> None:
    """Which of several requests was stored, then the parser's warnings."""
    if len(parsed.requests) > 1:
        stored = next((request for request in parsed.requests if request.stored), None)
        which = f"request {stored.position} of {len(parsed.requests)}" if stored else "no request"
        console.print(f"the log shows {len(parsed.requests)} requests; stored {which}", highlight=False)
    for warning in parsed.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)


def _iso_time(text: str) -> str:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        fail(f"--commit-time: {text!r} is not an ISO 8601 time such as 2026-03-01T12:00:00Z")
    if moment.tzinfo is None:
        fail(f"--commit-time: {text!r} has no timezone; add Z or an offset such as +08:00")
    return moment.isoformat()


def _store(payload: dict[str, Any]) -> dict[str, Any]:
    try:
        result = ResultIn.model_validate(payload)
    except ValidationError as error:
        fail(validation_message(error))
    config = settings()
    limits = IngestLimits.from_settings(config)
    with database_session() as session:
        try:
            outcome = store_result(session=session, result=result, limits=limits)
        except PerftrackError as error:
            fail(str(error))
        run = outcome.run
        return {
            "run_id": run.id,
            "created": outcome.created,
            "status": str(run.status),
            "denoise_step_ms": run.denoise_step_ms,
        }


def _post(server: str, token: str | None, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    if not token:
        fail("--server needs a token: pass --token or set PERFTRACK_TOKEN (perftrack token create NAME)")
    url = server.rstrip("/") + "/api/v1/results"
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s) as client:
        return call_tracker(client, "POST", url, payload, server=server, what="the result")
