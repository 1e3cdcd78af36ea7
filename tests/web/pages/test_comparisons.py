"""The comparison pages and the order of the arms: each round says which arm ran first, as it
happened; an A/A calibration shows its order effect with its interval and what it means, on its
page and in the list; a calibration from before the order effect was measured says so."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.comparisons.ordered_runs import CASE, candidate, run_queue, second_faster
from tracker.comparisons.creation import create_calibration, create_comparison
from tracker.comparisons.labels import order_effect_summary
from tracker.enums import Arm
from tracker.models import Calibration, Job


def _text(fragment: str) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", fragment).split()))


def _rounds(page: str) -> list[tuple[str, str, str]]:
    """Per row of the rounds tables: round, data-first and the "Ran first" cell."""
    return [
        (number, first, _text(cell))
        for number, first, cell in re.findall(
            r'<tr data-case="[^"]*" data-hardware="[^"]*" data-round="(\d+)" data-first="(\w*)">'
            r'.*?<td class="nowrap first-arm">(.*?)</td>',
            page,
            re.S,
        )
    ]


def test_a_comparison_page_says_which_arm_ran_first_in_each_round(
    client: TestClient, session: Session
) -> None:
    comparison = create_comparison(
        session=session,
        base=candidate(session, "aaaaaaa"),
        head=candidate(session, "aaaaaaa", ["#43601"]),
        cases=[CASE],
        rounds=2,
        max_rounds=2,
    )
    session.commit()
    queued = client.get(f"/comparisons/{comparison.id}").text
    assert _rounds(queued) == [("1", "", "not started"), ("2", "", "not started")]
    run_queue(session, second_faster(0.0))
    session.commit()
    page = client.get(f"/comparisons/{comparison.id}").text
    assert _rounds(page) == [
        ("1", "base", "base (A), then head (B)"),
        ("2", "head", "head (B), then base (A)"),
    ]
    assert "alternating order (A B, then B A, ...)" in page
    assert "Order effect" not in page  # a PR comparison measures none
    assert "interleaved rounds in alternating order A B / B A, ms per denoise step" in _text(page)  # Markdown


def test_a_calibration_page_shows_the_order_effect_and_what_it_means(
    client: TestClient, session: Session
) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=2
    )
    flagged: set[int] = set()

    def first_base_throttled(job: Job) -> bool:
        if job.comparison_round == 1 and job.arm is Arm.BASE and not flagged:
            flagged.add(job.id)
            return True
        return False

    run_queue(session, second_faster(-3.0), flag=first_base_throttled)
    session.commit()
    page = client.get(f"/comparisons/{comparison.id}").text
    # Round 1's base was re-run after everything else: head ran first in both rounds.
    assert [first for _, first, _ in _rounds(page)] == ["head", "head"]
    calibration = session.scalars(select(Calibration)).one()
    assert calibration.order_effect_pct is not None
    assert calibration.order_effect_low_pct is not None
    assert calibration.order_effect_high_pct is not None
    shown = (
        f"second run {calibration.order_effect_pct:+.1f} % "
        f"[{calibration.order_effect_low_pct:+.1f}, {calibration.order_effect_high_pct:+.1f}]"
    )
    assert calibration.order_effect_pct == pytest.approx(-3.0, abs=0.5)
    row = re.search(r'<tr data-case="' + CASE + r'" data-hardware="H200">(.*?)</tr>', page, re.S)
    assert row is not None
    assert shown in _text(row.group(1))
    sentences = re.search(r'<ul class="order-effects">(.*?)</ul>', page, re.S)
    assert sentences is not None
    assert _text(sentences.group(1)) == order_effect_summary(
        calibration.order_effect_pct,
        calibration.order_effect_low_pct,
        calibration.order_effect_high_pct,
        calibration.threshold_pct,
    )
    listed = client.get("/comparisons").text
    row = re.search(rf'<tr data-comparison="{comparison.id}">(.*?)</tr>', listed, re.S)
    assert row is not None
    assert shown in _text(row.group(1))


def test_a_calibration_from_before_the_order_effect_says_it_was_not_measured(
    client: TestClient, session: Session
) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=2
    )
    run_queue(session, second_faster(0.0))
    calibration = session.scalars(select(Calibration)).one()
    calibration.order_effect_pct = calibration.order_effect_low_pct = calibration.order_effect_high_pct = None
    session.commit()
    page = client.get(f"/comparisons/{comparison.id}").text
    row = re.search(r'<tr data-case="' + CASE + r'" data-hardware="H200">(.*?)</tr>', page, re.S)
    assert row is not None
    assert "not measured" in _text(row.group(1))
    assert "The second run of a round was" not in page  # no sentence about what was not measured
    assert 'class="order-effect"' not in client.get("/comparisons").text
