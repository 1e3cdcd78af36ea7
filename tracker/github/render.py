"""The bot's one comment on a pull request: Markdown, rendered from a comparison's current state.

Text that users control (the command as typed, logins, notes, case and hardware names) goes through :func:`code` or :func:`plain`, so it can neither break the table
(pipes, newlines) nor add Markdown or HTML of its own (backticks, links, images, tags, mentions).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence

from tracker.comparisons.labels import ResultOutcome, comparison_label, output_summary, result_label
from tracker.comparisons.summary import ComparisonView, ResultView
from tracker.diagnosis.facts import Finding
from tracker.enums import ComparisonState, OutputStatus, Verdict
from tracker.models import Candidate, Comparison, ComparisonResult

# Findings shown under each result that changed (the rest are on the comparison's page).
FINDINGS_IN_COMMENT = 2
_CHANGED = (Verdict.REGRESSION, Verdict.IMPROVEMENT)

_VERDICT = {
    Verdict.PENDING: "⏳ pending",
    Verdict.REGRESSION: "🔴 regression",
    Verdict.IMPROVEMENT: "🟢 improvement",
    Verdict.NO_CHANGE: "⚪ no change",
    Verdict.INCONCLUSIVE: "🟡 inconclusive",
}
_STATE = {
    ComparisonState.PENDING: "⏳ queued: waiting for a runner",
    ComparisonState.RUNNING: "🏃 running",
    ComparisonState.DONE: "✅ done",
    ComparisonState.FAILED: "❌ failed: no arm measured anything",
    ComparisonState.CANCELLED: "🚫 cancelled",
}


_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]()<>|!~@])")
_NOT_LOGIN = re.compile(r"[^A-Za-z0-9\-\[\]]")  # GitHub logins (and bot[bot] names)
_BACKTICKS = re.compile(r"`+")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plain(text: str) -> str:
    """``text`` shown literally in Markdown: one line, punctuation escaped, no HTML tags."""
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", _one_line(text))
    return escaped.replace("&", "&amp;").replace("\\<", "&lt;").replace("\\>", "&gt;")


def code(text: str, *, cell: bool = False) -> str:
    """``text`` as an inline code span that nothing inside can close; ``cell``: inside a table."""
    flat = _one_line(text)
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {flat} " if flat.startswith("`") or flat.endswith("`") else flat
    span = f"{fence}{padded}{fence}"
    # GitHub splits table cells at | even inside code spans; \| keeps it in the cell.
    return span.replace("|", "\\|") if cell else span


def marker(comparison_id: int) -> str:
    """The hidden marker that finds the bot's comment of a comparison again."""
    return f"<!-- perftrack:comparison:{comparison_id} -->"


def reply_marker(row_id: int) -> str:
    """The hidden marker of a reply (outbox row ``row_id``): found again when its creation's answer
    was lost, so it is never posted twice."""
    return f"<!-- perftrack:reply:{row_id} -->"


def comparison_link(public_url: str | None, comparison_id: int) -> str | None:
    """The dashboard page of a comparison, when the dashboard's public URL is known."""
    return f"{public_url.rstrip('/')}/comparisons/{comparison_id}" if public_url else None


def render_comment(
    view: ComparisonView,
    *,
    public_url: str | None,
    diagnoses: Mapping[tuple[int, int], Sequence[Finding]] | None = None,
) -> str:
    """The whole comment: state, one table per hardware kind with why each changed result changed
    (the first findings of its diagnosis, keyed by case id and hardware kind id), compile counters,
    command, candidates."""
    comparison = view.comparison
    lines = [
        marker(comparison.id),
        f"### perftrack: comparison {comparison.id} — {_STATE[comparison.state]}{_output_headline(view)}",
        "",
    ]
    link = comparison_link(public_url, comparison.id)
    if link:
        lines += [f"Details: [{link}]({link})", ""]
    lines += render_tables(view, public_url=public_url, diagnoses=diagnoses)
    lines += [
        "Values are median denoise step times (ms), head vs base over interleaved rounds.",
        "",
        *render_request(comparison),
    ]
    return "\n".join(lines) + "\n"


def render_tables(
    view: ComparisonView,
    *,
    public_url: str | None,
    diagnoses: Mapping[tuple[int, int], Sequence[Finding]] | None = None,
) -> list[str]:
    """The lines of one table per hardware kind (a row per case: base, head, change, interval,
    verdict, rounds), each result's notes and why it changed, and the compile counters: what the
    comment and the check run's summary both show."""
    lines: list[str] = []
    by_hardware: dict[str, list[ResultView]] = {}
    for result in view.results:
        by_hardware.setdefault(result.result.hardware_kind.name, []).append(result)
    for hardware, results in by_hardware.items():
        lines += [
            f"#### {plain(hardware)}",
            "",
            "| case | base | this PR | change | 95 % CI | verdict | rounds |",
            "|---|---:|---:|---:|---|---|---:|",
        ]
        lines += [_row(result, public_url) for result in results]
        lines.append("")
        notes = [_note(result) for result in results if result.result.note]
        notes += [_output_line(result.result) for result in results if result.result.output_status]
        notes += [why for result in results if (why := _why(result, diagnoses or {}))]
        lines += notes
        if notes:
            lines.append("")
    counters = [line for result in view.results if (line := _compile_counters(result))]
    if counters:
        lines += ["**Compile counters differ between the arms:**", "", *counters, ""]
    return lines


