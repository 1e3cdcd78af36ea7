"""What the loop with people left behind, read as its people would read it: the alert groups from
the tracker's API, the bot's comments and check runs as the fake GitHub holds them, and the
notifications the receiver got. :mod:`perftrack.demo.loop_score` scores it, the report prints it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perftrack.demo.receiver import Received
from perftrack.fakegithub import FakeGithub
from tracker.github.culprits import group_marker


@dataclass(frozen=True)
class PullComments:
    """The bot's comments telling a group on one pull request (a culprit's), with how often they
    were edited."""

    number: int
    bodies: tuple[str, ...]
    edits: int


@dataclass(frozen=True)
class LoopView:
    """Groups (``GET /api/v1/groups``), the bot's comments on culprit pull requests and its check
    runs (the fake GitHub's), and the notifications received."""

    groups: tuple[Mapping[str, Any], ...]
    culprit_comments: tuple[PullComments, ...]
    check_runs: tuple[Mapping[str, Any], ...]
    notifications: tuple[Received, ...]


def collect(
    *,
    groups: Sequence[Mapping[str, Any]],
    fake: FakeGithub,
    culprit_pulls: Iterable[int],
    notifications: Sequence[Received],
) -> LoopView:
    """The view: ``culprit_pulls`` are the pull requests whose comments to read (the groups' and the
    script's culprits); a comment counts when it is the bot's and tells a group (its hidden marker),
    so the bot's ``/perf`` comments on a pull request that is also a culprit's are left out."""
    bot = fake.bot_user()["login"]
    numbers = set(culprit_pulls) | {
        int(group["pull_request"]["number"]) for group in groups if group.get("pull_request")
    }
    markers = [group_marker(int(group["id"])) for group in groups]
    comments = []
    for number in sorted(numbers):
        own = [
            comment
            for comment in fake.comments_on(number)
            if comment["user"]["login"] == bot and any(marker in comment["body"] for marker in markers)
        ]
        bodies = tuple(str(comment["body"]) for comment in own)
        comments.append(PullComments(number, bodies, sum(int(comment["edits"]) for comment in own)))
    check_runs = tuple(dict(run) for run in sorted(fake.check_runs.values(), key=lambda run: int(run["id"])))
    return LoopView(tuple(groups), tuple(comments), check_runs, tuple(notifications))


def comments_on(view: LoopView, number: int) -> PullComments:
    """The bot's comments on pull request ``number`` (none when it was not read)."""
    return next(
        (pull for pull in view.culprit_comments if pull.number == number), PullComments(number, (), 0)
    )


def check_run_of(view: LoopView, comparison_id: int) -> Mapping[str, Any] | None:
    """The check run of a comparison: its ``external_id`` is ``<pr number>:<comparison id>``."""
    runs = [run for run in view.check_runs if str(run.get("external_id", "")).endswith(f":{comparison_id}")]
    return runs[-1] if runs else None
