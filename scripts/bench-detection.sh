#!/usr/bin/env bash
# Run the detection-quality benchmark beside its peers (Apache Otava, asv).
# It gets a virtual environment of its own: apache-otava pins numpy 2.2 and scipy < 1.17, older
# than what the development tools in .venv use. Arguments go to `python -m benchmarks.detection`
# (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv-bench/bin/python ]; then
  "$PYTHON" -m venv .venv-bench
fi
.venv-bench/bin/python -m pip install --quiet --upgrade pip
.venv-bench/bin/python -m pip install --quiet -e . "apache-otava==0.8.0" "asv>=0.6,<0.7"
exec .venv-bench/bin/python -m benchmarks.detection "$@"
