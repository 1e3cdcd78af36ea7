#!/usr/bin/env bash
# Install perftrack, import the Qwen-Image regression logs in commit order, and serve the dashboard.
#   PERFTRACK_DATA_DIR   where the SQLite database lives (default: the per-user data directory)
#   PORT                 port to serve on (default 8000)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
logs=tests/data/sglang  # the fixture logs of the real regression (see tests/data/sglang/README.md)

import_run() {  # log sha time title
  perftrack import-log "$logs/$1" --case qwen-image-t2i-1024 --hardware H200 \
    --commit "$2" --commit-time "$3" --title "$4"
}
import_run qwen_image_669a9bd.log 669a9bd 2026-05-18T09:00:00Z "Baseline before the fused norm change"
import_run qwen_image_4739f2e.log 4739f2e 2026-05-19T09:00:00Z "Fuse RMSNorm kernel (wrapped in torch._dynamo.disable)"
import_run qwen_image_fix.log 9c1d5e2 2026-05-21T09:00:00Z "Register fused norm as torch.library.custom_op"

exec perftrack serve --host 127.0.0.1 --port "${PORT:-8000}"
