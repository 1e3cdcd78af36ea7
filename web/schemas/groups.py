"""Alert group shapes of the JSON API (docs/groups.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from tracker.detection.groups import GroupTriage, group_state
from tracker.diagnosis.facts import Finding
from tracker.models import AlertGroup
from tracker.vcs.pulls import pull_request_of
from tracker.views.alert_display import AlertDisplay
from web.schemas.alerts import AlertOut
from web.schemas.commits import CommitOut
from web.schemas.params import InModel


class PullRequestOut(BaseModel):
    """The pull request a culprit commit merged, as its title names it."""

    number: int
    url: str | None = Field(description="on GitHub; null when the repository is not a GitHub one")


class GroupOut(BaseModel):
    """Alerts of one repository that one commit range (or one culprit) moved, triaged once."""

    id: int
    url: str
    state: str = Field(
        description="derived from its alerts: open if any is open, else acknowledged if any is, "
        "else fixed, expected, invalid (the first any alert is in)"
    )
    repository: str
    culprit_commit: CommitOut | None = Field(description="named by bisection; null: only the range is known")
    pull_request: PullRequestOut | None = Field(
        description="the culprit's pull request, when its title names one"
    )
    last_good_commit: CommitOut | None = Field(
        description="the range every alert overlaps: exclusive low end"
    )
    first_bad_commit: CommitOut = Field(description="the range's inclusive high end")
    assignee: str
    issue_url: str | None
    merged_into_id: int | None = Field(description="the group this one's alerts moved to, if they did")
    alert_count: int
    cases: list[str]
    hardware: list[str]
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @classmethod
    def of(cls, group: AlertGroup) -> GroupOut:
        """From the ORM object and its alerts."""
        culprit = group.culprit_commit
        pull = pull_request_of(culprit) if culprit is not None else None
        last_good = group.last_good_commit
        return cls(
            id=group.id,
            url=f"/groups/{group.id}",
            state=group_state(group).value,
            repository=group.repository.name,
            culprit_commit=CommitOut.of(culprit) if culprit is not None else None,
            pull_request=PullRequestOut(number=pull.number, url=pull.url) if pull is not None else None,
            last_good_commit=CommitOut.of(last_good) if last_good is not None else None,
            first_bad_commit=CommitOut.of(group.first_bad_commit),
            assignee=group.assignee,
            issue_url=group.issue_url,
            merged_into_id=group.merged_into_id,
            alert_count=len(group.alerts),
            cases=sorted({alert.case.slug for alert in group.alerts}),
            hardware=sorted({alert.hardware_kind.name for alert in group.alerts}),
            created_at=group.created_at,
            updated_at=group.updated_at,
        )


class GroupDetailOut(GroupOut):
    """A group with its alerts, their sizes and diagnoses."""

    alerts: list[AlertOut]

    @classmethod
    def of_detail(
        cls,
        group: AlertGroup,
        displays: Mapping[int, AlertDisplay],
        diagnoses: Mapping[int, Sequence[Finding]],
    ) -> GroupDetailOut:
        """From the ORM object, each alert with its display and diagnosis."""
        return cls(
            **GroupOut.of(group).model_dump(),
            alerts=[
                AlertOut.of(alert, displays[alert.id], diagnoses.get(alert.id, ())) for alert in group.alerts
            ],
        )


class GroupTriageIn(InModel):
    """One triage for every alert of a group; a field left out is left as it is."""

    status: str | None = Field(
        default=None, description="acknowledged, fixed, invalid, expected, or open to reopen its alerts"
    )
    reason: str = Field(default="", max_length=4000, description="why; required except to acknowledge")
    fixed_by: str | None = Field(
        default=None, max_length=40, description="with status fixed: the fixing commit's sha (7 to 40 digits)"
    )
    assignee: str | None = Field(
        default=None, max_length=255, description="who looks into it; empty unassigns"
    )
    issue_url: str | None = Field(
        default=None, max_length=512, description="an issue or pull request, http(s); empty removes the link"
    )

    def triage(self) -> GroupTriage:
        """As the tracker takes it."""
        return GroupTriage(
            status=self.status,
            reason=self.reason,
            fixed_by=self.fixed_by,
            assignee=self.assignee,
            issue_url=self.issue_url,
        )
