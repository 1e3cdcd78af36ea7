"""Draining the spool: the uploads waiting there go to the tracker in batches (``POST /jobs/results``).

Each batch holds up to :data:`BATCH_ITEMS` uploads of one runner and about :data:`BATCH_BYTES` of
spool files (an upload larger than that goes alone). The tracker answers every upload on its own:
a stored or duplicate one leaves the spool, a refused one (the attempt lost its lease, the result
does not fit the format) is set aside under ``rejected/`` with the tracker's reason. What keeps
everything spooled is what kept a single upload spooled: the tracker unreachable or failing (after
the client's retries), or the token refused (401/403), which also ends this drain.

An older tracker that has no batch route (404, 405), a batch over the tracker's body limit (413),
or any other refusal of the batch as a whole sends each of its uploads alone, as before batches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from runners.client import LeaseLost, TrackerClient, TrackerError, TrackerUnavailable
from runners.spool import Spool, SpooledResult
from wire import BatchItemOut

logger = logging.getLogger("perftrack.runner")
BATCH_ITEMS = 50
BATCH_BYTES = 4 * 1024 * 1024  # well under the tracker's default 16 MiB body limit


def drain_spool(
    spool: Spool, client: TrackerClient, *, batch_items: int = BATCH_ITEMS, batch_bytes: int = BATCH_BYTES
) -> None:
    """Upload what waits in ``spool``, in batches; keep what the tracker cannot take yet."""
    for batch in _batches(spool.pending(), batch_items=batch_items, batch_bytes=batch_bytes):
        if not _send_batch(spool, client, batch):
            return


def _batches(
    pending: Sequence[SpooledResult], *, batch_items: int, batch_bytes: int
) -> Iterator[list[SpooledResult]]:
    """Consecutive uploads of one runner, at most ``batch_items`` and about ``batch_bytes`` together."""
    batch: list[SpooledResult] = []
    size = 0
    for item in pending:
        item_size = _size(item)
        full = len(batch) >= batch_items or size + item_size > batch_bytes
        if batch and (full or item.runner != batch[0].runner):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += item_size
    if batch:
        yield batch


def _size(item: SpooledResult) -> int:
    try:
        return item.path.stat().st_size
    except OSError:
        return 0


def _send_batch(spool: Spool, client: TrackerClient, batch: list[SpooledResult]) -> bool:
    """Send one batch; ``False`` when draining must stop (the tracker is away, or the token refused)."""
    try:
        answer = client.upload_batch(
            runner=batch[0].runner, uploads=[(item.job_id, item.payload) for item in batch]
        )
    except TrackerUnavailable as error:
        logger.warning("upload of %d spooled results deferred: %s", len(batch), error)
        return False
    except TrackerError as error:
        if error.status in (401, 403):
            _token_refused(batch[0], error)
            return False
        # No batch route (an older tracker), too large together, or refused whole: one at a time.
        logger.info("batch upload refused (%s); uploading its %d results one by one", error, len(batch))
        return _send_each(spool, client, batch)
    for item, line in zip(batch, answer.items, strict=True):
        if line.outcome == "refused":
            spool.reject(item, _refusal(line))
        else:
            spool.done(item)
    return True


def _refusal(line: BatchItemOut) -> str:
    """The reason kept beside a refused upload, worded as for a single upload's refusal."""
    if line.error_status == 409:
        return f"tracker refused the attempt: {line.reason}"
    return f"tracker refused the upload: {line.error_status}: {line.reason}"


def _send_each(spool: Spool, client: TrackerClient, batch: list[SpooledResult]) -> bool:
    """Each upload alone (``POST /jobs/{id}/result``); ``False`` when draining must stop."""
    for item in batch:
        try:
            client.upload(runner=item.runner, job_id=item.job_id, payload=item.payload)
        except TrackerUnavailable as error:
            logger.warning("upload of job %s deferred: %s", item.job_id, error)
            return False
        except LeaseLost as error:
            spool.reject(item, f"tracker refused the attempt: {error.detail}")
            continue
        except TrackerError as error:
            if error.status in (401, 403):
                _token_refused(item, error)
                return False
            spool.reject(item, f"tracker refused the upload: {error}")
            continue
        spool.done(item)
    return True


def _token_refused(item: SpooledResult, error: TrackerError) -> None:
    # A revoked or rotated token: the result stays spooled until the runner is restarted with a
    # valid one (the attempt decides then whether it still counts).
    logger.error("upload of job %s refused for this token (%s); kept in the spool", item.job_id, error)
