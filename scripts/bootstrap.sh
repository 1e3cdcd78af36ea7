#!/usr/bin/env bash
# Create .venv and install perftrack with its development tools and the runner extra (torch, PyAV).
#   PERFTRACK_TORCH_INDEX_URL  the wheel index torch 2.13.0 comes from (default: pip's configured
#                              index). Set https://download.pytorch.org/whl/cpu on an ordinary Linux
#                              machine: PyPI's Linux torch is the CUDA build (gigabytes), and the
#                              demo and the tests need no GPU.
# torch goes in first, pinned: the runner extra's unpinned torch would otherwise be resolved from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_INDEX=()
if [ -n "${PERFTRACK_TORCH_INDEX_URL:-}" ]; then
  TORCH_INDEX=(--index-url "$PERFTRACK_TORCH_INDEX_URL")
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet ${TORCH_INDEX[@]+"${TORCH_INDEX[@]}"} "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[dev,runner]"
