"""Parse sglang's ``performance.log`` (JSON lines under ``SGLANG_PERF_LOG_DIR``).

sglang appends to this file for every non-warmup request, across runs, so one file may hold
many requests. Two line shapes exist:

* a request summary (tag ``pipeline_stage_metrics``): ``request_id``, ``stages: [{name,
  execution_time_ms}]``, ``steps: [ms, ...]`` (per denoising step), ``total_duration_ms``,
  ``memory_snapshots``; older versions wrote the stages only;
* one line per stage (tag ``pipeline_stage_metric``): ``request_id``, ``stage``,
  ``duration_ms``. These are gathered into one record per ``request_id``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from runners.parsing import _json
from runners.parsing.model import ParseError, PerfDump, StageTiming
from runners.parsing.perf_dump import record_from_object


def parse_performance_log(text: str) -> tuple[PerfDump, ...]:
    """Parse ``performance.log`` into one :class:`PerfDump` per request, in file order."""
    records: list[PerfDump] = []
    by_request: dict[str, int] = {}  # request_id -> index in records, for per-stage lines
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        at = f"performance.log line {number}: "
        try:
            decoded = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError(f"{at}not valid JSON at column {exc.colno}: {exc.msg}") from exc
        except RecursionError as exc:
            raise ParseError(f"{at}not valid JSON: nested too deeply") from exc
        data = _json.as_object(decoded, at.rstrip(": "))
        if "stage" in data and "duration_ms" in data and "stages" not in data:
            _add_stage_line(records, by_request, data, at)
        else:
            records.append(record_from_object(data, at=at, what="record"))
    if not records:
        raise ParseError("performance.log has no records")
    return tuple(records)


def parse_performance_log_file(path: str | Path) -> tuple[PerfDump, ...]:
    """Read and parse a ``performance.log`` file."""
    return parse_performance_log(Path(path).read_text(encoding="utf-8", errors="replace"))


def _add_stage_line(
    records: list[PerfDump], by_request: dict[str, int], data: dict[str, object], at: str
) -> None:
    """Fold a one-stage line into the record of its request (a new record for a new request)."""
    stage = StageTiming(
        _json.name(data["stage"], f"{at}stage"), _json.duration(data["duration_ms"], f"{at}duration_ms")
    )
    request_id = _json.optional_text(data.get("request_id"), f"{at}request_id")
    position = by_request.get(request_id) if request_id is not None else None
    if position is None:
        records.append(
            PerfDump(
                stages=(stage,),
                request_id=request_id,
                commit_hash=_json.optional_text(data.get("commit_hash"), f"{at}commit_hash"),
                tag=_json.optional_text(data.get("tag"), f"{at}tag"),
                timestamp=_json.optional_text(data.get("timestamp"), f"{at}timestamp"),
            )
        )
        if request_id is not None:
            by_request[request_id] = len(records) - 1
        return
    record = records[position]
    records[position] = replace(record, stages=(*record.stages, stage))
