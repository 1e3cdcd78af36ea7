#!/usr/bin/env bash
# Install perftrack (torch 2.13.0 CPU first) and run `perftrack demo`: the toy DiT repository's
# history and a PR candidate measured on this CPU, the summary, then the dashboard.
#   extra arguments go to `perftrack demo` (e.g. --exit, --port 8001)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/perftrack demo "$@"
