"""The answer to a batch: one line per item, a refusal worded and redacted as a single request's error is."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Request

from tracker.errors import InvalidInput
from tracker.ingest.batch import BatchItem, BatchOutcome
from web.errors import redact, status_for
from wire import MAX_ID, BatchItemOut, BatchOut


def batch_out(request: Request, items: Sequence[BatchItem], job_ids: Sequence[int | None] = ()) -> BatchOut:
    """``items`` as the API answers them; ``job_ids``: each item's job, in a runner's batch."""
    lines = [_item_out(request, item, job_ids[item.index] if job_ids else None) for item in items]
    return BatchOut(
        items=lines,
        stored=sum(item.outcome is BatchOutcome.STORED for item in items),
        duplicate=sum(item.outcome is BatchOutcome.DUPLICATE for item in items),
        refused=sum(item.outcome is BatchOutcome.REFUSED for item in items),
    )


def job_ids_sent(items: Sequence[object]) -> list[int | None]:
    """The job each raw item of a runner's batch names, so even a refused item's line says which it was."""
    named = [item.get("job_id") if isinstance(item, dict) else None for item in items]
    return [job_id if type(job_id) is int and 0 < job_id <= MAX_ID else None for job_id in named]


def _item_out(request: Request, item: BatchItem, job_id: int | None) -> BatchItemOut:
    error = item.error
    return BatchItemOut(
        index=item.index,
        outcome=item.outcome.value,
        job_id=job_id,
        run_id=item.run_id,
        reason=None if error is None else redact(request, str(error)),
        field=error.field if isinstance(error, InvalidInput) else None,
        error_status=None if error is None else status_for(error),
        warnings=list(item.warnings),
    )
