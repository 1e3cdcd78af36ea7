"""``/comparisons`` and ``/comparisons/{id}``: A/B verdicts per case × hardware, as PRs quote them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from tracker.comparisons.calibration import calibrations_of
from tracker.comparisons.labels import result_label
from tracker.comparisons.output_checks import output_runs
from tracker.comparisons.summary import ComparisonView, comparison_view, list_comparisons
from tracker.diagnosis.loading import comparison_diagnoses
from tracker.enums import Arm
from tracker.models import Calibration, Comparison, ComparisonResult
from web.deps import SessionDep
from web.pages.templating import format_ms, format_pct, templates
from web.schemas.calibrations import OrderEffectOut
from web.schemas.comparisons import ComparisonDetailOut, ComparisonResultDetailOut
from web.schemas.params import ComparisonId

router = APIRouter()

VERDICT_LABELS = {
    "regression": "regression",
    "improvement": "improvement",
    "no_change": "no change",
    "inconclusive": "inconclusive",
    "pending": "pending",
}


def is_calibration(comparison: Comparison) -> bool:
    """An A/A comparison: a candidate against itself."""
    return comparison.base_candidate_id == comparison.head_candidate_id


def ci_text(low: float | None, high: float | None) -> str:
    """``[-7.4, -6.6] %``: the change's 95 % confidence interval."""
    if low is None or high is None:
        return "—"
    return f"[{low:+.1f}, {high:+.1f}] %"


def ran_first(first_arm: str | None) -> str:
    """Which arm of a round ran first, in words: ``base (A), then head (B)``, or ``not started``."""
    if first_arm is None:
        return "not started"
    return "base (A), then head (B)" if Arm(first_arm) is Arm.BASE else "head (B), then base (A)"


def markdown_table(detail: ComparisonDetailOut) -> str:
    """The results as the Markdown table maintainers paste into a PR."""
    head = f"#{detail.pr_number}" if detail.pr_number else detail.head.label or detail.head.sha[:7]
    intro = (
        f"**perftrack comparison {detail.id}**: `{detail.base.sha[:7]}` vs {head} "
        f"({detail.requests_per_round} requests per round, interleaved rounds in alternating order "
        "A B / B A, ms per denoise step)"
    )
    lines = [
        intro,
        "",
        "| case | hardware | base ms | head ms | change | 95 % CI | verdict | threshold | rounds | note |",
        "|---|---|---:|---:|---:|---|---|---:|---:|---|",
    ]
    for result in detail.results:
        threshold = f"{result.threshold_pct:.1f} %" if result.threshold_pct is not None else "—"
        note = result.note.replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {result.case} | {result.hardware} | {format_ms(result.base_ms, '')} | "
            f"{format_ms(result.head_ms, '')} | {format_pct(result.change_pct)} | "
            f"{ci_text(result.ci_low_pct, result.ci_high_pct)} | {result.label} | "
            f"{threshold} | {result.rounds_done} | {note} |"
        )
    return "\n".join(lines)


def _round_chart(result: ComparisonResultDetailOut) -> dict[str, Any]:
    return {
        "case": result.case,
        "hardware": result.hardware,
        "rounds": [
            {"round": item.round, "base_ms": item.base_ms, "head_ms": item.head_ms} for item in result.rounds
        ],
    }


def _calibrations(view: ComparisonView) -> list[tuple[Calibration, OrderEffectOut | None]]:
    """The calibrations an A/A comparison stored, each with its order effect (in words too)."""
    return [
        (item.calibration, OrderEffectOut.of(item.calibration))
        for item in view.results
        if item.calibration is not None
    ]


def _order_effects(comparisons: list[Comparison], session: SessionDep) -> dict[int, OrderEffectOut | None]:
    """The order effect each listed A/A comparison stored, by comparison result id (one query)."""
    stored = calibrations_of(
        session=session,
        comparison_ids=[comparison.id for comparison in comparisons if is_calibration(comparison)],
    )
    effects: dict[int, OrderEffectOut | None] = {}
    for comparison in comparisons:
        for result in comparison.results:
            effects[result.id] = OrderEffectOut.of(stored.get(_key(comparison, result)))
    return effects


def _key(comparison: Comparison, result: ComparisonResult) -> tuple[int, int, int]:
    return (comparison.id, result.case_id, result.hardware_kind_id)


@router.get("/comparisons", response_class=HTMLResponse)
def comparisons_page(request: Request, session: SessionDep) -> Response:
    """Every comparison, newest first: PR A/B runs and A/A calibrations (with their order effect)."""
    comparisons = list_comparisons(session=session)
    return templates.TemplateResponse(
        request,
        "comparisons.html",
        {
            "title": "Comparisons",
            "rows": [(comparison, is_calibration(comparison)) for comparison in comparisons],
            "order_effects": _order_effects(comparisons, session),
            "verdict_labels": VERDICT_LABELS,
            "result_label": result_label,  # a changed output is never a plain improvement
        },
    )


@router.get("/comparisons/{comparison_id}", response_class=HTMLResponse)
def comparison_page(request: Request, comparison_id: ComparisonId, session: SessionDep) -> Response:
    """One comparison: the PR table per hardware, head's output against base's (both thumbnails), why
    results changed, per-round charts and which arm ran first in each round, an A/A calibration's
    noise and order effect, candidates, Markdown to copy."""
    view = comparison_view(session=session, comparison_id=comparison_id)
    detail = ComparisonDetailOut.of(
        view,
        comparison_diagnoses(session=session, view=view),
        output_runs(session=session, comparison_ids=[comparison_id]),
    )
    by_hardware: dict[str, list[ComparisonResultDetailOut]] = {}
    for result in detail.results:
        by_hardware.setdefault(result.hardware, []).append(result)
    calibration = is_calibration(view.comparison)
    title = "Calibration" if calibration else "Comparison"
    return templates.TemplateResponse(
        request,
        "comparison.html",
        {
            "title": f"{title} {detail.id}" + (f" · PR #{detail.pr_number}" if detail.pr_number else ""),
            "comparison": detail,
            "is_calibration": calibration,
            "by_hardware": by_hardware,
            "charts": [_round_chart(result) for result in detail.results],
            "calibrations": _calibrations(view),
            "markdown": markdown_table(detail),
            "verdict_labels": VERDICT_LABELS,
            "ci_text": ci_text,
            "ran_first": ran_first,
        },
    )
