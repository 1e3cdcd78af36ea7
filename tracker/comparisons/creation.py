"""Creating comparisons: base and head candidates over cases × hardware, queued in interleaved rounds.

A comparison of every kind (a PR's or one asked for by hand, an A/A calibration, a confirmation,
a bisection step) queues its rounds as jobs in counterbalanced order, A B, B A, A B, ... (round 1
base then head, round 2 head then base, ...), each arm a fresh process on a runner. Whatever the
order does to a run (the second process of a round finding warm caches, a host that warms up or a
neighbour that comes and goes) then lands on base and head alike instead of always on the second
arm; an A/A calibration measures that order effect (:mod:`tracker.comparisons.calibration`).

A claim hands out the oldest job of the highest priority (:mod:`tracker.queue.claims`), and a
comparison's arms share their reason's priority, so its jobs run in the order queued here: rounds
added while a result is inconclusive continue the alternation by their round number, and a re-run
of a flagged run keeps its round and arm but is queued last, so it may start after the round's
other arm (which arm ran first is read from the jobs' leases,
:attr:`tracker.comparisons.summary.RoundView.first`).

This module owns what a comparison asks for: its candidates, its case × hardware results, its
rounds and the jobs of each round. How rounds that end move it on is
:mod:`tracker.comparisons.progress`; how a result is judged, :mod:`tracker.comparisons.verdicts`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.calibration import CALIBRATION_MAX_ROUNDS, judged_against
from tracker.enums import Arm, ComparisonKind, ComparisonState, JobReason, Verdict
from tracker.errors import InvalidInput
from tracker.models import Alert, Candidate, Case, Comparison, ComparisonResult, HardwareKind, Job, Repository
from tracker.queue.jobs import enqueue_job
from tracker.statistics.paired_rounds import ConfirmationPolicy
from tracker.vcs.commits import ensure_candidate, upsert_commit
from wire import CommitIn

MAX_ROUNDS = 64


def repository_of_cases(*, session: Session, cases: Sequence[str]) -> Repository:
    """The one repository the named cases measure, or :class:`InvalidInput`."""
    if not cases:
        raise InvalidInput("cases", "name at least one case")
    repositories: dict[int, Repository] = {}
    for slug in cases:
        case = get_current_case(session=session, slug=slug, field="cases")
        if case.repository is None:
            raise InvalidInput("cases", f"case {slug!r} has no repository in its suite")
        repositories[case.repository.id] = case.repository
    if len(repositories) > 1:
        names = ", ".join(sorted(repository.name for repository in repositories.values()))
        raise InvalidInput(
            "cases", f"the cases measure different repositories ({names}); compare one at a time"
        )
    return next(iter(repositories.values()))


def resolve_candidate(
    *, session: Session, repository: Repository, sha: str, patches: Sequence[str] = ()
) -> Candidate:
    """The candidate ``sha + patches`` of ``repository`` (commit and candidate stored once)."""
    commit = upsert_commit(session=session, repository=repository, commit=CommitIn(sha=sha))
    return ensure_candidate(session=session, base=commit, patches=patches)


def create_comparison(
    *,
    session: Session,
    base: Candidate,
    head: Candidate,
    cases: Sequence[str],
    hardware: Sequence[str] | None = None,
    rounds: int = 2,
    max_rounds: int = 8,
    requests_per_round: int = 5,
    requested_by: str = "",
    pr_number: int | None = None,
    pr_url: str | None = None,
    command: str = "",
    purpose: ComparisonKind | None = None,
    alert: Alert | None = None,
) -> Comparison:
    """Create a comparison and queue its rounds, interleaved and counterbalanced: A1 B1 B2 A2 A3 B3
    ... per case × hardware (:func:`round_order`).

    ``hardware`` (names) restricts every case to those kinds, each of which the case must run on;
    without it, each case runs on every kind it is set up for. ``kind`` defaults to a calibration
    when base and head are one candidate, else a PR comparison; confirmations and bisection steps
    name the ``alert`` they decide (``purpose`` is the comparison's kind).
    """
    _check_rounds(rounds=rounds, max_rounds=max_rounds, requests_per_round=requests_per_round)
    if base.repository_id != head.repository_id:
        raise InvalidInput("head", "base and head must be candidates of the same repository")
    pairs = _case_hardware(session=session, repository_id=base.repository_id, cases=cases, hardware=hardware)
    comparison = Comparison(
        repository_id=base.repository_id,
        base_candidate=base,
        head_candidate=head,
        state=ComparisonState.PENDING,
        rounds=rounds,
        rounds_scheduled=rounds,
        max_rounds=max_rounds,
        requests_per_round=requests_per_round,
        pr_number=pr_number,
        pr_url=pr_url,
        command=command,
        requested_by=requested_by,
        kind=purpose or (ComparisonKind.CALIBRATION if base.id == head.id else ComparisonKind.PR),
        alert_id=alert.id if alert is not None else None,
    )
    session.add(comparison)
    for case, kind in pairs:
        comparison.results.append(_pending_result(session=session, case=case, hardware=kind, rounds=rounds))
    session.flush()
    for round_number in range(1, rounds + 1):
        for case, kind in pairs:
            enqueue_round(
                session=session, comparison=comparison, case=case, hardware=kind, round_number=round_number
            )
    session.flush()
    return comparison


def _check_rounds(*, rounds: int, max_rounds: int, requests_per_round: int) -> None:
    """:class:`InvalidInput` unless ``1 <= rounds <= max_rounds <= MAX_ROUNDS`` and requests are asked for."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise InvalidInput("rounds", f"must be between 1 and {MAX_ROUNDS}, not {rounds}")
    if not rounds <= max_rounds <= MAX_ROUNDS:
        raise InvalidInput(
            "max_rounds", f"must be between rounds ({rounds}) and {MAX_ROUNDS}, not {max_rounds}"
        )
    if requests_per_round < 1:
        raise InvalidInput("requests_per_round", "must be at least 1")


def _pending_result(*, session: Session, case: Case, hardware: HardwareKind, rounds: int) -> ComparisonResult:
    """A case × hardware result waiting for its first rounds, with the threshold it will be judged by."""
    judged = judged_against(session=session, case=case, hardware=hardware)
    return ComparisonResult(
        case=case,
        hardware_kind=hardware,
        verdict=Verdict.PENDING,
        threshold_pct=judged.threshold_pct,
        threshold_source=judged.threshold_source,
        note=f"queued: {rounds} rounds",
    )


def create_calibration(
    *,
    session: Session,
    candidate: Candidate,
    cases: Sequence[str],
    hardware: Sequence[str] | None = None,
    rounds: int = 8,
    requests_per_round: int = 5,
    requested_by: str = "",
    command: str = "",
) -> Comparison:
    """An A/A comparison of ``candidate`` with itself; when done it stores a calibration per result."""
    if rounds < 2:
        raise InvalidInput("rounds", "a calibration needs at least 2 rounds")
    return create_comparison(
        session=session,
        base=candidate,
        head=candidate,
        cases=cases,
        hardware=hardware,
        rounds=rounds,
        # An interfered round (a neighbour slowed a run) is set aside, and the rounds doubled so
        # that what is left still measures the setup (tracker.comparisons.progress).
        max_rounds=max(rounds, CALIBRATION_MAX_ROUNDS),
        requests_per_round=requests_per_round,
        requested_by=requested_by,
        command=command,
        purpose=ComparisonKind.CALIBRATION,
    )


def create_paired_check(
    *,
    session: Session,
    alert: Alert,
    base: Candidate,
    head: Candidate,
    kind: ComparisonKind,
    policy: ConfirmationPolicy,
    command: str,
) -> Comparison:
    """Paired rounds deciding something about ``alert``: its confirmation (last good vs first bad
    commit) or a bisection step (last good vs the commit in doubt), on the alert's series."""
    return create_comparison(
        session=session,
        base=base,
        head=head,
        cases=[alert.case.slug],
        hardware=[alert.hardware_kind.name],
        rounds=policy.initial_rounds,
        max_rounds=policy.max_rounds,
        requests_per_round=alert.case.requests,
        requested_by="perftrack",
        command=command,
        purpose=kind,
        alert=alert,
    )


def job_requests(*, session: Session, job: Job) -> int:
    """The requests one run of ``job`` makes: its comparison's ``requests_per_round``, else the case's."""
    if job.comparison_id is not None:
        comparison = session.get(Comparison, job.comparison_id)
        if comparison is not None:
            return comparison.requests_per_round
    return job.case.requests


# The queue reason of a comparison's arms: a confirmation holds an alert back, like a re-run did.
_ARM_REASON = {
    ComparisonKind.PR: JobReason.PR,
    ComparisonKind.CALIBRATION: JobReason.PR,
    ComparisonKind.CONFIRMATION: JobReason.CONFIRM,
    ComparisonKind.BISECT: JobReason.BISECT,
}


def round_order(round_number: int) -> tuple[Arm, Arm]:
    """The order the two arms of round ``round_number`` (from 1) are queued in: A B, B A, A B, ...

    Every kind of comparison alternates: whatever changes with the order or over time (a second
    process finding caches warm, a warming host, a neighbour that comes and goes) lands on both
    arms alike instead of always on the second, and an even number of rounds cancels it.
    """
    if round_number < 1:
        raise ValueError(f"rounds count from 1, not {round_number}")
    return (Arm.BASE, Arm.HEAD) if round_number % 2 else (Arm.HEAD, Arm.BASE)


def enqueue_round(
    *, session: Session, comparison: Comparison, case: Case, hardware: HardwareKind, round_number: int
) -> None:
    """Queue the two arms of one round of ``case`` × ``hardware`` in :func:`round_order` (once: jobs
    are idempotent)."""
    candidates = {Arm.BASE: comparison.base_candidate, Arm.HEAD: comparison.head_candidate}
    for arm in round_order(round_number):
        enqueue_job(
            session=session,
            candidate=candidates[arm],
            case=case,
            hardware=hardware,
            reason=_ARM_REASON[comparison.kind],
            alert_id=comparison.alert_id,
            purpose=f"cmp{comparison.id}:r{round_number}:{arm.value}",
            requested_by=comparison.requested_by,
            comparison_id=comparison.id,
            comparison_round=round_number,
            arm=arm,
        )


def _case_hardware(
    *, session: Session, repository_id: int, cases: Sequence[str], hardware: Sequence[str] | None
) -> list[tuple[Case, HardwareKind]]:
    if not cases:
        raise InvalidInput("cases", "name at least one case")
    chosen = [get_hardware_kind(session=session, name=name) for name in dict.fromkeys(hardware or ())]
    pairs: list[tuple[Case, HardwareKind]] = []
    for slug in dict.fromkeys(cases):
        case = get_current_case(session=session, slug=slug, field="cases")
        if case.repository_id != repository_id:
            raise InvalidInput("cases", f"case {slug!r} measures another repository than the candidates")
        runs_on = {entry.hardware_kind.name: entry.hardware_kind for entry in case.hardware}
        if not runs_on:
            raise InvalidInput("cases", f"case {slug!r} is set up for no hardware kind")
        for kind in chosen:
            if kind.name not in runs_on:
                raise InvalidInput(
                    "hardware", f"case {slug!r} does not run on {kind.name}; it runs on {', '.join(runs_on)}"
                )
        pairs.extend((case, kind) for kind in (chosen or runs_on.values()))
    return pairs
