"""The demo's scorecard: each planted change found or missed, with its culprit, and false alerts.

Scored from what a user reads, ``GET /api/v1/alerts`` on the demo's tracker (suspects that paired
rounds refuted are not alerts and are not listed there), against the toy history's script:

* a **regression** (incidents 1 and 2) is found in a case when an alert of that case, in the
  regression direction, names its commit as culprit (or as first bad commit, when adjacent);
* the **speed-up** and the **fixes** are found when an improvement alert names their commit, or
  a regression alert says it was fixed by it;
* an alert whose culprit (first bad commit without one) is a commit scripted as neutral, or a
  planted commit in a case it does not affect, or in the wrong direction, is a **false alert**.

A commit affects a case when the case runs with every flag the commit's effect needs. Where its
effect is small by design (``small_with``: the custom-op fix in the offload case, +1 to -5 %
beside incident 2, near the 2 % threshold), it is *not expected*: an alert for it counts as found,
none is not a miss.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
class Scorecard:
    """Planted changes with found/missed, and the alerts nothing planted explains."""

    planted: tuple[Planted, ...]
    false_alerts: tuple[FalseAlert, ...]

    @property
    def missed(self) -> tuple[Planted, ...]:
        """Expected planted changes not found."""
        return tuple(item for item in self.planted if item.expected and not item.found)

    @property
    def perfect(self) -> bool:
        """Every planted change found and no false alert."""
        return not self.missed and not self.false_alerts


def score(
    commits: Sequence[ToyCommit], case_flags: Mapping[str, Iterable[str]], alerts: Sequence[Mapping[str, Any]]
) -> Scorecard:
    """Score the alerts (as ``GET /api/v1/alerts`` lists them) against the toy script.

    Parameters
    ----------
    commits
        The toy repository's main commits with their scripted kinds.
    case_flags
        Per case slug, the flags it runs with.
    alerts
        Alert objects from the API (``case``, ``direction``, ``status``, ``culprit_commit``,
        ``first_bad_commit``, ``fixed_by_commit``, ``id``).
    """
    by_sha = {commit.sha: commit for commit in commits}
    planted: list[Planted] = []
    explained: set[int] = set()
    for case, flags in case_flags.items():
        present = set(flags)
        for commit in commits:
            direction = _DIRECTION.get(commit.kind)
            if direction is None or not set(commit.needs_flags) <= present:
                continue
            how = ""
            for alert in alerts:
                if alert["case"] != case:
                    continue
                named = _named_commit(alert)
                if alert["direction"] == direction and named == commit.sha:
                    how = f"alert {alert['id']}: culprit {commit.sha[:7]} ({alert['status']})"
                    explained.add(int(alert["id"]))
                    break
                fixed_by = (alert.get("fixed_by_commit") or {}).get("sha")
                if direction == _IMPROVEMENT and fixed_by == commit.sha:
                    how = f"alert {alert['id']} fixed by {commit.sha[:7]}"
                    break
            small = bool(commit.small_with) and set(commit.small_with) <= present
            planted.append(Planted(case, commit, direction, bool(how), how or "missed", expected=not small))
    false_alerts: list[FalseAlert] = []
    for alert in alerts:
        if int(alert["id"]) in explained:
            continue
        named = _named_commit(alert)
        blamed = by_sha.get(named or "")
        title = blamed.title if blamed else (named or "?")
        if blamed is None or blamed.kind in (ChangeKind.NEUTRAL, ChangeKind.BASELINE):
            why = "a neutral commit"
        elif not set(blamed.needs_flags) <= set(case_flags.get(str(alert["case"]), ())):
            why = f"{blamed.kind.value}, which does not affect this case"
        else:
            why = f"{blamed.kind.value}, in the wrong direction or raised twice"
        false_alerts.append(
            FalseAlert(int(alert["id"]), str(alert["case"]), str(alert["direction"]), title, why)
        )
    return Scorecard(tuple(planted), tuple(false_alerts))


def _named_commit(alert: Mapping[str, Any]) -> str | None:
    """The commit an alert blames: its culprit once bisected, else its first bad commit."""
    for key in ("culprit_commit", "first_bad_commit"):
        commit = alert.get(key)
        if commit:
            return str(commit["sha"])
    return None
