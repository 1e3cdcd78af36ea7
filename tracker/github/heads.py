"""Which head of a pull request a ``/perf`` comment asked for, when the bot carries it out later.

A comment is stored when it arrives and carried out afterwards, up to an hour later while GitHub
fails. A push in between must not be built under the maintainer's approval of the earlier head: the
first ``synchronize`` delivery received after the comment says in ``before`` which head the PR had
when the comment arrived, and that head is measured. With no push since, the PR's head when the
bot reads it is the one the comment saw (GitHub delivers both within about a second).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.github.events import CommentEvent, MalformedDelivery, PullRequestEvent, event_from_dict
from tracker.models import GithubDelivery


def head_when_asked(*, session: Session, event: CommentEvent, delivery_row: int | None) -> str | None:
    """The PR's head when the comment's delivery (row ``delivery_row``) arrived, when a push came
    after it; ``None``: no push since (or the delivery is not stored), the PR's head now is it."""
    if delivery_row is None:
        return None
    later = session.scalars(
        select(GithubDelivery)
        .where(
            GithubDelivery.id > delivery_row,
            GithubDelivery.event == "pull_request",
            GithubDelivery.action == "synchronize",
            GithubDelivery.payload.is_not(None),
        )
        .order_by(GithubDelivery.id)
    )
    for row in later:
        try:
            pushed = event_from_dict(row.payload or {})
        except MalformedDelivery:
            continue
        if (
            isinstance(pushed, PullRequestEvent)
            and pushed.repository.lower() == event.repository.lower()
            and pushed.pr_number == event.pr_number
            and pushed.before_sha is not None
        ):
            return pushed.before_sha
    return None
