"""Batches: many imports, or many job attempts' results, in one request, and the per-item answer.

A batch body carries its items as raw JSON values: each is validated on its own (as
:class:`wire.ResultIn`, or :class:`JobResultItemIn`), so one bad item is refused with its reason
while the others are stored. The answer lists every item, in the order sent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

from wire.limits import MAX_BATCH_ITEMS, MAX_ID
from wire.results import JobResultIn

BatchOutcomeName = Literal["stored", "duplicate", "refused"]

_ITEMS = Field(
    max_length=MAX_BATCH_ITEMS,
    description=f"at most {MAX_BATCH_ITEMS} items, each validated on its own; a bad one is refused alone",
)


class ResultBatchIn(BaseModel):
    """``POST /api/v1/results/batch``: imports, each item what ``POST /api/v1/results`` takes."""

    model_config = ConfigDict(extra="forbid")

    results: Annotated[list[Any], _ITEMS]


class JobResultItemIn(BaseModel):
    """One job attempt's result in a runner's batch: the job, and what ``POST /jobs/{id}/result`` takes."""

    # Not an InModel: the result checks its own depth and NUL characters, as a single upload does.
    model_config = ConfigDict(extra="forbid")

    job_id: Annotated[int, Strict(), Field(ge=1, le=MAX_ID)]
    result: JobResultIn


class JobResultBatchIn(BaseModel):
    """``POST /api/v1/jobs/results``: results of job attempts leased by the acting runner."""

    model_config = ConfigDict(extra="forbid")

    results: Annotated[list[Any], _ITEMS]


class BatchItemOut(BaseModel):
    """What became of one item of a batch."""

    index: int = Field(description="the item's position in the request, 0 first")
    outcome: BatchOutcomeName = Field(
        description="stored: a new run; duplicate: stored before (same idempotency key, same content), "
        "nothing new; refused: nothing stored, `reason` says why"
    )
    job_id: int | None = Field(default=None, description="the item's job (a runner's batch)")
    run_id: int | None = Field(default=None, description="the run stored for the item (stored, duplicate)")
    reason: str | None = Field(default=None, description="why the item was refused, naming the field")
    field: str | None = Field(default=None, description="dotted path of the offending field, if one")
    error_status: int | None = Field(
        default=None,
        description="the status the single-result endpoint answers for the same refusal: 409 (the "
        "attempt's lease is gone, or an idempotency key reused for other content), 404, 413 or 422",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="what the item said about an already known commit that was not applied",
    )


class BatchOut(BaseModel):
    """Answer to a batch: every item in the order sent, and how many ended each way."""

    items: list[BatchItemOut]
    stored: int
    duplicate: int
    refused: int
