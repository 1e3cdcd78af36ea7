"""``perftrack parse-log`` and ``perftrack import-log``: logs and perf dumps in, runs out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError

from perftrack.cli.common import console, database_session, fail, settings
from perftrack.cli.log_payloads import (
    ImportFields,
    ImportOptions,
    LogError,
    import_payload,
    iso_time,
    parse_files,
    with_output,
)
from perftrack.cli.logs_dir import import_directory
from perftrack.cli.tracker_http import open_tracker, post_result
from runners.outputs import OutputReadError
from runners.parsing import ParsedRun, RunStatus
from runners.payload import parsed_as_json
from tracker.errors import PerftrackError
from tracker.ingest.results import IngestLimits
from tracker.workflows.results import store_result
from wire import ResultIn, validation_message

# parse-log's exit status for a log that parsed and shows a failed run (1: could not parse).
EXIT_RUN_FAILED = 3
LOG_ARG = typer.Argument(
    ..., help="An `sglang generate` log (stdout and stderr).", exists=True, dir_okay=False
)
IMPORT_LOG_ARG = typer.Argument(
    ..., help="An `sglang generate` log (stdout and stderr), or a directory of them.", exists=True
)
DUMP_OPT = typer.Option(
    None, "--perf-dump", help="The run's --perf-dump-path JSON.", exists=True, dir_okay=False
)


def _parse(log: Path, perf_dump: Path | None, limit: int | None = None) -> tuple[ParsedRun, str, str]:
    try:
        return parse_files(log, perf_dump, limit)
    except LogError as error:
        fail(str(error))


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
    log: Path = IMPORT_LOG_ARG,
    case: str | None = typer.Option(
        None, "--case", help="Case slug, e.g. qwen-image-t2i-1024 (a directory: each log's default)."
    ),
    hardware: str | None = typer.Option(None, "--hardware", help="Hardware kind, e.g. H200."),
    commit: str | None = typer.Option(None, "--commit", help="Measured commit sha (7-40 hex digits)."),
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
    output: Path | None = typer.Option(
        None,
        "--output",
        help="The seeded output the run saved (an image, or a video): its digest and references are "
        "stored with the run, for output checks. A directory's logs take NAME.output.* beside them.",
    ),
) -> None:
    """Parse a log locally and store it as a run: over the API with --server, else in the configured database.

    LOG may be a directory: every *.log and *.txt in it is imported (in name order), each with its
    perf dump NAME.perf.json and metadata NAME.meta.json beside it when they exist (the metadata's
    case, hardware, commit, commit_time, title, author and patches override the options), in
    batches. One line per log; exit status 0 only when every log was stored or already stored.
    """
    config = settings()
    options = ImportOptions(case, hardware, commit, commit_time, title, author, tuple(patch))
    server = server or config.server_url
    secret = token or (config.token.get_secret_value() if config.token else None)
    if log.is_dir():
        if perf_dump is not None or output is not None:
            fail(
                "--perf-dump and --output name one log's files; in a directory, each log's are "
                "NAME.perf.json and NAME.output.*"
            )
        raise typer.Exit(import_directory(log, options, server=server, token=secret))
    _import_file(log, options, perf_dump=perf_dump, output=output, server=server, token=secret)


def _import_file(
    log: Path,
    options: ImportOptions,
    *,
    perf_dump: Path | None,
    output: Path | None,
    server: str | None,
    token: str | None,
) -> None:
    """Import one log; any problem ends the command with its message."""
    case = _required(options.case, "--case")
    hardware = _required(options.hardware, "--hardware")
    commit = _required(options.commit, "--commit")
    config = settings()
    parsed, log_text, dump_text = _parse(log, perf_dump, config.max_log_bytes)
    try:
        fields = ImportFields(
            case=case,
            hardware=hardware,
            commit=commit,
            commit_time=iso_time(options.commit_time, "--commit-time") if options.commit_time else None,
            title=options.title,
            author=options.author,
            patches=options.patches,
        )
        # Built as the tracker validates it: a bad --commit or --patch is refused here, naming it.
        payload = import_payload(parsed, log_text=log_text, dump_text=dump_text, fields=fields)
        if output is not None:
            payload = with_output(payload, output)
    except LogError as error:
        fail(str(error))
    except OutputReadError as error:
        fail(f"--output {output}: {error}")
    except ValidationError as error:
        fail(validation_message(error))
    answer = _post(server, token, payload) if server else _store(payload)
    verb = "stored" if answer["created"] else "already stored (same log, case, hardware and commit)"
    value = answer.get("denoise_step_ms")
    shown = f"{value:.1f} ms/step" if isinstance(value, float) else answer.get("status", "")
    console.print(
        f"run {answer['run_id']} {verb}: {case} on {hardware} at {commit[:12]}: {shown}", highlight=False
    )
    _say_which_request(parsed)


def _required(value: str | None, option: str) -> str:
    """An option a single log needs (a directory's logs may take it from their metadata instead)."""
    if value is None:
        raise typer.BadParameter("missing; a single log needs it", param_hint=f"'{option}'")
    return value


def _say_which_request(parsed: ParsedRun) -> None:
    """Which of several requests was stored, then the parser's warnings."""
    if len(parsed.requests) > 1:
        stored = next((request for request in parsed.requests if request.stored), None)
        which = f"request {stored.position} of {len(parsed.requests)}" if stored else "no request"
        console.print(f"the log shows {len(parsed.requests)} requests; stored {which}", highlight=False)
    for warning in parsed.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)


def _store(payload: dict[str, Any]) -> dict[str, Any]:
    try:
        result = ResultIn.model_validate(payload)
    except ValidationError as error:
        fail(validation_message(error))
    config = settings()
    limits = IngestLimits.from_settings(config)
    with database_session() as session:
        try:
            outcome = store_result(
                session=session, result=result, limits=limits, telling=config.culprit_telling()
            )
        except PerftrackError as error:
            fail(str(error))
        run = outcome.run
        return {
            "run_id": run.id,
            "created": outcome.created,
            "status": str(run.status),
            "denoise_step_ms": run.denoise_step_ms,
        }


def _post(server: str, token: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    if not token:
        fail("--server needs a token: pass --token or set PERFTRACK_TOKEN (perftrack token create NAME)")
    with open_tracker(server, token) as tracker:
        return post_result(tracker, payload)
