"""Loading the runs a diagnosis compares, set-based: a fixed number of queries per call, however
many alerts, results or runs it covers.

* an **alert** compares the runs of its last good commit with those of its first bad commit on
  its case × hardware (plain candidates: nightly runs, imports, the paired confirmation's rounds;
  the newest :data:`RUNS_PER_SIDE` of each; the culprit, when bisection found one, lies between
  them);
* a **comparison** result compares its base arm's runs with its head arm's, as its rounds hold
  them (a run flagged for its conditions stands beside the re-run that replaced it).

Three queries read what the rules need: the runs' summary columns (with the runner's name), their
stages and their environments (for the GPU state); nothing else of the artifacts is loaded. A
fourth reads what the evidence runs of the culprit (or of a regression's two sides) showed
(:mod:`tracker.diagnosis.evidence_loading`); evidence runs themselves are never among the runs
compared (they ran with a profiler on).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Select, func, or_, select, tuple_
from sqlalchemy.orm import Session

from tracker.comparisons.summary import ArmView, ComparisonView
from tracker.diagnosis.evidence import evidence_findings
from tracker.diagnosis.evidence_loading import alert_evidence, result_evidence
from tracker.diagnosis.facts import (
    DEFAULT_CONFIG,
    Counters,
    DiagnosisConfig,
    Finding,
    GpuReading,
    OutputFact,
    RunFacts,
)
from tracker.diagnosis.findings import diagnose
from tracker.diagnosis.output_loading import alert_outputs
from tracker.diagnosis.output_rule import with_output
from tracker.diagnosis.result_outputs import result_output
from tracker.enums import JobReason, RunStatus, Verdict
from tracker.ingest.conditions import conditions_from_environment
from tracker.models import Alert, Candidate, Job, Run, RunArtifacts, Runner, RunStage

RUNS_PER_SIDE = 12  # newest runs of a commit an alert's diagnosis reads
SeriesKey = tuple[int, int]  # (case id, hardware kind id)
_IDLE = "gpu_idle"


def _columns() -> tuple[Any, ...]:
    return (
        Run.id,
        Run.status,
        Run.measurement_flag,
        Run.excluded_reason,
        Runner.name.label("runner_name"),
        Run.denoise_step_ms,
        Run.denoise_step_first_ms,
        Run.denoise_step_steady_ms,
        Run.peak_memory_mb,
        Run.graph_breaks,
        Run.unique_graphs,
        Run.frames_compiled,
        Run.recompiles,
    )


def run_facts(*, session: Session, run_ids: Collection[int]) -> dict[int, RunFacts]:
    """The runs ``run_ids`` as the rules read them (three queries; unknown ids are left out)."""
    if not run_ids:
        return {}
    rows = session.execute(
        select(*_columns()).outerjoin(Runner, Runner.id == Run.runner_id).where(Run.id.in_(sorted(run_ids)))
    ).all()
    return _facts(session, rows)


def _facts(session: Session, rows: Sequence[Any]) -> dict[int, RunFacts]:
    ids = sorted({row.id for row in rows})
    if not ids:
        return {}
    stages: dict[int, list[tuple[str, float]]] = {}
    for run_id, name, duration in session.execute(
        select(RunStage.run_id, RunStage.name, RunStage.duration_ms)
        .where(RunStage.run_id.in_(ids))
        .order_by(RunStage.run_id, RunStage.position)
    ):
        stages.setdefault(run_id, []).append((name, float(duration)))
    environments: dict[int, Mapping[str, Any]] = dict(
        session.execute(
            select(RunArtifacts.run_id, RunArtifacts.environment).where(RunArtifacts.run_id.in_(ids))
        ).all()
    )
    return {row.id: _run(row, tuple(stages.get(row.id, ())), environments.get(row.id) or {}) for row in rows}


def _run(row: Any, stages: tuple[tuple[str, float], ...], environment: Mapping[str, Any]) -> RunFacts:
    return RunFacts(
        run_id=row.id,
        ok=row.status == RunStatus.OK,
        flag=row.measurement_flag.value if row.measurement_flag is not None else None,
        excluded_reason=row.excluded_reason,
        runner=row.runner_name,
        step_ms=row.denoise_step_ms,
        first_step_ms=row.denoise_step_first_ms,
        steady_step_ms=row.denoise_step_steady_ms,
        stages=stages,
        peak_memory_mb=row.peak_memory_mb,
        counters=Counters(row.graph_breaks, row.unique_graphs, row.frames_compiled, row.recompiles),
        gpu=gpu_reading(environment),
    )


def gpu_reading(environment: Mapping[str, Any]) -> GpuReading:
    """The GPU facts of a run's environment: median SM clock of its busy snapshots, max clock,
    model and driver (what the runner did not record stays ``None``)."""
    snapshots = conditions_from_environment(environment).gpus
    busy = [s.sm_clock_mhz for s in snapshots if _IDLE not in s.throttle_reasons and s.sm_clock_mhz]
    ceilings = [s.max_sm_clock_mhz for s in snapshots if s.max_sm_clock_mhz]
    model, driver = environment.get("gpu"), environment.get("gpu_driver")
    return GpuReading(
        sm_clock_mhz=statistics.median(busy) if busy else None,
        max_sm_clock_mhz=statistics.median(ceilings) if ceilings else None,
        model=model if isinstance(model, str) and model else None,
        driver=driver if isinstance(driver, str) and driver else None,
    )


def _alert_runs(keys: Iterable[tuple[int, int, int]]) -> Select[Any]:
    """The newest :data:`RUNS_PER_SIDE` plain-candidate runs of each (case, hardware, commit)."""
    rank = func.row_number().over(
        partition_by=(Run.case_id, Run.hardware_kind_id, Run.commit_id), order_by=Run.id.desc()
    )
    ranked = (
        select(*_columns(), Run.case_id, Run.hardware_kind_id, Run.commit_id, rank.label("rank"))
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Runner, Runner.id == Run.runner_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(
            tuple_(Run.case_id, Run.hardware_kind_id, Run.commit_id).in_(sorted(keys)),
            Candidate.is_plain,
            or_(Job.id.is_(None), Job.reason != JobReason.EVIDENCE),
        )
        .subquery()
    )
    return select(ranked).where(ranked.c.rank <= RUNS_PER_SIDE).order_by(ranked.c.id)


def alert_diagnoses(
    *, session: Session, alerts: Sequence[Alert], config: DiagnosisConfig = DEFAULT_CONFIG
) -> dict[int, list[Finding]]:
    """Per alert id, why its first bad commit's runs differ from its last good commit's.

    An alert without a last good commit (the series' first commit) has nothing to compare: empty.
    The culprit's evidence runs, once stored, add their findings. Four queries for any number of
    alerts.
    """
    keys = {
        (alert.case_id, alert.hardware_kind_id, commit_id)
        for alert in alerts
        if alert.last_good_commit_id is not None
        for commit_id in (alert.last_good_commit_id, alert.first_bad_commit_id)
    }
    if not keys:
        return {alert.id: [] for alert in alerts}
    rows = session.execute(_alert_runs(keys)).all()
    facts = _facts(session, rows)
    evidence = alert_evidence(session=session, alert_ids=[alert.id for alert in alerts])
    outputs = alert_outputs(session=session, alerts=alerts)  # the picture, said first when it changed
    by_commit: dict[tuple[int, int, int], list[RunFacts]] = {}
    for row in rows:
        by_commit.setdefault((row.case_id, row.hardware_kind_id, row.commit_id), []).append(facts[row.id])
    diagnoses: dict[int, list[Finding]] = {}
    for alert in alerts:
        if alert.last_good_commit_id is None:
            diagnoses[alert.id] = []
            continue
        series = (alert.case_id, alert.hardware_kind_id)
        before = by_commit.get((*series, alert.last_good_commit_id), [])
        after = by_commit.get((*series, alert.first_bad_commit_id), [])
        found = _with_evidence(diagnose(before, after, config), evidence.get(alert.id), alert.change_pct)
        diagnoses[alert.id] = with_output(found, outputs.get(alert.id))
    return diagnoses


def _with_evidence(
    found: list[Finding], sides: tuple[Sequence[Any], Sequence[Any]] | None, measured_pct: float | None
) -> list[Finding]:
    """``found`` and what the evidence runs' summaries add, most telling first (``measured_pct``:
    the change the measurements found, which the profiles' operator times must agree with)."""
    if sides is None:
        return found
    added = evidence_findings(*sides, measured_pct=measured_pct)
    return sorted([*found, *added], key=lambda item: -item.weight)


def alert_diagnosis(
    *, session: Session, alert: Alert, config: DiagnosisConfig = DEFAULT_CONFIG
) -> list[Finding]:
    """Why one alert's first bad commit differs from its last good commit (five queries)."""
    return alert_diagnoses(session=session, alerts=[alert], config=config)[alert.id]


def _arm_runs(arms: Iterable[ArmView]) -> list[int]:
    ids = []
    for arm in arms:
        ids += [run.id for run in (arm.run, arm.excluded) if run is not None]
    return ids


def comparison_diagnoses(
    *, session: Session, view: ComparisonView, config: DiagnosisConfig = DEFAULT_CONFIG
) -> dict[SeriesKey, list[Finding]]:
    """Per (case id, hardware kind id) of a result with a verdict, why its head arm differs from
    its base arm (four queries for the whole comparison, the evidence runs' summaries among them).
    Pending results are left out."""
    sides: dict[SeriesKey, tuple[list[int], list[int]]] = {}
    result_ids: dict[SeriesKey, int] = {}
    changes: dict[SeriesKey, float | None] = {}
    outputs: dict[SeriesKey, OutputFact | None] = {}  # as stored on the result: said first when changed
    for item in view.results:
        if item.result.verdict is Verdict.PENDING:
            continue
        key = (item.result.case_id, item.result.hardware_kind_id)
        result_ids[key] = item.result.id
        changes[key] = item.result.change_pct
        outputs[key] = result_output(item.result)
        sides[key] = (
            _arm_runs(round_view.base for round_view in item.rounds),
            _arm_runs(round_view.head for round_view in item.rounds),
        )
    facts = run_facts(
        session=session, run_ids={run_id for pair in sides.values() for ids in pair for run_id in ids}
    )
    evidence = result_evidence(session=session, result_ids=list(result_ids.values()))
    return {
        key: with_output(
            _with_evidence(
                diagnose(
                    [facts[run_id] for run_id in base if run_id in facts],
                    [facts[run_id] for run_id in head if run_id in facts],
                    config,
                ),
                evidence.get(result_ids[key]),
                changes[key],
            ),
            outputs[key],
        )
        for key, (base, head) in sides.items()
    }
