"""The graph breaks of an evidence run's log, compared between runs (pure).

The log is read by :func:`wire.torch_logs.parse_graph_breaks`, the one reader of
``TORCH_LOGS=graph_breaks`` records, which the runner counts its graph breaks with too. A break is
named by its site and reason (:attr:`GraphBreak.key`), so the same break in two runs compares equal.
"""

from __future__ import annotations

from collections.abc import Iterable

from wire.torch_logs import GraphBreak


def distinct_breaks(breaks: Iterable[GraphBreak]) -> list[GraphBreak]:
    """The breaks of a run, each site and reason once, in the order first seen."""
    seen: dict[tuple[str, str], GraphBreak] = {}
    for item in breaks:
        seen.setdefault(item.key, item)
    return list(seen.values())


def new_breaks(before: Iterable[GraphBreak], after: Iterable[GraphBreak]) -> list[GraphBreak]:
    """The breaks of ``after`` (distinct) that ``before`` does not have."""
    known = {item.key for item in before}
    return [item for item in distinct_breaks(after) if item.key not in known]
