"""The runner protocol's wire format, defined once: what runners send the tracker and what it answers.

The runner builds its bodies from these classes and dumps them (``model_dump(mode="json",
exclude_none=True)``); the API validates the same classes and answers with them. A leaf: it imports
pydantic and the standard library only, so a runner, which reaches the tracker over HTTP alone, can
use it without importing ``tracker`` or ``web``.

- :mod:`wire.limits`: bounds (ids, patch refs, JSON depth, times).
- :mod:`wire.text`: text a body may carry (UTF-8 encodable, in every string and key), and its repair on read.
- :mod:`wire.fields`: field types (commit shas, times with offsets, patch refs, strict measurements).
- :mod:`wire.base`: the bases of request bodies, and readable validation messages.
- :mod:`wire.results`: uploads (a job attempt's result, an import) and their answer.
- :mod:`wire.digests`: an upload's digest, in versions of its canonical form (the rule for adding a field).
- :mod:`wire.leases`: register, claim (the job spec), heartbeat, release.
- :mod:`wire.outputs`: a run's seeded output (digest, shape, lossless PNG references).
- :mod:`wire.batches`: many imports or job attempts' results in one request, and the per-item answer.
- :mod:`wire.torch_logs`: torch.compile's records in the log a runner uploads
  (``TORCH_LOGS=graph_breaks,recompiles``): the runner counts them, the tracker names the graph breaks.
"""

from wire.base import InModel, RecordIn, describe_errors, validation_message
from wire.batches import (
    BatchItemOut,
    BatchOut,
    BatchOutcomeName,
    JobResultBatchIn,
    JobResultItemIn,
    ResultBatchIn,
)
from wire.digests import DIGEST_VERSION, Since, digest_version
from wire.fields import (
    AwareDatetime,
    Count,
    FreeFormObject,
    NonNegativeMs,
    PatchRef,
    PatchRefs,
    PositiveMs,
    Sha,
)
from wire.leases import (
    AttemptIn,
    ClaimedCandidate,
    ClaimedCarried,
    ClaimedCase,
    ClaimedRepository,
    JobSpecOut,
    LeaseOut,
    RunnerIn,
    RunnerOut,
)
from wire.limits import (
    EARLIEST_TIME,
    LATEST_TIME,
    MAX_BATCH_ITEMS,
    MAX_FAILURE_REASON,
    MAX_ID,
    MAX_INT32,
    MAX_JSON_DEPTH,
    MAX_PATCH_REF_LENGTH,
    MAX_PATCHES,
    PATCH_REF_PATTERN,
    SHA_PATTERN,
    json_too_deep,
    reject_deep_json,
)
from wire.outputs import MAX_REFERENCE_FRAMES, MAX_REFERENCE_SIDE, OutputFrameIn, OutputIn
from wire.results import (
    BuildInfo,
    CommitIn,
    CompileCounters,
    JobResultIn,
    MeasurementIn,
    ResultCreated,
    ResultIn,
    StageIn,
)
from wire.text import (
    Unencodable,
    escape_unencodable,
    reject_unencodable,
    replace_unencodable,
    unencodable_text,
)
from wire.torch_logs import CompileEvent, CompileEventKind, GraphBreak, compile_event, parse_graph_breaks

__all__ = [
    "DIGEST_VERSION",
    "EARLIEST_TIME",
    "LATEST_TIME",
    "MAX_BATCH_ITEMS",
    "MAX_FAILURE_REASON",
    "MAX_ID",
    "MAX_INT32",
    "MAX_JSON_DEPTH",
    "MAX_PATCHES",
    "MAX_PATCH_REF_LENGTH",
    "MAX_REFERENCE_FRAMES",
    "MAX_REFERENCE_SIDE",
    "PATCH_REF_PATTERN",
    "SHA_PATTERN",
    "AttemptIn",
    "AwareDatetime",
    "BatchItemOut",
    "BatchOut",
    "BatchOutcomeName",
    "BuildInfo",
    "ClaimedCandidate",
    "ClaimedCarried",
    "ClaimedCase",
    "ClaimedRepository",
    "CommitIn",
    "CompileCounters",
    "CompileEvent",
    "CompileEventKind",
    "Count",
    "FreeFormObject",
    "GraphBreak",
    "InModel",
    "JobResultBatchIn",
    "JobResultIn",
    "JobResultItemIn",
    "JobSpecOut",
    "LeaseOut",
    "MeasurementIn",
    "NonNegativeMs",
    "OutputFrameIn",
    "OutputIn",
    "PatchRef",
    "PatchRefs",
    "PositiveMs",
    "RecordIn",
    "ResultBatchIn",
    "ResultCreated",
    "ResultIn",
    "RunnerIn",
    "RunnerOut",
    "Sha",
    "Since",
    "StageIn",
    "Unencodable",
    "compile_event",
    "describe_errors",
    "digest_version",
    "escape_unencodable",
    "json_too_deep",
    "parse_graph_breaks",
    "reject_deep_json",
    "reject_unencodable",
    "replace_unencodable",
    "unencodable_text",
    "validation_message",
]
