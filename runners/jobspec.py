"""What a runner receives when it claims a job: plain dataclasses built from the claim's JSON.

The tracker sends everything a runner needs to build the candidate and run the case, so a runner
needs no database and no suite files of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    def from_json(cls, data: dict[str, Any]) -> JobSpec:
        """Build from the tracker's claim answer."""
        candidate = data["candidate"]
        case = data["case"]
        return cls(
            job_id=int(data["job_id"]),
            attempt=int(data["attempt"]),
            reason=str(data["reason"]),
            hardware=str(data["hardware"]),
            lease_seconds=int(data.get("lease_seconds", 300)),
            repository=RepositorySpec(**data["repository"]),
            candidate=CandidateSpec(
                base_sha=str(candidate["base_sha"]),
                patches=tuple(candidate.get("patches", ())),
                carried=tuple(CarriedPatch(**patch) for patch in candidate.get("carried", ())),
            ),
            case=CaseSpec(
                slug=case["slug"],
                version=int(case["version"]),
                model=case["model"],
                task=case["task"],
                workload=case["workload"],
                mode=case["mode"],
                num_gpus=int(case["num_gpus"]),
                requests=int(case["requests"]),
                timeout_s=int(case["timeout_s"]),
                params=dict(case.get("params", {})),
                flags=dict(case.get("flags", {})),
            ),
        )
