"""The report's section "The loop with people": one table each for the alert groups, the bot's
comments on the culprits' pull requests, the ``/perf`` check runs, and the notifications received."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from perftrack.demo.loop_view import LoopView
from perftrack.demo.receiver import JSON_PATH, Received

FIRST_LINES = 2
LINE_CHARS = 90


def print_loop(view: LoopView, console: Console) -> None:
    """The four tables."""
    console.print("[bold]The loop with people[/]")
    console.print(_groups(view.groups))
    console.print(_comments(view))
    console.print(_check_runs(view.check_runs))
    console.print(_notifications(view.notifications))


def first_lines(text: str, count: int = FIRST_LINES) -> str:
    """The first ``count`` non-empty lines of ``text``, each cut to a table's width."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("<!--")]
    return "\n".join(
        line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…" for line in lines[:count]
    )


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    return table


def _groups(groups: tuple[Mapping[str, Any], ...]) -> Table:
    table = _table("alert groups (GET /api/v1/groups)", "group", "culprit", "alerts across cases", "state")
    for group in sorted(groups, key=lambda item: int(item["id"])):
        culprit = group.get("culprit_commit")
        named = f"{culprit['sha'][:7]} {culprit.get('title', '')}" if culprit else "range only"
        pull = group.get("pull_request")
        merged = f" → group {group['merged_into_id']}" if group.get("merged_into_id") else ""
        table.add_row(
            str(group["id"]),
            named[:60] + (f" (#{pull['number']})" if pull and f"#{pull['number']}" not in named else ""),
            f"{group['alert_count']} in {', '.join(group['cases'])}",
            f"{group['state']}{merged}",
        )
    return table


def _comments(view: LoopView) -> Table:
    table = _table(
        "the bot's comments on the culprits' pull requests (fake GitHub)", "PR", "comments", "first lines"
    )
    for pull in view.culprit_comments:
        shown = first_lines(pull.bodies[0]) if pull.bodies else "—"
        table.add_row(f"#{pull.number}", f"{len(pull.bodies)} ({pull.edits} edits)", shown)
    return table


def _check_runs(runs: tuple[Mapping[str, Any], ...]) -> Table:
    table = _table(
        "check runs on the /perf heads (fake GitHub)", "name", "head", "status", "conclusion", "summary"
    )
    for run in runs:
        output = run.get("output") or {}
        table.add_row(
            str(run.get("name", "")),
            str(run.get("head_sha", ""))[:7],
            str(run.get("status", "")),
            str(run.get("conclusion") or "—"),
            "\n".join(
                filter(None, [str(output.get("title", "")), first_rows(str(output.get("summary", "")))])
            ),
        )
    return table


def first_rows(summary: str, count: int = FIRST_LINES) -> str:
    """The first ``count`` rows of the first Markdown table in a check run's summary (the cases'
    results), header and rule left out; the first lines when it has no table."""
    rows = [line.strip() for line in summary.splitlines() if line.strip().startswith("|")]
    data = [row for row in rows[1:] if not set(row) <= set("|-: ")]
    return first_lines("\n".join(data), count) if data else first_lines(summary, count)


def _notifications(received: tuple[Received, ...]) -> Table:
    table = _table("notifications the receiver got", "event", "slack", "json", "signatures", "latest title")
    by_event: dict[str, list[Received]] = defaultdict(list)
    for item in received:
        by_event[item.event].append(item)
    for event, items in by_event.items():
        signed = [item for item in items if item.path == JSON_PATH]
        valid = sum(item.verified is True for item in signed)
        table.add_row(
            event,
            str(len(items) - len(signed)),
            str(len(signed)),
            f"{valid}/{len(signed)} valid",
            items[-1].title[:LINE_CHARS],
        )
    return table
