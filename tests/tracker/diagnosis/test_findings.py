"""Say why: each finding kind from runs made of the recorded Qwen-Image run and stored through the
import path — the graph-break incident, the offload incident, more memory, a throttled GPU, nothing
different, and runs that recorded little (a log only, failed runs, no last good commit)."""

from __future__ import annotations

import re

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from tests.tracker.detection.test_alerts import import_regression
from tests.tracker.diagnosis_runs import (
    BAD_LOG,
    GRAPH_BREAK_FACTOR,
    OFFLOAD_FACTOR,
    WHOLE_GRAPH,
    Shape,
    gpu_conditions,
    history,
    store_commit,
)
from tracker.diagnosis.facts import Counters, Finding, FindingKind, RunFacts
from tracker.diagnosis.findings import diagnose
from tracker.diagnosis.loading import alert_diagnoses, alert_diagnosis, run_facts
from tracker.enums import Direction
from tracker.models import Alert, Run

GOOD = Shape(compile=WHOLE_GRAPH)


def the_alert(session: Session) -> Alert:
    [alert] = session.scalars(select(Alert).where(Alert.direction == Direction.REGRESSION)).all()
    return alert


def kinds(findings: list[Finding]) -> list[FindingKind]:
    return [finding.kind for finding in findings]


def facts_of(session: Session, runs: list[Run]) -> list[RunFacts]:
    facts = run_facts(session=session, run_ids=[run.id for run in runs])
    return [facts[run.id] for run in runs]


def test_the_graph_break_incident_names_the_breaks_then_the_steady_state_then_the_stage(
    session: Session,
) -> None:
    bad = Shape(
        steady=GRAPH_BREAK_FACTOR,
        compile={**WHOLE_GRAPH, "graph_breaks": 3, "unique_graphs": 4},
        log=BAD_LOG,
    )
    history(session, [GOOD, GOOD, bad])
    alert = the_alert(session)
    findings = alert_diagnosis(session=session, alert=alert)
    assert kinds(findings) == [FindingKind.COMPILE, FindingKind.WARMUP, FindingKind.STAGE]
    compiled, warmup, stage = (finding.summary for finding in findings)
    assert compiled == "graph breaks rose 0 → 3 per run; unique graphs 1 → 4"
    assert re.fullmatch(
        r"steady-state step \+(8\.[5-9]|9\.[0-4]) % \(26\d\.\d ms → 28\d\.\d ms\), "
        r"step 0 unchanged: a cost paid on every step",
        warmup,
    ), warmup
    assert re.fullmatch(
        r"DenoisingStage \+(8\.[5-9]|9\.[0-4]) % \(13\.\d\d s → 14\.\d\d s\); the other 6 stages unchanged",
        stage,
    ), stage
    assert findings[0].detail["graph_breaks"] == {
        "before": 0.0,
        "after": 3.0,
        "runs_before": [0, 0, 0],
        "runs_after": [3, 3, 3],
    }
    steady = findings[1].detail["steady_ms"]
    assert steady["moved"] is True
    assert 8.5 < steady["change_pct"] < 9.5
    assert findings[1].detail["step0_ms"]["moved"] is False


def test_the_offload_incident_names_the_frames_no_longer_compiled(session: Session) -> None:
    split = {"graph_breaks": 60, "unique_graphs": 61, "frames_compiled": 0, "recompiles": 0}
    history(session, [GOOD, GOOD, Shape(steady=OFFLOAD_FACTOR, compile=split, log=BAD_LOG)])
    findings = alert_diagnosis(session=session, alert=the_alert(session))
    assert kinds(findings)[:2] == [FindingKind.COMPILE, FindingKind.WARMUP]
    assert findings[0].summary == (
        "graph breaks rose 0 → 60 per run; unique graphs 1 → 61; compiled frames dropped 1 → 0"
    )
    assert "steady-state step +28." in findings[1].summary


def test_a_cost_only_in_step_zero_is_compile_or_warm_up(session: Session) -> None:
    before = store_commit(session, 0, GOOD)
    after = store_commit(session, 1, Shape(first=4.0, compile={**WHOLE_GRAPH, "recompiles": 2}))
    findings = diagnose(facts_of(session, before), facts_of(session, after))
    assert kinds(findings) == [FindingKind.COMPILE, FindingKind.WARMUP, FindingKind.STAGE]
    assert findings[0].summary == "recompiles 0 → 2"
    assert findings[1].summary.startswith("only step 0 +300 % (241.")
    assert findings[1].summary.endswith("steady state unchanged: a compile, JIT or warm-up cost")


def test_more_peak_memory_is_named_and_nothing_else(session: Session) -> None:
    before = store_commit(session, 0, GOOD)
    after = store_commit(session, 1, Shape(compile=WHOLE_GRAPH, memory=1.06))
    findings = diagnose(facts_of(session, before), facts_of(session, after))
    assert [finding.summary for finding in findings] == ["peak memory +2.8 GiB (+6.0 %): 45.8 GiB → 48.6 GiB"]
    assert findings[0].kind is FindingKind.MEMORY
    assert findings[0].detail["before_mb"] == 46938.0


