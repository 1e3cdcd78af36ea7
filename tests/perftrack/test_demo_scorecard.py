"""The demo's scorecard: planted changes found or missed, false alerts named (hand-built alerts)."""

from __future__ import annotations

from typing import Any

from perftrack.demo.scorecard import score
from runners.toy import SUITE_TEMPLATE, ChangeKind, ToyCommit

COMPILE = ("enable-torch-compile", "warmup")
OFFLOAD = (*COMPILE, "offload-during-compile")
CASES = {"compile": COMPILE, "offload": OFFLOAD}


def commit(sha: str, kind: ChangeKind, needs: tuple[str, ...] = ()) -> ToyCommit:
    return ToyCommit(
        sha=sha * 40,
        title=f"commit {sha}",
        kind=kind,
        effect="",
        branch="main",
        source=sha,
        needs_flags=needs,
    )


HISTORY = (
    commit("1", ChangeKind.BASELINE),
    commit("2", ChangeKind.NEUTRAL),
    commit("3", ChangeKind.REGRESSION, ("enable-torch-compile",)),
    commit("4", ChangeKind.REGRESSION, OFFLOAD),
    commit("5", ChangeKind.FIX, OFFLOAD),
)


def alert(number: int, case: str, direction: str, culprit: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "id": number,
        "case": case,
        "direction": direction,
        "status": extra.get("status", "open"),
        "culprit_commit": {"sha": culprit * 40} if culprit else None,
        "first_bad_commit": {"sha": extra.get("first_bad", culprit or "2") * 40},
        "fixed_by_commit": {"sha": extra["fixed_by"] * 40} if "fixed_by" in extra else None,
    }


def test_exactly_the_planted_changes_is_perfect() -> None:
    card = score(
        HISTORY,
        CASES,
        [
            alert(1, "compile", "regression", "3"),
            alert(2, "offload", "regression", "3"),
            alert(3, "offload", "regression", "4", status="fixed", fixed_by="5"),
        ],
    )
    assert [(item.case, item.commit.sha[0], item.found) for item in card.planted] == [
        ("compile", "3", True),
        ("offload", "3", True),
        ("offload", "4", True),
        ("offload", "5", True),  # the regression says it was fixed by it
    ]
    assert card.false_alerts == ()
    assert card.perfect


def test_a_neutral_culprit_an_unaffected_case_and_a_missed_change_are_named() -> None:
    card = score(
        HISTORY,
        CASES,
        [
            alert(1, "compile", "regression", None, first_bad="2"),  # never bisected to 3
            alert(2, "compile", "regression", "4"),  # incident 2 does not affect the compile case
            alert(3, "offload", "regression", "3"),
        ],
    )
    assert [(item.case, item.commit.sha[0]) for item in card.missed] == [
        ("compile", "3"),
        ("offload", "4"),
        ("offload", "5"),
    ]
    assert [(item.alert_id, item.why) for item in card.false_alerts] == [
        (1, "a neutral commit"),
        (2, "regression, which does not affect this case"),
    ]
    assert not card.perfect


def test_a_change_small_by_design_in_a_case_is_optional_there() -> None:
    small_fix = ToyCommit(
        sha="6" * 40,
        title="commit 6",
        kind=ChangeKind.FIX,
        effect="",
        branch="main",
        source="6",
        needs_flags=COMPILE,
        small_with=OFFLOAD,
    )
    history = (*HISTORY[:3], small_fix)
    alerts = [alert(1, "compile", "regression", "3"), alert(2, "offload", "regression", "3")]
    card = score(history, CASES, [*alerts, alert(3, "compile", "improvement", "6")])
    [compile_fix, offload_fix] = [item for item in card.planted if item.commit is small_fix]
    assert (compile_fix.expected, compile_fix.found) == (True, True)
    assert (offload_fix.expected, offload_fix.found) == (False, False)  # not raised, not a miss
    assert card.perfect
    # Raised in the case where it is small: found, and not a false alert.
    both = score(
        history,
        CASES,
        [*alerts, alert(3, "compile", "improvement", "6"), alert(4, "offload", "improvement", "6")],
    )
    assert all(item.found for item in both.planted if item.commit is small_fix)
    assert both.false_alerts == ()
    # Where it is expected, no alert is a miss.
    missed = score(history, CASES, alerts)
    assert [(item.case, item.commit.sha[0]) for item in missed.missed] == [("compile", "6")]


def test_the_demo_finds_the_toy_suite_it_writes() -> None:
    # The demo runs outside the test suite (minutes); its one file path is checked here.
    assert SUITE_TEMPLATE.is_file()
    assert "{toy_repo}" in SUITE_TEMPLATE.read_text()
