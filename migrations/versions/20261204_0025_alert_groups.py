"""alert_groups: one commit range that moves many series is one group, triaged once

``alert_groups`` holds a repository's group: its culprit commit once bisection names one, else the
range (last good, first bad] every alert of it shares, the person it is assigned to and the issue
or pull request linked to it. ``alerts.group_id`` says which group an alert is in (NULL: a suspect,
not grouped until confirmed). A group an alert left for its culprit's group keeps its row with
``merged_into_id``, so its address still leads somewhere.

Alerts stored before this revision are grouped here by the rule of docs/groups.md, oldest first:
an alert whose culprit is known joins the group of that culprit; one without joins the first group
whose range overlaps its own (a culprit group's range is the culprit), which narrows to the
overlap. Migrations are frozen, so this pass is written out here rather than imported.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04 22:50:00.000000
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
SUSPECTS = ("pending", "refuted", "too_noisy")


def upgrade() -> None:
    op.create_table(
        "alert_groups",
        sa.Column("id", ID, nullable=False),
        sa.Column("repository_id", ID, nullable=False),
        sa.Column("culprit_commit_id", ID, nullable=True, comment="named by bisection; NULL: a range"),
        sa.Column("last_good_commit_id", ID, nullable=True, comment="range: exclusive low end"),
        sa.Column("first_bad_commit_id", ID, nullable=False, comment="range: inclusive high end"),
        sa.Column("assignee", sa.String(length=255), nullable=False, server_default="", comment="who"),
        sa.Column("issue_url", sa.String(length=512), nullable=True, comment="a linked issue or PR"),
        sa.Column("merged_into_id", ID, nullable=True, comment="the group its alerts moved to"),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["repository_id"], ["repositories.id"], name=op.f("fk_alert_groups_repository_id_repositories")
        ),
        sa.ForeignKeyConstraint(
            ["culprit_commit_id"], ["commits.id"], name=op.f("fk_alert_groups_culprit_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["last_good_commit_id"], ["commits.id"], name=op.f("fk_alert_groups_last_good_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["first_bad_commit_id"], ["commits.id"], name=op.f("fk_alert_groups_first_bad_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["merged_into_id"],
            ["alert_groups.id"],
            name=op.f("fk_alert_groups_merged_into_id_alert_groups"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_groups")),
    )
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_groups_repository_id"), ["repository_id"], unique=False)
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("group_id", ID, nullable=True, comment="NULL: a suspect, not grouped"))
        batch_op.create_foreign_key(
            batch_op.f("fk_alerts_group_id_alert_groups"),
            "alert_groups",
            ["group_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_index(batch_op.f("ix_alerts_group_id"), ["group_id"], unique=False)
    _backfill(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alerts_group_id"))
        batch_op.drop_constraint(batch_op.f("fk_alerts_group_id_alert_groups"), type_="foreignkey")
        batch_op.drop_column("group_id")
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_groups_repository_id"))
    op.drop_table("alert_groups")


class _Group:
    """A group being built: its repository, culprit or range, and its alerts' ids."""

    def __init__(self, repository_id: int, culprit: int | None, low: int | None, high: int) -> None:
        self.repository_id = repository_id
        self.culprit = culprit
        self.low = low
        self.high = high
        self.alerts: list[int] = []


def _backfill(bind: sa.Connection) -> None:
    """Group the confirmed alerts stored before this revision (suspects stay ungrouped)."""
    commits = {
        row.id: _aware(row.committed_at)
        for row in bind.execute(sa.text("SELECT id, committed_at FROM commits"))
    }
    rows = bind.execute(
        sa.text(
            "SELECT a.id, c.repository_id, a.culprit_commit_id, a.last_good_commit_id, a.first_bad_commit_id "
            "FROM alerts a JOIN commits c ON c.id = a.first_bad_commit_id "
            "WHERE a.confirmation NOT IN ('pending', 'refuted', 'too_noisy') ORDER BY a.created_at, a.id"
        )
    ).all()
    groups: list[_Group] = []
    for alert_id, repository_id, culprit, low, high in rows:
        group = _find(groups, commits, repository_id, culprit, low, high)
        if group is None:
            group = _Group(repository_id, culprit, None if culprit else low, culprit or high)
            groups.append(group)
        elif group.culprit is None:
            group.low = _later(commits, group.low, low)
            group.high = high if commits[high] < commits[group.high] else group.high
        group.alerts.append(alert_id)
    for group in groups:
        group_id = bind.execute(
            sa.text(
                "INSERT INTO alert_groups (repository_id, culprit_commit_id, last_good_commit_id, "
                "first_bad_commit_id, assignee) VALUES (:repository, :culprit, :low, :high, '') RETURNING id"
            ),
            {
                "repository": group.repository_id,
                "culprit": group.culprit,
                "low": group.low,
                "high": group.high,
            },
        ).scalar_one()
        bind.execute(
            sa.text("UPDATE alerts SET group_id = :group WHERE id IN :ids").bindparams(
                sa.bindparam("ids", expanding=True)
            ),
            {"group": group_id, "ids": group.alerts},
        )


def _find(
    groups: list[_Group],
    commits: dict[int, dt.datetime],
    repository: int,
    culprit: int | None,
    low: int | None,
    high: int,
) -> _Group | None:
    for group in groups:
        if group.repository_id != repository:
            continue
        if culprit is not None:
            if group.culprit == culprit:
                return group
        elif _overlap(commits, group, low, high):
            return group
    return None


def _overlap(commits: dict[int, dt.datetime], group: _Group, low: int | None, high: int) -> bool:
    if group.culprit is not None:
        at = commits[group.culprit]
        return (low is None or commits[low] < at) and at <= commits[high]
    return (low is None or commits[low] < commits[group.high]) and (
        group.low is None or commits[group.low] < commits[high]
    )


def _later(commits: dict[int, dt.datetime], one: int | None, other: int | None) -> int | None:
    if one is None or other is None:
        return other if one is None else one
    return one if commits[one] >= commits[other] else other


def _aware(value: dt.datetime | str) -> dt.datetime:
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