def render_request(comparison: Comparison) -> list[str]:
    """Who asked for the comparison, how, and the two candidates: a Markdown list."""
    return [
        f"- Command: {code(comparison.command or '/perf')}"
        + (f" by @{_NOT_LOGIN.sub('', comparison.requested_by)}" if comparison.requested_by else ""),
        # Markdown the bot composed (tracker/github/bot.py), kept on one line.
        *([f"- Cases: {_one_line(comparison.case_selection)}"] if comparison.case_selection else []),
        f"- Base: {_candidate(comparison.base_candidate)}",
        f"- This PR: {_candidate(comparison.head_candidate)}",
    ]


def _row(view: ResultView, public_url: str | None) -> str:
    result = view.result
    base = _ms(result.base_value)
    head = _ms(result.head_value)
    change = f"{result.change_pct:+.2f} %" if result.change_pct is not None else "—"
    if result.ci_low_pct is not None and result.ci_high_pct is not None:
        interval = f"[{result.ci_low_pct:+.2f}, {result.ci_high_pct:+.2f}] %"
    else:
        interval = "—"
    scheduled = len(view.rounds)
    rounds = f"{result.rounds_done}/{scheduled}"
    if public_url:
        runs = _run_links(view, public_url)
        if runs:
            rounds = f"{rounds} ({runs})"
    return f"| {code(result.case.slug, cell=True)} | {base} | {head} | {change} | {interval} | {_verdict(result)} | {rounds} |"


def _verdict(result: ComparisonResult) -> str:
    """The verdict cell: a changed output is never a plain improvement."""
    if result.output_status is not OutputStatus.CHANGED:
        return _VERDICT[result.verdict]
    mark = "🔴" if result.verdict is Verdict.REGRESSION else "🟠"
    return f"{mark} {result_label(result.verdict, result.output_status)}"


def _output_headline(view: ComparisonView) -> str:
    """`` — ⚠️ faster, but the output changed`` when any result's output changed beyond its tolerance."""
    results = [item.result for item in view.results]
    if not any(result.output_status is OutputStatus.CHANGED for result in results):
        return ""
    comparison = view.comparison
    label = comparison_label(comparison.state, [ResultOutcome(r.verdict, r.output_status) for r in results])
    return f" — ⚠️ {label if comparison.state is ComparisonState.DONE else 'output changed so far'}"


def _output_line(result: ComparisonResult) -> str:
    """``- `case`: output changed (PSNR 27.1 dB, SSIM 0.812)``."""
    return f"- {code(result.case.slug)}: {output_summary(result.output_status, result.output_psnr_db, result.output_ssim)}"


def _note(view: ResultView) -> str:
    return f"- {code(view.result.case.slug)}: {plain(view.result.note or '')}"


def _why(view: ResultView, diagnoses: Mapping[tuple[int, int], Sequence[Finding]]) -> str | None:
    """``- Why `case`: graph breaks rose 0 → 3 per run · …`` for a result that changed."""
    result = view.result
    if result.verdict not in _CHANGED:
        return None
    findings = diagnoses.get((result.case_id, result.hardware_kind_id), ())[:FINDINGS_IN_COMMENT]
    if not findings:
        return None
    return f"- Why {code(result.case.slug)}: " + " · ".join(plain(finding.summary) for finding in findings)


def _run_links(view: ResultView, public_url: str) -> str:
    base_url = public_url.rstrip("/")
    links = []
    for round_view in view.rounds:
        for label, arm in (("A", round_view.base), ("B", round_view.head)):
            if arm.run is not None:
                links.append(f"[{label}{round_view.round}]({base_url}/runs/{arm.run.id})")
    return " ".join(links)


def _compile_counters(view: ResultView) -> str | None:
    base = _median([round_view.base.run.graph_breaks for round_view in view.rounds if round_view.base.run])
    head = _median([round_view.head.run.graph_breaks for round_view in view.rounds if round_view.head.run])
    if base is None or head is None or base == head:
        return None
    hardware = view.result.hardware_kind.name
    return (
        f"- {code(view.result.case.slug)} on {plain(hardware)}: graph breaks {_count(base)} → {_count(head)}"
    )


def _median(values: Sequence[int | None]) -> float | None:
    known = [value for value in values if value is not None]
    return float(statistics.median(known)) if known else None


def _count(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _ms(value: float | None) -> str:
    return f"{value:.1f} ms" if value is not None else "—"


def _candidate(candidate: Candidate) -> str:
    parts = [f"`{candidate.base_commit.sha[:12]}`"]
    for patch in candidate.patches:
        if patch.pr_number is None:
            parts.append(f"`{patch.ref[:12]}`")
            continue
        _, pinned, sha = patch.ref.partition("@")  # refs/pull/N/head@SHA: the head measured
        parts.append(f"#{patch.pr_number}" + (f" at `{sha[:10]}`" if pinned else ""))
    return " + ".join(parts)
