"""Alert groups: one commit range that moves many series is one group (docs/groups.md), regrouped
when bisection narrows a range, triaged once for all its alerts, its state derived from theirs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session

from tests.tracker.views.alert_rows import T0, commit, output_alert, paired_rounds, stored_alert
from tracker.detection import bisection
from tracker.detection.confirmation import settle_confirmation
from tracker.detection.grouping import place
from tracker.detection.groups import GroupTriage, get_group, group_state, list_groups, triage_group
from tracker.enums import AlertConfirmation, AlertState, AlertStatus, Direction, Verdict
from tracker.errors import Conflict, InvalidInput
from tracker.models import Alert, AlertGroup

NOW = T0 + dt.timedelta(days=2)
GB300_CASE = "qwen-image-2.1-serve-gb300"
WAN = "wan2.2-t2v-a14b"


def grouped(session: Session, index: int, **fields: Any) -> Alert:
    """A stored alert placed by the rule, as detection places each alert it opens."""
    alert = stored_alert(session, index, **fields)
    place(session=session, alert=alert, now=NOW)
    session.flush()
    return alert


def spanning(session: Session, low: int, high: int, **fields: Any) -> Alert:
    """An alert whose range is (commit ``low``, commit ``high``], placed by the rule."""
    alert = stored_alert(session, high, **fields)
    alert.last_good_commit = commit(session, low, case=fields.get("case", "qwen-image-t2i-1024"))
    place(session=session, alert=alert, now=NOW)
    session.flush()
    return alert


def test_one_range_on_many_cases_and_hardware_kinds_is_one_group(session: Session) -> None:
    alerts = [
        grouped(session, 5),
        grouped(session, 5, case=WAN),
        grouped(session, 5, case=GB300_CASE, hardware="GB300"),
    ]
    other = grouped(session, 9)

    group = alerts[0].group
    assert group is not None
    assert {alert.group_id for alert in alerts} == {group.id}
    assert {alert.hardware_kind.name for alert in group.alerts} == {"H200", "GB300"}
    assert other.group_id not in (None, group.id)
    assert group.first_bad_commit.sha == alerts[0].first_bad_commit.sha


def test_an_output_change_and_a_speed_up_of_one_commit_are_one_group(session: Session) -> None:
    faster = grouped(session, 4, direction=Direction.IMPROVEMENT, after_value=90.0, change_pct=-10.0)
    picture = output_alert(session, 4, case=WAN)
    place(session=session, alert=picture, now=NOW)

    assert faster.group is not None
    assert picture.group is faster.group
    assert [alert.id for alert in faster.group.alerts] == sorted([faster.id, picture.id])


def test_overlapping_ranges_share_a_group_that_narrows_to_the_overlap(session: Session) -> None:
    wide = spanning(session, 2, 8)
    narrow = spanning(session, 4, 6, case=WAN)
    apart = spanning(session, 8, 9, case=GB300_CASE, hardware="GB300")

    group = wide.group
    assert group is not None
    assert narrow.group is group
    assert group.last_good_commit is not None
    assert (group.last_good_commit.sha, group.first_bad_commit.sha) == (
        commit(session, 4).sha,
        commit(session, 6).sha,
    )
    assert apart.group is not None
    assert apart.group is not group


def test_a_suspect_joins_no_group_until_its_paired_rounds_confirm_it(session: Session) -> None:
    suspect = grouped(session, 5, confirmation=AlertConfirmation.PENDING)
    assert suspect.group is None
    rounds = paired_rounds(session, suspect, change_pct=3.4, interval=(2.9, 3.9), verdict=Verdict.REGRESSION)

    assert settle_confirmation(session=session, comparison=rounds, now=NOW) is suspect
    assert suspect.confirmation is AlertConfirmation.CONFIRMED
    assert suspect.group is not None


def test_a_refuted_suspect_stays_out_of_groups(session: Session) -> None:
    suspect = grouped(session, 5, confirmation=AlertConfirmation.PENDING)
    rounds = paired_rounds(session, suspect, change_pct=0.1, interval=(-0.3, 0.5), verdict=Verdict.NO_CHANGE)
    settle_confirmation(session=session, comparison=rounds, now=NOW)

    assert suspect.confirmation is AlertConfirmation.REFUTED
    assert suspect.group is None


def test_a_culprit_inside_the_group_s_range_makes_it_the_culprit_s_group(session: Session) -> None:
    first = spanning(session, 2, 8)
    second = spanning(session, 2, 8, case=WAN)
    group = first.group
    assert group is not None
    assert group.culprit_commit is None

    first.culprit_commit = commit(session, 5)
    place(session=session, alert=first, now=NOW)
    later = spanning(session, 4, 6, case=GB300_CASE, hardware="GB300")
    outside = spanning(session, 6, 8, case=GB300_CASE, hardware="GB300")

    assert first.group is group
    assert second.group is group
    assert group.culprit_commit is not None
    assert group.culprit_commit.sha == commit(session, 5).sha
    assert later.group is group  # its range holds the culprit
    assert outside.group is not group  # (6, 8] does not


def test_bisection_narrowing_one_alert_moves_it_alone_and_keeps_the_rest(session: Session) -> None:
    wide = spanning(session, 2, 8)
    narrower = spanning(session, 4, 8, case=WAN)
    group = wide.group
    assert group is not None
    assert narrower.group is group

    wide.culprit_commit = commit(session, 3)  # in wide's range, not in the group's (4, 8]
    place(session=session, alert=wide, now=NOW)
    session.flush()

    assert wide.group is not None
    assert wide.group is not group
    assert wide.group.culprit_commit is not None
    assert wide.group.culprit_commit.sha == commit(session, 3).sha
    assert [alert.id for alert in group.alerts] == [narrower.id]
    assert group.last_good_commit is not None
    assert group.last_good_commit.sha == commit(session, 4).sha


def test_a_group_left_empty_is_merged_into_the_culprit_s_group_with_its_triage(session: Session) -> None:
    known = grouped(session, 5, culprit_commit=commit(session, 5))
    culprit_group = known.group
    assert culprit_group is not None
    apart = spanning(session, 6, 8, case=WAN)
    old = apart.group
    assert old is not None
    assert old is not culprit_group
    triage_group(
        session=session,
        group_id=old.id,
        triage=GroupTriage(assignee="mei", issue_url="https://github.com/sgl-project/sglang/issues/7"),
        actor="admin",
        now=NOW,
    )

    apart.culprit_commit = commit(session, 5)  # a later bisection says otherwise: the same culprit
    place(session=session, alert=apart, now=NOW)
    session.flush()

    assert apart.group is culprit_group
    assert old.merged_into_id == culprit_group.id
    assert (culprit_group.assignee, culprit_group.issue_url) == ("mei", old.issue_url)
    assert old not in list_groups(session=session)


def test_bisection_naming_adjacent_commits_regroups_through_the_production_hook(session: Session) -> None:
    alert = spanning(session, 4, 5)
    other = grouped(session, 5, case=WAN, culprit_commit=commit(session, 5))
    alert.first_bad_commit.parents = [alert.last_good_commit.sha if alert.last_good_commit else ""]
    session.flush()

    bisection.start_bisection(session=session, alert=alert, now=NOW)

    assert alert.culprit_commit is not None
    assert alert.group is other.group


def test_one_triage_moves_every_alert_of_the_group(session: Session) -> None:
    alerts = [grouped(session, 5), grouped(session, 5, case=WAN)]
    group = alerts[0].group
    assert group is not None
    fix = commit(session, 7)

    triage_group(
        session=session,
        group_id=group.id,
        triage=GroupTriage(status="fixed", reason="reverted upstream", fixed_by=fix.sha[:9]),
        actor="admin",
        now=NOW,
    )

    assert [alert.status for alert in alerts] == [AlertStatus.FIXED, AlertStatus.FIXED]
    assert [alert.fixed_by_commit_id for alert in alerts] == [fix.id, fix.id]
    assert all(alert.events[-1].reason == "reverted upstream" for alert in alerts)
    assert group_state(group) is AlertState.FIXED


def test_a_group_triage_keeps_the_alert_rules(session: Session) -> None:
    alerts = [grouped(session, 5), grouped(session, 5, case=WAN, status=AlertStatus.INVALID)]
    group = alerts[0].group
    assert group is not None

    with pytest.raises(InvalidInput, match="say why"):
        triage_group(
            session=session, group_id=group.id, triage=GroupTriage(status="expected"), actor="a", now=NOW
        )
    triage_group(
        session=session, group_id=group.id, triage=GroupTriage(status="acknowledged"), actor="a", now=NOW
    )
    assert [alert.status for alert in alerts] == [AlertStatus.ACKNOWLEDGED, AlertStatus.INVALID]
    with pytest.raises(Conflict, match="no alert of group"):
        triage_group(
            session=session, group_id=group.id, triage=GroupTriage(status="acknowledged"), actor="a", now=NOW
        )
    with pytest.raises(InvalidInput, match="http"):
        triage_group(
            session=session,
            group_id=group.id,
            triage=GroupTriage(issue_url="javascript:alert(1)"),
            actor="a",
            now=NOW,
        )
    with pytest.raises(InvalidInput, match="goes with the status fixed"):
        triage_group(
            session=session,
            group_id=group.id,
            triage=GroupTriage(status="acknowledged", fixed_by="abcdef0"),
            actor="a",
            now=NOW,
        )


@pytest.mark.parametrize(
    ("statuses", "state"),
    [
        ((AlertStatus.FIXED, AlertStatus.OPEN), AlertState.OPEN),
        ((AlertStatus.FIXED, AlertStatus.ACKNOWLEDGED), AlertState.ACKNOWLEDGED),
        ((AlertStatus.INVALID, AlertStatus.EXPECTED), AlertState.EXPECTED),
        ((AlertStatus.FIXED, AlertStatus.INVALID), AlertState.FIXED),
    ],
)
def test_a_group_s_state_is_derived_from_its_alerts(
    session: Session, statuses: tuple[AlertStatus, AlertStatus], state: AlertState
) -> None:
    first = grouped(session, 5, status=statuses[0])
    grouped(session, 5, case=WAN, status=statuses[1])
    assert first.group is not None
    assert group_state(first.group) is state


def test_groups_list_newest_first_filtered_by_state_model_and_hardware(session: Session) -> None:
    older = grouped(session, 3, case=WAN)
    newer = grouped(session, 6, case=GB300_CASE, hardware="GB300", status=AlertStatus.ACKNOWLEDGED)
    for alert in (older, newer):
        assert alert.group is not None
    older_group, newer_group = older.group, newer.group
    assert isinstance(older_group, AlertGroup)
    assert isinstance(newer_group, AlertGroup)
    older_group.created_at = T0
    newer_group.created_at = T0 + dt.timedelta(hours=1)
    session.flush()

    assert [group.id for group in list_groups(session=session)] == [newer_group.id, older_group.id]
    assert list_groups(session=session, state="acknowledged") == [newer_group]
    assert list_groups(session=session, state="open") == [older_group]
    assert list_groups(session=session, hardware="GB300") == [newer_group]
    assert list_groups(session=session, model=newer.case.model) == [newer_group]
    assert list_groups(session=session, model=older.case.model_family) == [older_group]
    with pytest.raises(InvalidInput, match="unknown group state"):
        list_groups(session=session, state="confirming")
    assert get_group(session=session, group_id=older_group.id) is older_group


def test_a_grouped_alert_that_turns_suspect_again_leaves_and_its_empty_group_goes(session: Session) -> None:
    alert = grouped(session, 5)
    group = alert.group
    assert group is not None
    alert.confirmation = AlertConfirmation.PENDING
    place(session=session, alert=alert, now=NOW)
    session.flush()

    assert alert.group is None
    assert list_groups(session=session) == []