def test_slower_clocks_and_a_throttled_run_warn_that_it_may_be_the_machine(session: Session) -> None:
    clean = Shape(compile=WHOLE_GRAPH, environment=gpu_conditions(1980))
    slow_clock = Shape(steady=1.09, compile=WHOLE_GRAPH, environment=gpu_conditions(1530))
    throttled = Shape(
        steady=1.2, compile=WHOLE_GRAPH, environment=gpu_conditions(1410, throttle=("sw_thermal_slowdown",))
    )
    history(session, [clean, clean, slow_clock])
    [flagged] = store_commit(session, 2, throttled, runs=1, seed=9)
    assert flagged.measurement_flag is not None  # stored, flagged and left out of detection
    findings = alert_diagnosis(session=session, alert=the_alert(session))
    assert kinds(findings) == [FindingKind.GPU_STATE, FindingKind.WARMUP, FindingKind.STAGE]
    assert findings[0].summary == (
        "1 of 4 runs after was flagged (GPU throttled: sw_thermal_slowdown after (GPU 0)) and left out; "
        "SM clock 1980 → 1530 MHz (-22.7 %): the change may be the machine, not the code"
    )
    assert findings[0].detail["flagged_after"] == [flagged.id]


def test_runs_that_differ_by_nothing_but_noise_give_no_finding(session: Session) -> None:
    clean = Shape(compile=WHOLE_GRAPH, environment=gpu_conditions(1980))
    before = store_commit(session, 0, clean, runs=4)
    after = store_commit(session, 1, clean, runs=4, seed=5)
    assert diagnose(facts_of(session, before), facts_of(session, after)) == []
    assert session.scalars(select(Alert)).all() == []


def test_a_log_without_steps_or_counters_still_names_the_stage_and_nothing_it_lacks(
    session: Session,
) -> None:
    import_regression(session)  # three single-run imports of the real logs: no perf dump, no counters
    alert = session.scalars(select(Alert)).one()
    [finding] = alert_diagnosis(session=session, alert=alert)
    assert finding.kind is FindingKind.STAGE
    assert finding.summary == "DenoisingStage +9.1 % (13.19 s → 14.38 s); the other 6 stages unchanged"


def test_failed_runs_missing_stages_and_no_last_good_commit_are_no_finding() -> None:
    failed = RunFacts(run_id=1, ok=False)
    bare = RunFacts(run_id=2, step_ms=263.7)  # a value of record and nothing else
    slower = RunFacts(run_id=3, step_ms=287.6, counters=Counters(graph_breaks=3))
    assert diagnose([failed], [bare]) == []
    assert diagnose([bare], [failed]) == []
    assert diagnose([bare, failed], [slower]) == []  # counters only one side reported say nothing
    assert diagnose([], [bare]) == []


def test_alerts_are_diagnosed_together_with_a_fixed_number_of_queries(session: Session) -> None:
    history(
        session, [GOOD, GOOD, Shape(steady=GRAPH_BREAK_FACTOR, compile={**WHOLE_GRAPH, "graph_breaks": 3})]
    )
    alert = the_alert(session)
    first_commit = Alert(
        case_id=alert.case_id,
        hardware_kind_id=alert.hardware_kind_id,
        metric=alert.metric,
        direction=alert.direction,
        first_bad_commit_id=alert.last_good_commit_id,
        before_value=1.0,
        after_value=1.0,
        change_pct=0.0,
        threshold_pct=2.0,
        evidence={},
    )
    first_commit.id = -1  # not stored: an alert with no last good commit
    statements: list[str] = []

    def count(*_args: object) -> None:
        statements.append("x")

    engine = session.get_bind()
    event.listen(engine, "before_cursor_execute", count)
    try:
        found = alert_diagnoses(session=session, alerts=[alert, first_commit])
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(statements) == 5  # the runs (3), the evidence runs, the outputs
    assert found[-1] == []
    assert kinds(found[alert.id])[0] is FindingKind.COMPILE


def test_both_steps_moving_a_stage_added_and_another_runner_are_each_named() -> None:
    def run(run_id: int, first: float, steady: float, runner: str, *stages: tuple[str, float]) -> RunFacts:
        return RunFacts(
            run_id=run_id, runner=runner, first_step_ms=first, steady_step_ms=steady, stages=stages
        )

    before = [
        run(1, 241.3, 263.9, "h200-a", ("TextEncodingStage", 210.4), ("DenoisingStage", 13189.5)),
        run(2, 241.9, 264.0, "h200-a", ("TextEncodingStage", 210.1), ("DenoisingStage", 13190.2)),
    ]
    after = [
        run(
            3,
            1240.0,
            288.0,
            "h200-b",
            ("TextEncodingStage", 210.2),
            ("DenoisingStage", 15400.0),
            ("CacheWarmupStage", 812.0),
        ),
        run(
            4,
            1251.0,
            288.2,
            "h200-b",
            ("TextEncodingStage", 210.6),
            ("DenoisingStage", 15410.0),
            ("CacheWarmupStage", 809.0),
        ),
    ]
    findings = {finding.kind: finding.summary for finding in diagnose(before, after)}
    assert (
        findings[FindingKind.GPU_STATE]
        == "runner h200-a → h200-b: the change may be the machine, not the code"
    )
    assert findings[FindingKind.WARMUP] == (
        "steady-state step +9.1 % (263.9 ms → 288.1 ms) and step 0 +416 % (241.6 ms → 1.25 s): "
        "a cost on every step, and more in step 0"
    )
    assert findings[FindingKind.STAGE] == (
        "DenoisingStage +16.8 % (13.19 s → 15.40 s); new CacheWarmupStage (810.5 ms); the other stage unchanged"
    )
