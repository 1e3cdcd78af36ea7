"""Retries of uploads stored before digests named their version: the same upload is the stored run
(one by one, in a batch, and as a job's attempt), a changed one is refused; new runs store version 2."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from tests.wire.test_digest import STORED_BEFORE_VERSIONS, upload
from tracker.errors import Conflict
from tracker.ingest.batch import BatchOutcome, ingest_results
from tracker.ingest.results import IngestLimits, ingest_job_result, ingest_result
from tracker.models import Run, Runner
from wire import ResultIn

LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
BODY: dict[str, Any] = {
    "case": "qwen-image-t2i-1024",
    "hardware": "H200",
    "commit": {"sha": "669a9bd", "title": "Baseline", "committed_at": "2026-03-01T10:00:00Z"},
    "step_times_ms": [250.0, 263.0, 264.0, 263.5, 263.9],
    "denoise_step_mean_ms": 263.7,
    "stages": [{"name": "DenoisingStage", "duration_ms": 13189.5}],
    "raw_log": "[03-01 10:00:00] [DenoisingStage] finished in 13.1895 seconds\n",
}
# BODY's digest as the code before versions computed and stored it (and, with "sha256:", the key
# it gave BODY sent without a key).
BODY_BEFORE_VERSIONS = "317f81d9ec4e21c149ccd89327a623bd753261f1867b4b861de49a4d96df83f6"


def stored_before_versions(session: Session, result: ResultIn, digest: str) -> Run:
    """``result`` stored as the code before versions stored it: its digest unprefixed hex."""
    run = ingest_result(session=session, result=result, limits=LIMITS).run
    assert run.payload_digest.startswith("v2:")
    run.payload_digest = digest
    session.flush()
    return run


def test_a_retry_of_an_upload_stored_before_versions_is_the_stored_run(session: Session) -> None:
    result = ResultIn.model_validate({**BODY, "idempotency_key": "stored-before-versions"})
    run = stored_before_versions(session, result, BODY_BEFORE_VERSIONS)

    again = ingest_result(session=session, result=result, limits=LIMITS)
    assert (again.created, again.run.id) == (False, run.id)
    [item] = ingest_results(session=session, results=[result], limits=LIMITS)
    assert (item.outcome, item.run_id) == (BatchOutcome.DUPLICATE, run.id)

    changed = result.model_copy(update={"denoise_step_mean_ms": 263.8})
    with pytest.raises(Conflict, match="stored-before-versions"):
        ingest_result(session=session, result=changed, limits=LIMITS)
    [item] = ingest_results(session=session, results=[changed], limits=LIMITS)
    assert item.outcome is BatchOutcome.REFUSED
    assert isinstance(item.error, Conflict)


def test_an_upload_without_a_key_keeps_the_key_it_had_before_versions(session: Session) -> None:
    result = ResultIn.model_validate(BODY)
    run = stored_before_versions(session, result, BODY_BEFORE_VERSIONS)
    assert run.idempotency_key == "sha256:" + BODY_BEFORE_VERSIONS

    again = ingest_result(session=session, result=result, limits=LIMITS)
    assert (again.created, again.run.id) == (False, run.id)
    [item] = ingest_results(session=session, results=[result], limits=LIMITS)
    assert (item.outcome, item.run_id) == (BatchOutcome.DUPLICATE, run.id)


def test_a_batch_compares_each_stored_key_in_its_own_version(session: Session) -> None:
    old = ResultIn.model_validate({**BODY, "idempotency_key": "stored-before-versions"})
    new = ResultIn.model_validate({**BODY, "idempotency_key": "stored-in-version-2", "e2e_ms": 14000.0})
    old_run = stored_before_versions(session, old, BODY_BEFORE_VERSIONS)
    new_run = ingest_result(session=session, result=new, limits=LIMITS).run
    items = ingest_results(session=session, results=[old, new], limits=LIMITS)
    assert [(item.outcome, item.run_id) for item in items] == [
        (BatchOutcome.DUPLICATE, old_run.id),
        (BatchOutcome.DUPLICATE, new_run.id),
    ]


@pytest.mark.parametrize("name", ["bare", "output"])
def test_a_job_attempt_stored_before_versions_answers_its_retry(session: Session, name: str) -> None:
    # The attempt's run stands in under the key a job's upload has (job 4242, attempt 2): a retry
    # is answered from the stored run before the job or its lease is looked at.
    planted = ResultIn.model_validate({**BODY, "idempotency_key": "job:4242:2"})
    run = stored_before_versions(session, planted, STORED_BEFORE_VERSIONS[name])
    runner = Runner(name="retrying")  # not stored: a retry never reaches the lease check

    again = ingest_job_result(session=session, runner=runner, job_id=4242, result=upload(name), limits=LIMITS)
    assert (again.created, again.run.id) == (False, run.id)
    with pytest.raises(Conflict, match="job:4242:2"):
        ingest_job_result(
            session=session, runner=runner, job_id=4242, result=upload(name, e2e_ms=900.0), limits=LIMITS
        )
