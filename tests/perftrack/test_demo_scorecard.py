"""The demo's scorecard: planted changes found or missed, false alerts named (hand-built alerts), and
the rows of the loop with people (hand-built groups, comments, check runs and notifications)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Console

from perftrack.demo.loop_report import print_loop
from perftrack.demo.loop_score import expected_conclusion, loop_checks
from perftrack.demo.loop_view import LoopView, PullComments, collect
from perftrack.demo.receiver import JSON_PATH, SLACK_PATH, Received
from perftrack.demo.report import print_scorecard
from perftrack.demo.scorecard import score
from runners.toy import SUITE_TEMPLATE, ChangeKind, ToyCommit
from tests.fakes.fake_github import FakeGithub
from tracker.github.culprits import group_marker
from tracker.settings import CheckPolicy

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


def planted_alerts() -> list[dict[str, Any]]:
    """The alerts a perfect run raises: incident 1 in both cases, incident 2 (fixed) in offload."""
    return [
        alert(1, "compile", "regression", "3"),
        alert(2, "offload", "regression", "3"),
        alert(3, "offload", "regression", "4", status="fixed", fixed_by="5"),
    ]


def test_exactly_the_planted_changes_is_perfect() -> None:
    card = score(HISTORY, CASES, planted_alerts())
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


# --- The loop with people: rows scored from the groups API, the fake GitHub and the receiver. ---

LOOP_CASES = ("compile", "offload")
CULPRIT_1 = ToyCommit("a" * 40, "Fused kernel (#87)", ChangeKind.REGRESSION, "", "main", "a", incident=1)
CULPRIT_2 = ToyCommit("b" * 40, "Offload hooks (#94)", ChangeKind.REGRESSION, "", "main", "b", incident=2)
LOOP_HISTORY = (commit("1", ChangeKind.BASELINE), CULPRIT_1, CULPRIT_2)
POLICY = CheckPolicy()


def group(number: int, culprit: ToyCommit, cases: tuple[str, ...]) -> dict[str, Any]:
    return {
        "id": number,
        "culprit_commit": {"sha": culprit.sha, "title": culprit.title},
        "pull_request": None,
        "merged_into_id": None,
        "alert_count": len(cases),
        "cases": list(cases),
        "state": "open",
    }


def comparison(
    number: int, pr: int, *, label: str, verdicts: tuple[str, ...], changed: bool = False
) -> dict[str, Any]:
    output = {"status": "changed" if changed else "identical"}
    results = [{"verdict": verdict, "output": output} for verdict in verdicts]
    return {
        "id": number,
        "pr_number": pr,
        "state": "done",
        "command": "/perf",
        "label": label,
        "results": results,
    }


def check_run(comparison_id: int, pr: int, conclusion: str | None) -> dict[str, Any]:
    status = "completed" if conclusion else "in_progress"
    return {
        "id": comparison_id,
        "external_id": f"{pr}:{comparison_id}",
        "status": status,
        "conclusion": conclusion,
    }


def received(path: str, event: str, verified: bool | None) -> Received:
    return Received(path, event, f"{event} title", verified)


def view(**changes: Any) -> LoopView:
    """A loop that held: one group per incident, one comment each, check runs as their verdicts,
    a confirmation and a nightly summary on both subscriptions, all signed right."""
    held = LoopView(
        groups=(group(1, CULPRIT_1, LOOP_CASES), group(2, CULPRIT_2, ("offload",))),
        culprit_comments=(PullComments(87, ("tells #87",), 2), PullComments(94, ("tells #94",), 0)),
        check_runs=(check_run(5, 102, "success"), check_run(6, 103, "failure")),
        notifications=tuple(
            received(path, event, True if path == JSON_PATH else None)
            for event in ("alert.confirmed", "nightly.summary")
            for path in (SLACK_PATH, JSON_PATH)
        ),
    )
    return replace(held, **changes)


COMPARISONS = (
    comparison(5, 102, label="faster", verdicts=("improvement", "no_change")),
    comparison(6, 103, label="faster, but the output changed", verdicts=("improvement",), changed=True),
)


def rows(loop: LoopView) -> list[tuple[str, bool]]:
    return [(row.what, row.ok) for row in loop_checks(loop, LOOP_HISTORY, LOOP_CASES, COMPARISONS, POLICY)]


def test_a_loop_that_held_scores_every_row() -> None:
    checks = loop_checks(view(), LOOP_HISTORY, LOOP_CASES, COMPARISONS, POLICY)
    assert [row.ok for row in checks] == [True] * 6
    assert [row.what.split(" ")[0] for row in checks] == [
        "incident",
        "incident",
        "incident",
        "/perf",
        "/perf",
        "receiver",
    ]
    assert checks[0].seen == "group 1: 2 alerts in compile, offload"
    assert checks[1].seen == "#87: 1 comment(s), 2 edit(s)"
    card = score(HISTORY, CASES, planted_alerts())
    assert replace(card, loop=checks).perfect


def test_incident_1_split_by_case_is_not_one_group() -> None:
    split = view(groups=(group(1, CULPRIT_1, ("compile",)), group(3, CULPRIT_1, ("offload",))))
    assert rows(split)[0] == ("incident 1 is one group across both toy cases", False)
    one_case = view(groups=(group(1, CULPRIT_1, ("compile",)),))
    assert rows(one_case)[0][1] is False
    merged = group(3, CULPRIT_1, ("offload",)) | {"merged_into_id": 1}
    assert rows(view(groups=(group(1, CULPRIT_1, LOOP_CASES), merged)))[0][1] is True  # moved: not a second


def test_a_second_comment_or_none_on_a_culprit_pr_fails_its_row() -> None:
    twice = view(culprit_comments=(PullComments(87, ("one", "two"), 0), PullComments(94, ("tells #94",), 0)))
    assert [ok for _, ok in rows(twice)[1:3]] == [False, True]
    untold = view(culprit_comments=(PullComments(87, ("tells #87",), 0),))
    assert [ok for _, ok in rows(untold)[1:3]] == [True, False]


def test_a_check_run_must_be_completed_with_its_verdicts_conclusion() -> None:
    wrong = view(check_runs=(check_run(5, 102, "failure"), check_run(6, 103, "failure")))
    assert [ok for _, ok in rows(wrong)[3:5]] == [False, True]
    running = view(check_runs=(check_run(5, 102, None), check_run(6, 103, "failure")))
    assert rows(running)[3][1] is False
    missing = view(check_runs=(check_run(5, 102, "success"),))
    assert rows(missing)[4][1] is False


def test_the_policy_gives_each_verdict_its_conclusion() -> None:
    assert expected_conclusion(COMPARISONS[0], POLICY) == "success"
    assert expected_conclusion(COMPARISONS[1], POLICY) == "failure"  # the output changed
    assert (
        expected_conclusion(comparison(7, 1, label="", verdicts=("no_change", "inconclusive")), POLICY)
        == "neutral"
    )
    assert expected_conclusion(comparison(7, 1, label="", verdicts=("regression",)), POLICY) == "failure"
    assert expected_conclusion({"state": "running"}, POLICY) is None
    assert expected_conclusion({"state": "cancelled"}, CheckPolicy(cancelled="skipped")) == "skipped"


def test_the_receiver_row_wants_a_confirmation_a_summary_and_no_bad_signature() -> None:
    forged = view(notifications=(*view().notifications, received(JSON_PATH, "nightly.summary", False)))
    assert rows(forged)[-1][1] is False
    no_summary = view(
        notifications=tuple(item for item in view().notifications if item.event != "nightly.summary")
    )
    assert rows(no_summary)[-1][1] is False
    slack_only = view(notifications=tuple(item for item in view().notifications if item.path == SLACK_PATH))
    assert rows(slack_only)[-1][1] is False  # nothing signed arrived: no signature was checked


def test_a_failed_loop_row_makes_the_scorecard_fall_short() -> None:
    checks = loop_checks(view(check_runs=()), LOOP_HISTORY, LOOP_CASES, COMPARISONS, POLICY)
    card = replace(score(HISTORY, CASES, []), planted=(), loop=checks)
    assert not card.perfect
    console = Console(record=True, width=200)
    print_scorecard(card, console)
    text = console.export_text()
    assert "FAILED · no check run for comparison 5" in text
    assert "4/6 loop rows held: the loop with people fell short" in text


def test_the_loop_section_prints_one_table_each() -> None:
    console = Console(record=True, width=220)
    print_loop(
        view(
            check_runs=(
                {
                    **check_run(5, 102, "success"),
                    "name": "perftrack/perf",
                    "head_sha": "c" * 40,
                    "output": {
                        "title": "Comparison 5: faster",
                        "summary": "<!-- marker -->\n#### cpu\n| case | change |\n|---|---:|\n"
                        "| `compile` | -31.2 % |\n| `offload` | -2.0 % |\n| `third` | 0 % |",
                    },
                },
            )
        ),
        console,
    )
    text = console.export_text()
    for shown in (
        "The loop with people",
        "Fused kernel (#87)",  # the group's culprit
        "2 in compile, offload",
        "1 (2 edits)",  # the comments on #87
        "tells #87",
        "perftrack/perf",  # the check run: name, head, the summary's first lines
        "ccccccc",
        "Comparison 5: faster",
        "| `compile` | -31.2 % |",
        "| `offload` | -2.0 % |",
        "nightly.summary",  # the notifications, by event
        "1/1 valid",
    ):
        assert shown in text
    assert "third" not in text  # the first two rows of the summary's table
    assert "| case |" not in text


def test_only_the_bots_comments_that_tell_a_group_count() -> None:
    fake = FakeGithub()
    bot = fake.bot_user()["login"]
    for number, login, body in (
        (87, bot, f"{group_marker(1)}\nalert group 1 names this pull request"),
        (87, "mira", f"{group_marker(1)} quoted by a person"),
        (102, bot, "<!-- perftrack:comparison:5 -->\n/perf's own comment"),
        (102, bot, f"{group_marker(2)}\nalert group 2"),
    ):
        fake.post_comment("toydit/toydit", number, body, login)
    seen = collect(
        groups=[group(1, CULPRIT_1, LOOP_CASES), group(2, CULPRIT_2, ("offload",))],
        fake=fake,
        culprit_pulls=[87, 102],
        notifications=[],
    )
    assert [(pull.number, len(pull.bodies)) for pull in seen.culprit_comments] == [(87, 1), (102, 1)]
