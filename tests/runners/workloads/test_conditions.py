"""What else the machine did during a run: /proc sampling (injected readers and the real /proc),
GPU clocks and throttle reasons from a fake nvidia-smi, and the conditions reaching the upload."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runners.parsing import ParsedRun, RunStatus
from runners.payload import as_body, job_result
from runners.workloads.conditions import (
    CpuSampler,
    LinuxProc,
    cpu_load_summary,
    parse_cpu_times,
    parse_loadavg,
    parse_process_times,
)
from runners.workloads.environment import EnvironmentProbe, parse_throttle_mask, throttle_reasons
from tests.runners.workloads.test_sglang import FAKE_SMI, Harness, small_case
from tracker.ingest.conditions import assess_conditions, conditions_from_environment
from wire import JobResultIn

PGID = 4242


def proc_stat(user: int, system: int, idle: int, steal: int = 0, cpus: int = 2) -> str:
    """``/proc/stat`` with the aggregate line (ticks over all CPUs) and ``cpus`` per-CPU lines."""
    lines = [f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0"]
    lines += [f"cpu{n} 0 0 0 0 0 0 0 0 0 0" for n in range(cpus)]
    return "\n".join([*lines, "intr 1 2 3", "ctxt 99"]) + "\n"


def pid_stat(pid: int, pgrp: int, ticks: int, state: str = "R", comm: str = "python") -> str:
    """``/proc/<pid>/stat``: utime carries the ticks, stime/cutime/cstime stay 0."""
    fields = [state, "1", str(pgrp), str(pgrp), "0", "-1", "0", "0", "0", "0", "0"]
    fields += [str(ticks), "0", "0", "0", "20", "0", "1", "0", "100"]
    return f"{pid} ({comm}) " + " ".join(fields)


@dataclass
class FakeProc:
    """A scripted /proc: each ``advance`` moves to the next reading."""

    stats: list[str]
    processes: list[dict[int, str]]
    load: str = "0.50 0.40 0.30 1/100 999\n"
    step: int = 0
    broken: bool = False
    reads: list[str] = field(default_factory=list)

    def stat(self) -> str:
        if self.broken:
            raise OSError("permission denied")
        return self.stats[min(self.step, len(self.stats) - 1)]

    def loadavg(self) -> str:
        return self.load

    def pids(self) -> Iterable[int]:
        return list(self.processes[min(self.step, len(self.processes) - 1)])

    def pid_stat(self, pid: int) -> str | None:
        return self.processes[min(self.step, len(self.processes) - 1)].get(pid)


def sampled(proc: FakeProc) -> dict[str, object]:
    """Every scripted reading sampled by hand (no thread timing), then the summary."""
    sampler = CpuSampler(reader=proc, interval_s=3600.0, clock=lambda: float(proc.step))
    sampler.start()
    sampler.attach(PGID)  # the first sample
    for _ in range(len(proc.stats) - 1):
        proc.step += 1
        sampler.sample()
    return sampler.stop()


# ------------------------------------------------------------------ parsers


def test_proc_stat_sums_busy_columns_and_counts_cpus() -> None:
    times = parse_cpu_times("cpu  100 5 20 800 7 1 2 9 3 0\ncpu0 1 2 3 4\ncpu1 1 2 3 4\n")
    assert times.busy == 100 + 5 + 20 + 1 + 2  # iowait is idle, guest is already inside user
    assert times.steal == 9
    assert times.total == 100 + 5 + 20 + 800 + 7 + 1 + 2 + 9
    assert times.cpu_count == 2
    with pytest.raises(ValueError, match="no cpu line"):
        parse_cpu_times("intr 1 2\n")


def test_process_stat_reads_group_and_all_four_times_whatever_the_command_name() -> None:
    text = "77 (my (odd) name) S 1 4242 4242 0 -1 0 0 0 0 0 10 20 30 40 20 0 1 0 100"
    times = parse_process_times(text)
    assert times is not None
    assert (times.pid, times.pgrp, times.alive, times.ticks) == (77, 4242, True, 100)
    zombie = parse_process_times(pid_stat(5, 5, 1, state="Z"))
    assert zombie is not None
    assert not zombie.alive
    assert parse_process_times("garbage") is None
    assert parse_loadavg("0.98 0.63 0.31 2/143 10247\n") == [0.98, 0.63, 0.31]
    assert parse_loadavg("x y z") is None


def test_summary_in_cores_and_share_of_the_machine() -> None:
    first = parse_cpu_times(proc_stat(user=0, system=0, idle=0))
    # 10 s on 2 CPUs = 2000 ticks: 1900 busy, of which the benchmark took 1000.
    last = parse_cpu_times(proc_stat(user=1800, system=100, idle=60, steal=40))
    summary = cpu_load_summary(first, last, group_ticks=1000, window_s=10.0)
    assert summary["benchmark_cores"] == 1.0
    assert summary["other_cores"] == 0.9
    assert summary["other_share_pct"] == 45.0
    assert summary["steal_pct"] == 2.0
    with pytest.raises(ValueError, match="no CPU time"):
        cpu_load_summary(first, first, group_ticks=0, window_s=0.0)


# ------------------------------------------------------------------ the sampler, on a scripted /proc


def test_a_burner_beside_the_benchmark_is_other_processes_time() -> None:
    # Per 1 s step on 2 CPUs (200 ticks): the benchmark's group (leader and a worker) takes 100
    # ticks, a burner outside the group 90, the runner 4.
    stats, processes = [], []
    for step in range(5):
        stats.append(proc_stat(user=194 * step, system=0, idle=6 * step))
        processes.append(
            {
                PGID: pid_stat(PGID, PGID, 60 * step),
                PGID + 1: pid_stat(PGID + 1, PGID, 40 * step),
                999: pid_stat(999, 999, 90 * step),  # the burner: another group
            }
        )
    result = sampled(FakeProc(stats, processes))
    assert result["benchmark_cores"] == 1.0
    assert result["other_cores"] == 0.94
    assert result["other_share_pct"] == 47.0
    assert result["samples"] == 5
    assert result["loadavg_before"] == [0.5, 0.4, 0.3]
    assert result["loadavg_after"] == [0.5, 0.4, 0.3]
    flag = assess_conditions(conditions_from_environment({"conditions": {"cpu": result}}))
    assert flag is not None
    assert flag.reason == "contention: other processes took 0.94 cores (47 % of 2) during the run"


def test_a_worker_that_exits_keeps_its_time_and_the_window_ends_with_the_leader() -> None:
    stats = [proc_stat(user=200 * step, system=0, idle=0) for step in range(5)]
    processes = [
        {PGID: pid_stat(PGID, PGID, 0), PGID + 1: pid_stat(PGID + 1, PGID, 0)},
        {PGID: pid_stat(PGID, PGID, 100), PGID + 1: pid_stat(PGID + 1, PGID, 100)},
        {PGID: pid_stat(PGID, PGID, 200)},  # the worker exited; its 100 ticks still count
        {PGID: pid_stat(PGID, PGID, 400, state="Z")},  # the leader exited: the window ended before
        {},
    ]
    result = sampled(FakeProc(stats, processes))
    assert result["window_s"] == 2.0
    assert result["benchmark_cores"] == 1.5  # 300 of the window's 400 ticks over 2 s
    assert result["other_cores"] == 0.5  # the worker's lost last second reads as someone else's


def test_steal_is_a_share_of_all_cpu_time() -> None:
    stats = [proc_stat(user=0, system=0, idle=0), proc_stat(user=100, system=0, idle=76, steal=24)]
    processes = [{PGID: pid_stat(PGID, PGID, 0)}, {PGID: pid_stat(PGID, PGID, 100)}]
    result = sampled(FakeProc(stats, processes))
    assert result["steal_pct"] == 12.0
    flag = assess_conditions(conditions_from_environment({"conditions": {"cpu": result}}))
    assert flag is not None
    assert flag.reason == "CPU steal 12 %"


def test_an_unreadable_proc_or_a_short_run_is_an_error_entry_not_an_exception() -> None:
    broken = FakeProc([proc_stat(0, 0, 0)], [{}], broken=True)
    result = sampled(broken)
    assert "cannot read /proc" in str(result["error"])
    assert result["loadavg_before"] == [0.5, 0.4, 0.3]
    short = sampled(FakeProc([proc_stat(0, 0, 0)], [{PGID: pid_stat(PGID, PGID, 0)}]))
    assert "before two samples" in str(short["error"])
    never_attached = CpuSampler(reader=FakeProc([proc_stat(0, 0, 0)], [{}]))
    never_attached.start()
    assert "error" in never_attached.stop()  # the benchmark could not start
    assert conditions_from_environment({"conditions": {"cpu": result}}).cpu is None


# ------------------------------------------------------------------ the real /proc


def spinner(seconds: float) -> list[str]:
    """A process that says ``spinning`` and then burns a core for ``seconds``."""
    return [
        sys.executable,
        "-c",
        f"import time\nprint('spinning', flush=True)\nend = time.time() + {seconds}\nwhile time.time() < end: pass",
    ]


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")
@pytest.mark.slow  # burns a core for 3 s
def test_real_proc_sees_the_benchmark_group_and_a_burner_beside_it() -> None:
    burner = subprocess.Popen(spinner(3.0), stdout=subprocess.PIPE)
    try:
        assert burner.stdout is not None
        assert burner.stdout.readline() == b"spinning\n"  # it burns its core from now on
        sampler = CpuSampler(reader=LinuxProc(), interval_s=0.1)
        sampler.start()
        benchmark = subprocess.Popen(spinner(1.2), start_new_session=True)
        sampler.attach(benchmark.pid)
        benchmark.wait(timeout=30)
        result = sampler.stop()
    finally:
        burner.kill()
        burner.wait()
    assert "error" not in result, result
    assert result["window_s"] > 0.8
    # A spinning process gets at least a good part of a core even on a busy 2-core machine, and
    # the burner's time (plus whatever else runs) is someone else's: never the benchmark's.
    assert result["benchmark_cores"] > 0.3
    assert result["other_cores"] >= 0.5


# ------------------------------------------------------------------ GPUs


def test_throttle_masks_name_their_bits() -> None:
    assert parse_throttle_mask("0x0000000000000004") == 4
    assert parse_throttle_mask("[N/A]") is None
    assert throttle_reasons(0x0) == []
    assert throttle_reasons(0x1) == ["gpu_idle"]
    assert throttle_reasons(0x24) == ["sw_power_cap", "sw_thermal_slowdown"]
    assert throttle_reasons(0xFF) == [
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
    ]
    assert throttle_reasons(0x101) == ["gpu_idle", "0x100"]  # a bit this runner does not know


def test_gpu_conditions_from_a_fake_nvidia_smi_and_a_missing_one(tmp_path: Path) -> None:
    probe = EnvironmentProbe(nvidia_smi=(sys.executable, str(FAKE_SMI), "--fake-throttle=0x20"))
    rows = probe.gpu_conditions([3])
    assert rows == [
        {
            "index": 3,
            "sm_clock_mhz": 1980.0,
            "max_sm_clock_mhz": 1980.0,
            "temperature_c": 34.0,
            "throttle_mask": "0x20",
            "throttle_reasons": ["sw_thermal_slowdown"],
        }
    ]
    missing = EnvironmentProbe(nvidia_smi=(str(tmp_path / "nvidia-smi"),))
    assert missing.gpu_conditions([0]) == "nvidia-smi failed or is missing"


def test_a_throttled_run_carries_its_conditions_into_the_upload(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    probe = EnvironmentProbe(nvidia_smi=(sys.executable, str(FAKE_SMI), "--fake-throttle=0x0000000000000020"))
    result = harness.run("ok", probe=probe, probe_versions=False)
    assert result.failure is None
    conditions = result.environment["conditions"]
    assert [row["index"] for row in conditions["gpu"]["before"]] == [0, 1]
    assert conditions["gpu"]["after"][1]["throttle_reasons"] == ["sw_thermal_slowdown"]
    assert conditions["cpu"]["cpu_count"] >= 1
    assert "loadavg_before" in conditions["cpu"]
    body = as_body(
        job_result(ParsedRun(status=RunStatus.OK, step_times_ms=(30.0,)), attempt=1, workload=result)
    )
    upload = JobResultIn.model_validate(json.loads(json.dumps(body)))
    flag = assess_conditions(conditions_from_environment(upload.environment))
    assert flag is not None
    # The host's own CPU steal, measured for real, may add "; CPU steal N %" after the GPU's reason.
    assert flag.reason.split("; ")[0] == "GPU throttled: sw_thermal_slowdown before/after (GPU 0, 1)"


def test_an_idle_gpu_and_a_cpu_only_run(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    probe = EnvironmentProbe(nvidia_smi=(sys.executable, str(FAKE_SMI)))
    idle = harness.run("ok", probe=probe, probe_versions=False)
    assert idle.environment["conditions"]["gpu"]["before"][0]["throttle_reasons"] == ["gpu_idle"]
    assert conditions_from_environment(idle.environment).gpus  # recorded, and gpu_idle is no throttling
    cpu_only = harness.workload("ok", probe=probe, probe_versions=False).run(
        small_case(), harness.context(gpu_ids=())
    )
    assert "gpu" not in cpu_only.environment["conditions"]
    assert "cpu" in cpu_only.environment["conditions"]
    no_probe = harness.run("ok", probe=None)
    assert no_probe.environment == {}  # probe=None still records nothing at all
