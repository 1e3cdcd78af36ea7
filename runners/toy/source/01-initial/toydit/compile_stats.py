"""What torch.compile did, read from Dynamo's own counters.

* ``graph_breaks``: graph breaks Dynamo reported. It either splits the graph there and resumes
  after the break (``counters["graph_break"]``), or, when the break sits inside a loop, gives up on
  the whole frame and runs it eagerly; such a skipped frame counts as one break as well.
* ``unique_graphs``: FX graphs handed to the backend (``counters["stats"]["unique_graphs"]``).
* ``frames_compiled``: Python frames Dynamo converted, resume functions after a break included
  (``counters["frames"]["ok"]``); ``frames_skipped`` the ones it tried and gave up on.
* ``recompiles``: compilations of a frame that already had compiled code whose guards failed
  (Dynamo's compilation metrics with a ``recompile_reason``).
* ``ops_captured``: torch calls captured into graphs (``counters["stats"]["calls_captured"]``).

Counters are process-wide and survive ``torch._dynamo.reset()``; take a difference of two
snapshots for one request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch._dynamo.utils as dynamo_utils

# Dynamo keeps the last 64 compilation records by default; the toy compiles fewer frames than
# this, but a regression that recompiles in a loop must not make the count wrap.
dynamo_utils.set_compilation_metrics_limit(100_000)


@dataclass(frozen=True)
class DynamoCounters:
    """A snapshot (or a difference of two) of Dynamo's counters."""

    graph_breaks: int = 0
    unique_graphs: int = 0
    frames_compiled: int = 0
    recompiles: int = 0
    frames_skipped: int = 0
    ops_captured: int = 0

    def since(self, earlier: DynamoCounters) -> DynamoCounters:
        """What happened between ``earlier`` and this snapshot."""
        return DynamoCounters(
            **{f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)}
        )

    def as_dict(self) -> dict[str, int]:
        """Plain dict, for JSON."""
        return asdict(self)

    def summary(self) -> str:
        """The four headline counters as ``name=value`` pairs."""
        return (
            f"graph_breaks={self.graph_breaks} unique_graphs={self.unique_graphs} "
            f"frames_compiled={self.frames_compiled} recompiles={self.recompiles}"
        )


def snapshot() -> DynamoCounters:
    """Read Dynamo's counters now."""
    counters = dynamo_utils.counters
    frames = counters["frames"]
    skipped = frames["total"] - frames["ok"]
    recompiles = sum(1 for record in dynamo_utils.get_compilation_metrics() if record.recompile_reason)
    return DynamoCounters(
        graph_breaks=sum(counters["graph_break"].values()) + skipped,
        unique_graphs=counters["stats"]["unique_graphs"],
        frames_compiled=frames["ok"],
        recompiles=recompiles,
        frames_skipped=skipped,
        ops_captured=counters["stats"]["calls_captured"],
    )
