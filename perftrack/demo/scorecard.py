"""The demo's scorecard: each planted change found or missed, with its culprit, and false alerts.

Scored from what a user reads, ``GET /api/v1/alerts`` on the demo's tracker (suspects that paired
rounds refuted are not alerts and are not listed there), against the toy history's script:

* a **regression** (incidents 1 and 2) is found in a case when an alert of that case, in the
  regression direction, names its commit as culprit (or as first bad commit, when adjacent);
* the **speed-up** and the **fixes** are found when an improvement alert names their commit, or
  a regression alert says it was fixed by it;
* a speed-up that **changes the picture** (``changes_output``: #103, merged image tokens) is found
  when both an improvement alert and an output alert (kind ``output``) name its commit, and its
  pull request's comparison says "faster, but the output changed";
* an alert whose culprit (first bad commit without one) is a commit scripted as neutral, or a
  planted commit in a case it does not affect, or in the wrong direction, is a **false alert**;
  so is an output alert on a commit that keeps the picture.

A commit affects a case when the case runs with every flag the commit's effect needs. Where its
effect is small by design (``small_with``: the custom-op fix in the offload case, +1 to -5 %
beside incident 2, near the 2 % threshold), it is *not expected*: an alert for it counts as found,
none is not a miss.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perftrack.demo.loop_score import LoopCheck
from runners.toy import ChangeKind, ToyCommit

_REGRESSION = "regression"
_IMPROVEMENT = "improvement"
_DIRECTION = {
    ChangeKind.REGRESSION: _REGRESSION,
    ChangeKind.FIX: _IMPROVEMENT,
    ChangeKind.SPEEDUP: _IMPROVEMENT,
}


@dataclass(frozen=True)
class Planted:
    """One planted change in one case, and what the demo made of it."""

    case: str
    commit: ToyCommit
    direction: str
    found: bool
    how: str
    expected: bool = True  # False: small by design in this case, found or not


@dataclass(frozen=True)
class FalseAlert:
    """An alert no planted change explains."""

    alert_id: int
    case: str
    direction: str
    culprit_title: str
    why: str


@dataclass(frozen=True)
class ChangeVerdict:
    """A pull request's comparison for a planted change of its own, and whether it said what it should."""

    command: str
    expected: str
    label: str

    @property
    def found(self) -> bool:
        """The comparison's verdict is the expected one."""
        return self.label == self.expected


@dataclass(frozen=True)
class Scorecard:
    """Planted changes with found/missed, and the alerts nothing planted explains."""

    planted: tuple[Planted, ...]
    false_alerts: tuple[FalseAlert, ...]
    verdicts: tuple[ChangeVerdict, ...] = ()
    loop: tuple[LoopCheck, ...] = ()  # the loop with people (perftrack.demo.loop_score)

    @property
    def missed(self) -> tuple[Planted, ...]:
        """Expected planted changes not found."""
        return tuple(item for item in self.planted if item.expected and not item.found)

    @property
    def perfect(self) -> bool:
        """Every planted change found, every change's verdict right, no false alert, and every row of
        the loop with people held."""
        return (
            not self.missed
            and not self.false_alerts
            and all(item.found for item in self.verdicts)
            and all(row.ok for row in self.loop)
        )


OUTPUT_CHANGED = "faster, but the output changed"


