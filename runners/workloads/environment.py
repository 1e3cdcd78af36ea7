"""What a run ran on: host, CPU, GPUs (model, driver, CUDA, clocks, temperature, power), torch and sglang.

GPU state is read with ``nvidia-smi`` before and after the run, so a throttled or hot GPU shows up
next to the number it slowed down. Package versions come from the interpreter the benchmark itself
uses, never from the runner's own environment (they are different virtualenvs on a GPU host).
Every probe tolerates failure: an environment with holes beats a run that did not happen.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners.jobenv import job_environ

GPU_FIELDS = ("index", "name", "driver_version", "clocks.sm", "clocks.mem", "temperature.gpu", "power.draw")
# Whether the GPU ran at full speed: what hygiene checks before and after a run.
CONDITION_FIELDS = (
    "index",
    "clocks.sm",
    "clocks.max.sm",
    "temperature.gpu",
    "clocks_throttle_reasons.active",
)
# NVML's clocks-event (throttle) reason bits, as nvidia-smi prints them in hex.
THROTTLE_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
)
NO_NVIDIA_SMI = "none (nvidia-smi not found)"
_CUDA_VERSION = re.compile(r"CUDA Version:\s*(?P<v>[\d.]+)")

# Run by the benchmark's interpreter. importlib.metadata gives versions without importing the
# packages, and torch's CUDA version is read from its generated ``torch/version.py`` without
# importing torch either (an import costs a CPU benchmark host 1-2 s per job); every step may fail.
_VERSIONS_SCRIPT = """
import json, re
from importlib import metadata, util
out = {}
for name in ("torch", "sglang"):
    try:
        out[name] = metadata.version(name)
    except Exception as error:
        out[name] = None
        out[name + "_error"] = type(error).__name__
out["torch_cuda"] = None
try:
    spec = util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        with open(folder + "/version.py", encoding="utf-8") as handle:
            found = re.search(r"^cuda[^=]*=[^0-9N]*([0-9.]+)", handle.read(), re.M)
        out["torch_cuda"] = found.group(1) if found else None
        break
except Exception as error:
    out["torch_cuda_error"] = type(error).__name__
