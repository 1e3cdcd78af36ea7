"""``perftrack compare``: ask the tracker for an A/B comparison, print (or wait for) its verdicts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from perftrack.cli.common import console, fail, settings
from perftrack.cli.tracker_http import open_tracker, read_comparison, request_comparison
from runners.http import TrackerHttp
from tracker.enums import FINISHED_COMPARISON_STATES, FINISHED_JOB_STATES

_VERDICT_STYLE = {
    "regression": "bold red",
    "improvement": "bold green",
    "no_change": "green",
    "inconclusive": "yellow",
    "pending": "blue",
}


def parse_candidate(text: str, option: str) -> dict[str, Any]:
    """``SHA[+PATCH...]`` as the API's candidate: ``abc1234+#43601`` is abc1234 with PR 43601 on top."""
    sha, *patches = [part.strip() for part in text.split("+")]
    if not sha or any(not patch for patch in patches):
        fail(f"{option}: {text!r} is not SHA[+PATCH...], e.g. 669a9bd+#43601")
    return {"sha": sha, "patches": patches}


def compare(
    base: str = typer.Option(..., "--base", help="Base candidate: SHA[+PATCH...], e.g. 669a9bd."),
    head: str = typer.Option(..., "--head", help="Head candidate: SHA[+PATCH...], e.g. 669a9bd+#43601."),
    case: list[str] = typer.Option(..., "--case", help="Case slug; repeatable."),
    hardware: list[str] = typer.Option(
        [], "--hardware", help="Hardware kind; repeatable. Default: every kind each case runs on."
    ),
    rounds: int = typer.Option(2, "--rounds", min=1, help="Interleaved A B rounds to start with."),
    max_rounds: int = typer.Option(
        8, "--max-rounds", min=1, help="Rounds are doubled up to this while inconclusive."
    ),
    pr_number: int | None = typer.Option(None, "--pr", min=1, help="The pull request this compares."),
    wait: bool = typer.Option(False, "--wait", help="Poll until every verdict is in, showing progress."),
    poll_interval: float = typer.Option(
        10.0, "--poll-interval", min=0.1, help="Seconds between polls with --wait."
    ),
    server: str | None = typer.Option(None, "--server", help="Tracker URL (or PERFTRACK_SERVER_URL)."),
    token: str | None = typer.Option(None, "--token", help="Admin token (or PERFTRACK_TOKEN)."),
) -> None:
    """Compare a head candidate with a base on cases, in interleaved rounds on the tracker's runners."""
    config = settings()
    server = server or config.server_url
    if not server:
        fail("a tracker is needed: --server URL or PERFTRACK_SERVER_URL")
    secret = token or (config.token.get_secret_value() if config.token else None)
    if not secret:
        fail(
            "an admin token is needed: --token or PERFTRACK_TOKEN (perftrack token create NAME --role admin)"
        )
    body: dict[str, Any] = {
        "base": parse_candidate(base, "--base"),
        "head": parse_candidate(head, "--head"),
        "cases": list(case),
        "rounds": rounds,
        "max_rounds": max_rounds,
        "command": "perftrack compare",
    }
    if hardware:
        body["hardware"] = list(hardware)
    if pr_number is not None:
        body["pr_number"] = pr_number
    with open_tracker(server, secret) as tracker:
        comparison = run_compare(tracker, body, wait=wait, poll_interval_s=poll_interval, console=console)
    raise typer.Exit(1 if comparison["state"] == "failed" else 0)


def run_compare(
    tracker: TrackerHttp,
    body: dict[str, Any],
    *,
    wait: bool,
    poll_interval_s: float,
    console: Console,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Request the comparison, optionally poll until it finishes, print its table; return its JSON.

    ``tracker``: the tracker's API with an admin token.
    """
    comparison = request_comparison(tracker, body)
    console.print(
        f"comparison [bold]{comparison['id']}[/]: {comparison['base']['label']} → {comparison['head']['label']} "
        f"({len(comparison['results'])} case × hardware, {comparison['rounds']} rounds to start)",
        highlight=False,
    )
    if wait:
        comparison = _wait(tracker, comparison, poll_interval_s=poll_interval_s, console=console, sleep=sleep)
    console.print(comparison_table(comparison))
    return comparison


def _wait(
    tracker: TrackerHttp,
    comparison: dict[str, Any],
    *,
    poll_interval_s: float,
    console: Console,
    sleep: Callable[[float], None],
) -> dict[str, Any]:
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    with progress:
        task = progress.add_task("rounds", total=None)
        while True:
            ended, scheduled = _round_counts(comparison)
            progress.update(
                task, completed=ended, total=scheduled, description=f"{comparison['state']}: rounds"
            )
            if comparison["state"] in FINISHED_COMPARISON_STATES:
                return comparison
            sleep(poll_interval_s)
            comparison = read_comparison(tracker, comparison["id"])


def _round_counts(comparison: dict[str, Any]) -> tuple[int, int]:
    rounds = [item for result in comparison["results"] for item in result["rounds"]]
    ended = sum(
        1
        for item in rounds
        if item["base"]["job_state"] in FINISHED_JOB_STATES
        and item["head"]["job_state"] in FINISHED_JOB_STATES
    )
    return ended, len(rounds)


def comparison_table(comparison: dict[str, Any]) -> Table:
    """The verdict per case × hardware as a rich table."""
    label = comparison.get("label")
    title = f"comparison {comparison['id']} · {comparison['state']}" + (f" · {label}" if label else "")
    table = Table(title=escape(title), title_justify="left")
    for column in (
        "case",
        "hardware",
        "base ms",
        "head ms",
        "change",
        "95 % CI",
        "verdict",
        "threshold",
        "rounds",
        "output",
    ):
        table.add_column(
            column, justify="right" if column not in ("case", "hardware", "verdict", "output") else "left"
        )
    table.add_column("note", overflow="fold")
    for result in comparison["results"]:
        low, high = result["ci_low_pct"], result["ci_high_pct"]
        threshold = result["threshold_pct"]
        verdict = result["verdict"]
        shown = result.get("label") or verdict
        output = (result.get("output") or {}).get("summary") or "—"
        table.add_row(
            result["case"],
            result["hardware"],
            _number(result["base_ms"], "{:.2f}"),
            _number(result["head_ms"], "{:.2f}"),
            _number(result["change_pct"], "{:+.2f} %"),
            escape(f"[{low:+.2f}, {high:+.2f}]") if low is not None and high is not None else "—",
            f"[{_VERDICT_STYLE.get(verdict, '')}]{escape(shown)}[/]",
            f"{threshold:g} % ({result['threshold_source']})" if threshold is not None else "—",
            f"{result['rounds_done']}"
            + (f" ({result['rounds_failed']} failed)" if result["rounds_failed"] else ""),
            escape(output),
            escape(result["note"]),
        )
    return table


def _number(value: float | None, spec: str) -> str:
    return spec.format(value) if value is not None else "—"
