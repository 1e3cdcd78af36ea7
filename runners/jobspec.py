"""What a runner receives when it claims a job: plain dataclasses built from the claim's answer.

The answer is read as :class:`wire.JobSpecOut`, the shape the tracker sends; it holds everything a
runner needs to build the candidate and run the case, so a runner needs no database and no suite
files of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from wire import JobSpecOut

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Spec = TypeVar("_Spec", bound="DataclassInstance")


@dataclass(frozen=True)
class RepositorySpec:
    """Where the candidate's commits come from."""

    name: str
    url: str  # clone URL or local path
    default_branch: str = "main"


@dataclass(frozen=True)
class CarriedPatch:
    """A patch every candidate of a repository (or of one hardware kind) carries until it is merged.

    ``ref`` is a commit sha or a pull request ref (``refs/pull/43601/head``). The builder skips it
    when the base already contains it (ancestor check, or the same patch-id for a cherry-pick).
    """

    ref: str
    reason: str = ""


@dataclass(frozen=True)
class CandidateSpec:
    """A base commit plus patches cherry-picked on top, in order."""

    base_sha: str
    patches: tuple[str, ...] = ()
    carried: tuple[CarriedPatch, ...] = ()


@dataclass(frozen=True)
class CaseSpec:
    """One benchmark configuration, as the suite file defines it.

    ``params`` and ``flags`` are keyed by the flag names ``sglang generate`` uses; a flag whose
    value is ``True`` renders ``--flag``, a string or number renders ``--flag value``, ``False``
    is left out.
    """

    slug: str
    version: int
    model: str
    task: str
    workload: str  # "sglang" or "toy"
    mode: str  # "generate" or "serve"
    num_gpus: int
    requests: int
    timeout_s: int
    params: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobSpec:
    """A leased job: run ``case`` on ``candidate`` and upload the result for ``(job_id, attempt)``."""

    job_id: int
    attempt: int
    reason: str
    hardware: str
    repository: RepositorySpec
    candidate: CandidateSpec
    case: CaseSpec
    lease_seconds: int = 300

    @classmethod
    def from_json(cls, data: Any) -> JobSpec:
        """Build from the tracker's claim answer; ``pydantic.ValidationError`` if it is not a job spec."""
        return cls.from_wire(JobSpecOut.model_validate(data))

    @classmethod
    def from_wire(cls, spec: JobSpecOut) -> JobSpec:
        """Build from a validated claim answer."""
        candidate, case = spec.candidate, spec.case
        return _from_model(
            cls,
            spec,
            repository=_from_model(RepositorySpec, spec.repository),
            candidate=_from_model(
                CandidateSpec,
                candidate,
                patches=tuple(candidate.patches),
                carried=tuple(_from_model(CarriedPatch, patch) for patch in candidate.carried),
            ),
            case=_from_model(CaseSpec, case, params=dict(case.params), flags=dict(case.flags)),
        )


def _from_model(spec_type: type[_Spec], model: BaseModel, **converted: object) -> _Spec:
    """A ``spec_type`` whose fields are the wire model's attributes of the same names.

    ``converted`` gives the fields that are not taken as they are (lists as tuples, nested models as
    dataclasses, dicts copied).
    """
    taken = {item.name: getattr(model, item.name) for item in fields(spec_type) if item.name not in converted}
    return spec_type(**taken, **converted)