def score(
    commits: Sequence[ToyCommit],
    case_flags: Mapping[str, Iterable[str]],
    alerts: Sequence[Mapping[str, Any]],
    change_comparisons: Sequence[Mapping[str, Any]] = (),
) -> Scorecard:
    """Score the alerts (as ``GET /api/v1/alerts`` lists them) against the toy script.

    Parameters
    ----------
    commits
        The toy repository's main commits with their scripted kinds.
    case_flags
        Per case slug, the flags it runs with.
    alerts
        Alert objects from the API (``case``, ``kind``, ``direction``, ``status``, ``culprit_commit``,
        ``first_bad_commit``, ``fixed_by_commit``, ``id``).
    change_comparisons
        The comparisons of the pull requests that are changes of their own, as the API returns them.
    """
    by_sha = {commit.sha: commit for commit in commits}
    planted: list[Planted] = []
    explained: set[int] = set()
    speed = [alert for alert in alerts if alert.get("kind", "speed") != "output"]
    for case, flags in case_flags.items():
        present = set(flags)
        for commit in commits:
            direction = _DIRECTION.get(commit.kind)
            if direction is None or not set(commit.needs_flags) <= present:
                continue
            how = _speed_found(commit, case, direction, speed, explained)
            if commit.changes_output:
                how = _output_found(commit, case, alerts, explained, how)
            small = bool(commit.small_with) and set(commit.small_with) <= present
            planted.append(Planted(case, commit, direction, bool(how), how or "missed", expected=not small))
    false_alerts = [
        _false_alert(alert, by_sha, case_flags) for alert in alerts if int(alert["id"]) not in explained
    ]
    verdicts = tuple(
        ChangeVerdict(str(comparison.get("command", "")), OUTPUT_CHANGED, str(comparison.get("label", "")))
        for comparison in change_comparisons
    )
    return Scorecard(tuple(planted), tuple(false_alerts), verdicts)


def _speed_found(
    commit: ToyCommit, case: str, direction: str, alerts: Sequence[Mapping[str, Any]], explained: set[int]
) -> str:
    """How a speed alert of ``case`` names ``commit`` in ``direction`` ("" if none does)."""
    for alert in alerts:
        if alert["case"] != case:
            continue
        named = _named_commit(alert)
        if alert["direction"] == direction and named == commit.sha:
            explained.add(int(alert["id"]))
            return f"alert {alert['id']}: culprit {commit.sha[:7]} ({alert['status']})"
        fixed_by = (alert.get("fixed_by_commit") or {}).get("sha")
        if direction == _IMPROVEMENT and fixed_by == commit.sha:
            return f"alert {alert['id']} fixed by {commit.sha[:7]}"
    return ""


def _output_found(
    commit: ToyCommit, case: str, alerts: Sequence[Mapping[str, Any]], explained: set[int], speed_how: str
) -> str:
    """Both halves of a speed-up that changes the picture: "" unless the output alert is there too."""
    for alert in alerts:
        if alert["case"] == case and alert.get("kind") == "output" and _named_commit(alert) == commit.sha:
            explained.add(int(alert["id"]))
            summary = (alert.get("output") or {}).get("summary") or "output changed"
            return f"{speed_how} · output alert {alert['id']}: {summary}" if speed_how else ""
    return ""


def _false_alert(
    alert: Mapping[str, Any], by_sha: Mapping[str, ToyCommit], case_flags: Mapping[str, Iterable[str]]
) -> FalseAlert:
    """Why nothing planted explains ``alert``."""
    named = _named_commit(alert)
    blamed = by_sha.get(named or "")
    title = blamed.title if blamed else (named or "?")
    if alert.get("kind") == "output" and (blamed is None or not blamed.changes_output):
        why = "an output change at a commit that keeps the picture"
    elif blamed is None or blamed.kind in (ChangeKind.NEUTRAL, ChangeKind.BASELINE):
        why = "a neutral commit"
    elif not set(blamed.needs_flags) <= set(case_flags.get(str(alert["case"]), ())):
        why = f"{blamed.kind.value}, which does not affect this case"
    else:
        why = f"{blamed.kind.value}, in the wrong direction or raised twice"
    kind = "output" if alert.get("kind") == "output" else str(alert["direction"])
    return FalseAlert(int(alert["id"]), str(alert["case"]), kind, title, why)


def _named_commit(alert: Mapping[str, Any]) -> str | None:
    """The commit an alert blames: its culprit once bisected, else its first bad commit."""
    for key in ("culprit_commit", "first_bad_commit"):
        commit = alert.get(key)
        if commit:
            return str(commit["sha"])
    return None
