#!/usr/bin/env python3
"""A stand-in for ``nvidia-smi`` on an 8×H200 host.

* no arguments: the banner, with driver and CUDA version;
* ``--query-gpu=a,b,... --format=csv,noheader,nounits [--id=0,1 | -i 0,1]``: one CSV row per GPU.

GPU 7 has no power reading (``[N/A]``), as some boards report. With ``--fake-state=FILE`` (pass
it in the argv prefix) every query heats the GPUs by one degree, so "before" and "after" differ.
``--fake-throttle=0x20`` makes every GPU report that throttle-reason mask (default: idle, ``0x1``).
"""

from __future__ import annotations

import sys
from pathlib import Path

DRIVER = "570.86.15"
CUDA = "12.8"
GPUS = 8
BANNER = f"""\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {DRIVER}              Driver Version: {DRIVER}      CUDA Version: {CUDA}     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:18:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""


def temperature(state: str | None) -> int:
    if not state:
        return 34
    path = Path(state)
    calls = int(path.read_text() or "0") if path.exists() else 0
    path.write_text(str(calls + 1))
    return 34 + calls


def value(field: str, index: int, temp: int, throttle: str = "0x0000000000000001") -> str:
    return {
        "index": str(index),
        "name": "NVIDIA H200",
        "driver_version": DRIVER,
        "clocks.sm": "1980",
        "clocks.mem": "3201",
        "clocks.max.sm": "1980",
        "clocks_throttle_reasons.active": throttle,
        "temperature.gpu": str(temp),
        "power.draw": "[N/A]" if index == 7 else f"{118.5 + index:.2f}",
    }.get(field, "[Not Supported]")


def main(argv: list[str]) -> int:
    state = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--fake-state=")), None)
    throttle = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--fake-throttle=")), None)
    argv = [arg for arg in argv if not arg.startswith(("--fake-state=", "--fake-throttle="))]
    if not argv:
        print(BANNER, end="")
        return 0
    query: list[str] = []
    ids = list(range(GPUS))
    for position, arg in enumerate(argv):
        if arg.startswith("--query-gpu="):
            query = arg.split("=", 1)[1].split(",")
        elif arg.startswith("--id="):
            ids = [int(i) for i in arg.split("=", 1)[1].split(",")]
        elif arg == "-i" and position + 1 < len(argv):
            ids = [int(i) for i in argv[position + 1].split(",")]
    if not query:
        print("fake nvidia-smi: only the banner and --query-gpu are supported", file=sys.stderr)
        return 2
    if any(i >= GPUS for i in ids):
        print("No devices were found", file=sys.stderr)
        return 6
    temp = temperature(state)
    for index in ids:
        print(", ".join(value(field, index, temp, throttle or "0x0000000000000001") for field in query))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
