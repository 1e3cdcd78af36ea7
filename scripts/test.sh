#!/usr/bin/env bash
# The whole check, as CI runs it: install, lint, type-check, import layers, migrations drift, tests on
# SQLite and PostgreSQL, and the browser tests in Debian's Chromium.
#   PERFTRACK_TEST_PG_URL   PostgreSQL to test against (default postgresql://postgres@127.0.0.1:5432/test)
#   PERFTRACK_TEST_WORKERS  pytest-xdist workers (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${PERFTRACK_TEST_PG_URL:-postgresql://postgres@127.0.0.1:5432/test}

step() { printf '\n\033[1m== %s\033[0m (at %d s)\n' "$*" "$SECONDS"; }

step "install"
bash scripts/bootstrap.sh
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is not installed: the browser tests will be skipped (apt-get install chromium)"
  fi
fi

step "sglang contract environment (the real published sglang in .sglang/, CPU only)"
bash scripts/sglang_contract_env.sh
# The contract tests (tests/contract, marker `contract`) fail here instead of skipping when it is missing.
export PERFTRACK_SGLANG_CONTRACT=required

step "PostgreSQL"
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432

export PATH="$PWD/.venv/bin:$PATH"

step "ruff"
ruff check .
ruff format --check .

step "mypy --strict"
mypy

step "import layers (import-linter)"
lint-imports

step "alembic check (SQLite and PostgreSQL)"
tmpdb=$(mktemp -d)
PERFTRACK_DATABASE_URL="sqlite:///$tmpdb/check.db" perftrack db upgrade
PERFTRACK_DATABASE_URL="sqlite:///$tmpdb/check.db" alembic check
rm -rf "$tmpdb"
# An empty schema first: the test database may hold anything an earlier run left there.
python - "$PG_URL" <<'PY'
import sys
from sqlalchemy import create_engine, text
engine = create_engine(sys.argv[1].replace("postgresql://", "postgresql+psycopg://", 1))
with engine.begin() as connection:
    connection.execute(text("DROP SCHEMA public CASCADE"))
    connection.execute(text("CREATE SCHEMA public"))
PY
PERFTRACK_DATABASE_URL="$PG_URL" perftrack db upgrade
PERFTRACK_DATABASE_URL="$PG_URL" alembic check
PERFTRACK_DATABASE_URL="$PG_URL" perftrack db downgrade base

# Two pytest-xdist workers (PERFTRACK_TEST_WORKERS; 0 runs in one process). The contract tests' sglang
# probes and the browser tests each stay on one worker (tests/conftest.py, SHARED_WORKER).
WORKERS=${PERFTRACK_TEST_WORKERS:-2}
PYTEST=(pytest -q -n "$WORKERS" --durations=25)

step "pytest on SQLite: every test, the browser tests included"
"${PYTEST[@]}"

step "pytest on PostgreSQL: the tests marked dialect (code that differs between the databases)"
PERFTRACK_TEST_DATABASE_URL="$PG_URL" "${PYTEST[@]}" -m "dialect and not browser"

step "all checks passed"