print("PERFTRACK_VERSIONS " + json.dumps(out))
"""


@dataclass(frozen=True)
class EnvironmentProbe:
    """How to look at the machine. ``nvidia_smi`` is an argv prefix so tests can pass a fake script.

    ``nvidia-smi`` runs in ``env`` (``None``: the agent's environment through the job allow-list of
    :mod:`runners.jobenv`); the version probe runs in the benchmark's own environment.
    """

    nvidia_smi: tuple[str, ...] = ("nvidia-smi",)
    timeout_s: float = 30.0
    env: Mapping[str, str] | None = None

    def static(self, *, python: str | None, env: Mapping[str, str], gpu_ids: Sequence[int]) -> dict[str, Any]:
        """Host, OS, CPU, GPU model/driver/CUDA and package versions: what does not change during a run."""
        info: dict[str, Any] = {
            "host": socket.gethostname(),
            "os": platform.platform(),
            "python": platform.python_version(),
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
            "gpu_ids": list(gpu_ids),
        }
        info.update(self._gpu_identity(gpu_ids))
        if python is not None:
            info.update(self.package_versions(python, env))
        return info

    def gpu_state(self, gpu_ids: Sequence[int], when: str) -> dict[str, Any]:
        """Clocks (MHz), temperature (°C) and power draw (W) per GPU, keys suffixed with ``when``."""
        rows = self._query(gpu_ids)
        if not rows:
            return {}
        columns = {
            "gpu_sm_clock_mhz": "clocks.sm",
            "gpu_mem_clock_mhz": "clocks.mem",
            "gpu_temperature_c": "temperature.gpu",
            "gpu_power_w": "power.draw",
        }
        return {f"{key}_{when}": [_number(row.get(field)) for row in rows] for key, field in columns.items()}

    def gpu_conditions(self, gpu_ids: Sequence[int]) -> list[dict[str, Any]] | str:
        """Per GPU: SM clock and its maximum (MHz), temperature (°C), active throttle reasons.

        A string says why nothing could be read (no nvidia-smi, a failing query).
        """
        argv = [
            *self.nvidia_smi,
            f"--query-gpu={','.join(CONDITION_FIELDS)}",
            "--format=csv,noheader,nounits",
        ]
        if gpu_ids:
            argv.append(f"--id={','.join(str(i) for i in gpu_ids)}")
        out = self._run(argv)
        if out is None:
            return "nvidia-smi failed or is missing"
        snapshots = []
        for line in out.splitlines():
            cells = [cell.strip() for cell in line.split(",")]
            if len(cells) != len(CONDITION_FIELDS):
                continue
            row = dict(zip(CONDITION_FIELDS, cells, strict=True))
            mask = parse_throttle_mask(row["clocks_throttle_reasons.active"])
            snapshots.append(
                {
                    "index": _integer(row["index"]),
                    "sm_clock_mhz": _number(row["clocks.sm"]),
                    "max_sm_clock_mhz": _number(row["clocks.max.sm"]),
                    "temperature_c": _number(row["temperature.gpu"]),
                    "throttle_mask": None if mask is None else f"0x{mask:x}",
                    "throttle_reasons": [] if mask is None else throttle_reasons(mask),
                }
            )
        return snapshots

    def package_versions(self, python: str, env: Mapping[str, str]) -> dict[str, Any]:
        """torch / sglang versions as the benchmark's interpreter sees them."""
        try:
            done = subprocess.run(
                [python, "-c", _VERSIONS_SCRIPT],
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return {"versions_error": f"could not run {python}: {error}"}
        for line in done.stdout.splitlines():
            if line.startswith("PERFTRACK_VERSIONS "):
                try:
                    versions: dict[str, Any] = json.loads(line.split(" ", 1)[1])
                except ValueError:
                    break
                return versions
        return {"versions_error": f"{python} printed no versions (exit {done.returncode})"}

    def _gpu_identity(self, gpu_ids: Sequence[int]) -> dict[str, Any]:
        rows = self._query(gpu_ids)
        if rows is None:
            return {"gpu": NO_NVIDIA_SMI, "gpu_count": 0}
        names = sorted({row.get("name") or "?" for row in rows})
        drivers = sorted({row.get("driver_version") or "?" for row in rows})
        return {
            "gpu": ", ".join(names) if names else "none (nvidia-smi lists no GPU)",
            "gpu_count": len(rows),
            "gpu_driver": ", ".join(drivers) if drivers else None,
            "cuda_version": self._cuda_version(),
        }

    def _query(self, gpu_ids: Sequence[int]) -> list[dict[str, str]] | None:
        """One dict per GPU, or ``None`` when nvidia-smi is missing or fails."""
        argv = [*self.nvidia_smi, f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits"]
        if gpu_ids:
            argv.append(f"--id={','.join(str(i) for i in gpu_ids)}")
        out = self._run(argv)
        if out is None:
            return None
        rows = []
        for line in out.splitlines():
            cells = [cell.strip() for cell in line.split(",")]
            if len(cells) == len(GPU_FIELDS):
                rows.append(dict(zip(GPU_FIELDS, cells, strict=True)))
        return rows

    def _cuda_version(self) -> str | None:
        # Only the banner of plain `nvidia-smi` says which CUDA version the driver supports.
        out = self._run(list(self.nvidia_smi))
        match = _CUDA_VERSION.search(out or "")
        return match["v"] if match else None

    def _run(self, argv: list[str]) -> str | None:
        try:
            done = subprocess.run(
                argv,
                env=job_environ() if self.env is None else dict(self.env),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what :mod:`platform` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _number(raw: str | None) -> float | None:
    """nvidia-smi prints "[N/A]" or "[Not Supported]" for readings a GPU lacks."""
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def parse_throttle_mask(raw: str | None) -> int | None:
    """nvidia-smi's ``0x0000000000000004`` (or "[N/A]") as an integer."""
    try:
        return int(raw or "", 16)
    except ValueError:
        return None


def throttle_reasons(mask: int) -> list[str]:
    """The names of the bits set in a throttle-reason mask (unknown bits as ``0x...``)."""
    names = [name for bit, name in THROTTLE_BITS if mask & bit]
    known = sum(bit for bit, _ in THROTTLE_BITS)
    if mask & ~known:
        names.append(f"0x{mask & ~known:x}")
    return names


def _integer(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def interpreter_for(executable: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The Python that runs ``executable``: itself if it is a Python, else its script's shebang."""
    if not executable:
        return None
    first = executable[0]
    if Path(first).name.startswith("python"):
        return first
    path = shutil.which(first, path=env.get("PATH"))
    if path is None:
        return None
    try:
        with open(path, "rb") as script:
            head = script.readline(512).decode("utf-8", "replace")
    except OSError:
        return None
    # Console scripts installed by pip start with "#!/path/to/venv/bin/python".
    if head.startswith("#!") and "python" in head:
        parts = head[2:].split()
        if parts and Path(parts[0]).name == "env" and len(parts) > 1:
            return shutil.which(parts[1], path=env.get("PATH"))
        return parts[0] if parts else None
    return None
