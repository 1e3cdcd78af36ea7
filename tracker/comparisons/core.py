"""PR-style A/B comparisons: base vs head candidate over cases × hardware, in interleaved rounds.

A comparison queues its rounds as jobs, A B A B ... (round 1 base, round 1 head, round 2 base,
...), each arm a fresh process on a runner. Every time an arm ends (a run arrives, or the job
fails or is cancelled) the result of its case × hardware is recomputed from the rounds whose two
arms both measured; a failed arm makes its round unusable. When every scheduled round of a
result has ended and the verdict is still inconclusive, the rounds are doubled (2 → 4 → 8, up to
``max_rounds``), as Pinpoint asks for more data; at the cap the result stays inconclusive and
says so. A comparison of a candidate with itself (A/A) stores a calibration when it is done.
Reading comparisons back, round by round, is :mod:`tracker.comparisons.summary`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.calibration import judged_against, store_calibration
from tracker.comparisons.summary import RoundView, rounds_of
from tracker.enums import FINISHED_COMPARISON_STATES, PENDING_JOB_STATES
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import (
    Alert,
    Arm,
    Candidate,
    Case,
    Comparison,
    ComparisonKind,
    ComparisonResult,
    ComparisonState,
    Direction,
    HardwareKind,
    Job,
    JobReason,
    Repository,
    Run,
    Verdict,
    utcnow,
)
from tracker.queue.jobs import cancel_job, enqueue_job
from tracker.statistics.ab import ComparisonStats, RoundValues, compare_rounds
from tracker.statistics.bisection import BisectCall, bisect_call
from tracker.statistics.confirmation import ConfirmationOutcome, judge_confirmation
from tracker.statistics.paired_rounds import ConfirmationPolicy
from tracker.vcs.commits import ensure_candidate, upsert_commit
from wire import CommitIn

MAX_ROUNDS = 64
_REASON_CHARS = 200


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
    """Create a comparison and queue its rounds, interleaved: A1 B1 A2 B2 ... per case × hardware.

    ``hardware`` (names) restricts every case to those kinds, each of which the case must run on;
    without it, each case runs on every kind it is set up for. ``kind`` defaults to a calibration
    when base and head are one candidate, else a PR comparison; confirmations and bisection steps
    name the ``alert`` they decide (``purpose`` is the comparison's kind).
    """
    if not 1 <= rounds <= MAX_ROUNDS:
        raise InvalidInput("rounds", f"must be between 1 and {MAX_ROUNDS}, not {rounds}")
    if not rounds <= max_rounds <= MAX_ROUNDS:
        raise InvalidInput(
            "max_rounds", f"must be between rounds ({rounds}) and {MAX_ROUNDS}, not {max_rounds}"
        )
    if requests_per_round < 1:
        raise InvalidInput("requests_per_round", "must be at least 1")
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
        judged = judged_against(session=session, case=case, hardware=kind)
        comparison.results.append(
            ComparisonResult(
                case=case,
                hardware_kind=kind,
                verdict=Verdict.PENDING,
                threshold_pct=judged.threshold_pct,
                threshold_source=judged.threshold_source,
                note=f"queued: {rounds} rounds",
            )
        )
    session.flush()
    for round_number in range(1, rounds + 1):
        for case, kind in pairs:
            _enqueue_round(
                session=session, comparison=comparison, case=case, hardware=kind, round_number=round_number
            )
    session.flush()
    return comparison


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
        max_rounds=rounds,  # more rounds would not make an A/A more informative about the setup
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


def cancel_comparison(
    *, session: Session, comparison_id: int, reason: str, now: dt.datetime | None = None
) -> Comparison:
    """Cancel a comparison's queued and running jobs; results still pending become inconclusive."""
    now = now or utcnow()
    # Jobs first, then the comparison: the order an arriving run locks them in.
    open_jobs = session.scalars(
        select(Job)
        .where(Job.comparison_id == comparison_id, Job.state.in_(PENDING_JOB_STATES))
        .order_by(Job.id)
        .with_for_update()
    ).all()
    comparison = _locked(session=session, comparison_id=comparison_id)
    if comparison.state in FINISHED_COMPARISON_STATES:
        raise Conflict(f"comparison {comparison_id} is already {comparison.state.value}")
    comparison.state = ComparisonState.CANCELLED
    comparison.finished_at = now
    for job in open_jobs:
        cancel_job(session=session, job_id=job.id, reason=reason, now=now)
    table = rounds_of(session=session, comparison_id=comparison.id)
    for result in comparison.results:
        if result.verdict is not Verdict.PENDING:
            continue
        rounds = table.get((result.case_id, result.hardware_kind_id), [])
        stats = _judge(session=session, result=result, rounds=rounds, now=now)
        result.verdict = Verdict.INCONCLUSIVE
        so_far = f"; so far: {stats.reason}" if stats is not None else ""
        result.note = f"cancelled after {result.rounds_done} of {len(rounds)} rounds ({reason}){so_far}"
    session.flush()
    return comparison


def record_comparison_job(*, session: Session, job: Job, run: Run, now: dt.datetime) -> Comparison:
    """Advance the comparison of ``job`` after its run (ok or failed) was stored; return it."""
    del run  # the run is read back with the round's other arm
    return _advance(session=session, job=job, now=now)


def comparison_job_ended(*, session: Session, job: Job, now: dt.datetime) -> Comparison:
    """Advance the comparison of ``job`` after it ended without a run (failed for good, cancelled)."""
    return _advance(session=session, job=job, now=now)


def job_requests(*, session: Session, job: Job) -> int:
    """The requests one run of ``job`` makes: its comparison's ``requests_per_round``, else the case's."""
    if job.comparison_id is not None:
        comparison = session.get(Comparison, job.comparison_id)
        if comparison is not None:
            return comparison.requests_per_round
    return job.case.requests


def _advance(*, session: Session, job: Job, now: dt.datetime) -> Comparison:
    assert job.comparison_id is not None
    comparison = _locked(session=session, comparison_id=job.comparison_id)
    if comparison.state in FINISHED_COMPARISON_STATES:
        return comparison  # cancelled: its jobs ending change nothing
    if comparison.state is ComparisonState.PENDING:
        comparison.state = ComparisonState.RUNNING
    table = rounds_of(session=session, comparison_id=comparison.id)
    for result in comparison.results:
        if (result.case_id, result.hardware_kind_id) == (job.case_id, job.hardware_kind_id):
            rounds = table.get((result.case_id, result.hardware_kind_id), [])
            _refresh(session=session, comparison=comparison, result=result, rounds=rounds, now=now)
    if any(result.verdict is Verdict.PENDING for result in comparison.results):
        session.flush()
        return comparison
    measured_any = any(
        arm.value_ms is not None
        for rounds in table.values()
        for view in rounds
        for arm in (view.base, view.head)
    )
    comparison.state = ComparisonState.DONE if measured_any else ComparisonState.FAILED
    comparison.finished_at = now
    if comparison.state is ComparisonState.DONE and comparison.kind is ComparisonKind.CALIBRATION:
        for result in comparison.results:
            usable = [
                view.values()
                for view in table.get((result.case_id, result.hardware_kind_id), [])
                if view.usable
            ]
            outliers = store_calibration(
                session=session,
                comparison=comparison,
                case=result.case,
                hardware=result.hardware_kind,
                rounds=usable,
            )
            if outliers:
                listing = ", ".join(str(number) for number in outliers)
                result.note = (
                    f"{result.note}; round {listing} stood apart and did not set the calibrated noise"
                )
    session.flush()
    return comparison


def _refresh(
    *,
    session: Session,
    comparison: Comparison,
    result: ComparisonResult,
    rounds: list[RoundView],
    now: dt.datetime,
) -> None:
    """Recompute one result; schedule more rounds when all ended inconclusive below the cap."""
    if comparison.kind in (ComparisonKind.CONFIRMATION, ComparisonKind.BISECT):
        _refresh_paired_check(session=session, comparison=comparison, result=result, rounds=rounds, now=now)
        return
    stats = _judge(session=session, result=result, rounds=rounds, now=now)
    scheduled = len(rounds)
    failures = _failures(rounds)
    if not all(view.ended for view in rounds):
        result.verdict = Verdict.PENDING
        result.note = _join(f"running: {result.rounds_done} of {scheduled} rounds done", failures)
    elif stats is None:
        result.verdict = Verdict.INCONCLUSIVE
        result.note = f"all {scheduled} rounds failed: {failures}"
    elif stats.verdict is Verdict.INCONCLUSIVE and scheduled < comparison.max_rounds:
        target = min(2 * scheduled, comparison.max_rounds)
        _schedule_rounds(
            session=session, comparison=comparison, result=result, scheduled=scheduled, target=target
        )
        result.verdict = Verdict.PENDING
        result.note = _join(
            f"inconclusive after {scheduled} rounds: {stats.reason}; running rounds {scheduled + 1}–{target}",
            failures,
        )
    elif stats.verdict is Verdict.INCONCLUSIVE:
        result.verdict = Verdict.INCONCLUSIVE
        # At the cap, "more rounds needed" is not on offer any more.
        reason = stats.reason.removesuffix(": more rounds needed")
        result.note = _join(f"inconclusive after {scheduled} rounds: {reason}", failures)
    else:
        result.verdict = stats.verdict
        result.note = _join(stats.reason, failures)


def _schedule_rounds(
    *, session: Session, comparison: Comparison, result: ComparisonResult, scheduled: int, target: int
) -> None:
    """Queue rounds ``scheduled + 1 .. target`` of one result and count them as scheduled."""
    for round_number in range(scheduled + 1, target + 1):
        _enqueue_round(
            session=session,
            comparison=comparison,
            case=result.case,
            hardware=result.hardware_kind,
            round_number=round_number,
        )
    comparison.rounds_scheduled = max(comparison.rounds_scheduled, target)


def _refresh_paired_check(
    *,
    session: Session,
    comparison: Comparison,
    result: ComparisonResult,
    rounds: list[RoundView],
    now: dt.datetime,
) -> None:
    """A confirmation or bisection step: the pure decisions judge, and ask for more rounds.

    :mod:`tracker.statistics.confirmation` judges a confirmation, :mod:`tracker.statistics.bisection`
    a bisection step.
    """
    _judge(session=session, result=result, rounds=rounds, now=now)
    scheduled = len(rounds)
    failures = _failures(rounds)
    if not all(view.ended for view in rounds):
        result.verdict = Verdict.PENDING
        result.note = _join(f"running: {result.rounds_done} of {scheduled} rounds done", failures)
        return
    alert = session.get(Alert, comparison.alert_id) if comparison.alert_id is not None else None
    if alert is None:
        result.verdict = Verdict.INCONCLUSIVE
        result.note = "the alert this check was for is gone"
        return
    usable = [view.values() for view in rounds if view.usable]
    policy = ConfirmationPolicy(initial_rounds=comparison.rounds, max_rounds=comparison.max_rounds)
    wanted, verdict, note = _paired_decision(
        session=session, comparison=comparison, alert=alert, result=result, usable=usable, policy=policy
    )
    if wanted > scheduled:
        _schedule_rounds(
            session=session, comparison=comparison, result=result, scheduled=scheduled, target=wanted
        )
        result.verdict = Verdict.PENDING
        result.note = _join(note, failures)
        return
    result.verdict = verdict
    result.note = _join(note, failures)


def _paired_decision(
    *,
    session: Session,
    comparison: Comparison,
    alert: Alert,
    result: ComparisonResult,
    usable: list[RoundValues],
    policy: ConfirmationPolicy,
) -> tuple[int, Verdict, str]:
    """Rounds wanted in all, the verdict to store and the note, from the pure decisions."""
    scheduled = comparison.rounds_scheduled
    if comparison.kind is ComparisonKind.BISECT:
        span_pct = float(alert.evidence.get("paired_change_pct") or alert.change_pct)
        noise = judged_against(session=session, case=result.case, hardware=result.hardware_kind).prior
        call = bisect_call(
            usable,
            span_pct=span_pct,
            scheduled=scheduled,
            policy=policy,
            noise_pct=noise.noise_pct if noise is not None else None,
        )
        verdict = {
            BisectCall.BAD: Verdict.REGRESSION if span_pct > 0 else Verdict.IMPROVEMENT,
            BisectCall.GOOD: Verdict.NO_CHANGE,
        }.get(call.call, Verdict.INCONCLUSIVE)
        return call.rounds_wanted, verdict, f"bisection step: {call.call.value}, {call.reason}"
    judged = judged_against(session=session, case=result.case, hardware=result.hardware_kind)
    regression = alert.direction is Direction.REGRESSION
    judgement = judge_confirmation(
        usable,
        regression=regression,
        threshold_pct=judged.threshold_pct,
        scheduled=scheduled,
        prior=judged.prior,
        policy=policy,
    )
    verdict = {
        ConfirmationOutcome.CONFIRMED: Verdict.REGRESSION if regression else Verdict.IMPROVEMENT,
        ConfirmationOutcome.REFUTED: Verdict.NO_CHANGE,
    }.get(judgement.outcome, Verdict.INCONCLUSIVE)
    if judgement.stats is not None:
        # Show the interval the judgement used (one-sided bounds, the prior's weight capped), not
        # the PR comparisons' two-sided one, so the page and the verdict agree.
        stats = judgement.stats
        result.change_pct, result.ci_low_pct, result.ci_high_pct = (
            stats.change_pct,
            stats.ci_low_pct,
            stats.ci_high_pct,
        )
        result.round_noise_pct, result.dof = stats.round_noise_pct, stats.dof
    return judgement.rounds_wanted, verdict, judgement.reason


def _judge(
    *,
    session: Session,
    result: ComparisonResult,
    rounds: list[RoundView],
    now: dt.datetime,
) -> ComparisonStats | None:
    """Fill a result's numbers from its usable rounds; ``None`` when there is none."""
    usable = [view.values() for view in rounds if view.usable]
    judged = judged_against(session=session, case=result.case, hardware=result.hardware_kind)
    result.rounds_done = len(usable)
    result.rounds_failed = sum(1 for view in rounds if view.ended and not view.usable)
    result.threshold_pct = judged.threshold_pct
    result.threshold_source = judged.threshold_source
    result.updated_at = now
    stats = compare_rounds(usable, threshold_pct=judged.threshold_pct, prior=judged.prior) if usable else None
    result.base_value = stats.base_ms if stats else None
    result.head_value = stats.head_ms if stats else None
    result.change_pct = stats.change_pct if stats else None
    result.ci_low_pct = stats.ci_low_pct if stats else None
    result.ci_high_pct = stats.ci_high_pct if stats else None
    result.round_noise_pct = stats.round_noise_pct if stats else None
    result.dof = stats.dof if stats else None
    return stats


def _failures(rounds: list[RoundView]) -> str:
    reasons = [
        f"round {view.round} {arm_name}: {failure[:_REASON_CHARS]}"
        for view in rounds
        for arm_name, arm in (("base", view.base), ("head", view.head))
        if (failure := arm.failure) is not None
    ]
    if len(reasons) > 3:
        reasons = [*reasons[:3], f"and {len(reasons) - 3} more"]
    return "; ".join(reasons)


def _join(note: str, failures: str) -> str:
    return f"{note}; failed arms: {failures}" if failures else note


# The queue reason of a comparison's arms: a confirmation holds an alert back, like a re-run did.
_ARM_REASON = {
    ComparisonKind.PR: JobReason.PR,
    ComparisonKind.CALIBRATION: JobReason.PR,
    ComparisonKind.CONFIRMATION: JobReason.CONFIRM,
    ComparisonKind.BISECT: JobReason.BISECT,
}


def _enqueue_round(
    *, session: Session, comparison: Comparison, case: Case, hardware: HardwareKind, round_number: int
) -> None:
    arms = [(Arm.BASE, comparison.base_candidate), (Arm.HEAD, comparison.head_candidate)]
    if comparison.kind in (ComparisonKind.CONFIRMATION, ComparisonKind.BISECT) and round_number % 2 == 0:
        # A B, B A, A B, ...: whatever changes with the order or over time (a warming host, a
        # neighbour that comes and goes) lands on both arms alike instead of always on the second.
        arms.reverse()
    for arm, candidate in arms:
        enqueue_job(
            session=session,
            candidate=candidate,
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


def _locked(*, session: Session, comparison_id: int) -> Comparison:
    """The comparison, its row locked on PostgreSQL, so concurrent arms are judged one at a time."""
    comparison = session.scalar(
        select(Comparison)
        .where(Comparison.id == comparison_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if comparison is None:
        raise NotFound(f"no comparison {comparison_id}")
    return comparison
