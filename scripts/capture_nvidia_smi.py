"""Capture what a real ``nvidia-smi`` prints for the runner's GPU probes, as contract-test fixtures.

Run it on a GPU host with the standard library only (no virtualenv needed):

    python3 scripts/capture_nvidia_smi.py OUT_DIR

It writes, under ``OUT_DIR``: ``help-query-gpu.txt`` (the driver's own list of query fields: the
schema the runner's field names are checked against), ``banner.txt`` (plain ``nvidia-smi``),
``query-identity.csv`` and ``query-conditions.csv`` (the runner's two queries, exactly as
``runners.workloads.environment`` asks them), ``versions.json`` (what answered), and
``probe.json``: what :class:`runners.workloads.environment.EnvironmentProbe` read from all of it.
No GPU host has run it yet: its captures are meant to become the fixtures of a contract test of
the probe's field names and parsing against a real driver (not written yet).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runners.workloads.environment import CONDITION_FIELDS, GPU_FIELDS, EnvironmentProbe  # noqa: E402


def _run(argv: list[str]) -> tuple[int, str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr.strip() else "")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    captures = {
        "help-query-gpu.txt": ["nvidia-smi", "--help-query-gpu"],
        "banner.txt": ["nvidia-smi"],
        "query-identity.csv": [
            "nvidia-smi",
            f"--query-gpu={','.join(GPU_FIELDS)}",
            "--format=csv,noheader,nounits",
            "--id=0",
        ],
        "query-conditions.csv": [
            "nvidia-smi",
            f"--query-gpu={','.join(CONDITION_FIELDS)}",
            "--format=csv,noheader,nounits",
            "--id=0",
        ],
    }
    codes = {}
    for name, argv in captures.items():
        code, text = _run(argv)
        codes[name] = {"argv": argv, "exit": code}
        (out / name).write_text(text)
    probe = EnvironmentProbe(env={"PATH": "/usr/bin:/bin:/usr/local/bin", "LANG": "C"})
    read = {
        "static": probe.static(python=sys.executable, env={"PATH": "/usr/bin:/bin"}, gpu_ids=[0]),
        "state_before": probe.gpu_state([0], "before"),
        "conditions": probe.gpu_conditions([0]),
    }
    (out / "probe.json").write_text(json.dumps(read, indent=2, sort_keys=True) + "\n")
    (out / "versions.json").write_text(json.dumps(codes, indent=2) + "\n")
    print(json.dumps(read, indent=2, sort_keys=True))
    return 0 if all(entry["exit"] == 0 for entry in codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
