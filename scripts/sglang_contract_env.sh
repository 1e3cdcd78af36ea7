#!/usr/bin/env bash
# Installs the real published sglang for the contract tests (tests/contract/sglang), one folder per version:
#   .sglang/<version>/pkg    sglang itself (pip --no-deps)
#   .sglang/<version>/deps   the light dependencies pinned in tests/contract/sglang/requirements-<version>.txt
#                            (pip --no-deps: no torch, no CUDA; the project venv's CPU torch and the stand-ins
#                            in tests/contract/sglang/stubs/ fill the rest)
#   .sglang/<version>/installed   sha256 of the version and its requirements file: when it still matches,
#                            the version is left alone; when the requirements change, it is installed anew.
# usage: scripts/sglang_contract_env.sh [VERSION ...]   (default: every version in tests/contract/sglang/versions.toml)
#   PIP      the pip to install with (default .venv/bin/pip)
#   PYTHON   the interpreter that reads versions.toml (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
PYTHON=${PYTHON:-.venv/bin/python}
CONTRACT=tests/contract/sglang
ROOT=.sglang

if [ "$#" -gt 0 ]; then
  versions=("$@")
else
  mapfile -t versions < <("$PYTHON" -c '
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(v["version"] for v in tomllib.load(f)["versions"]))
' "$CONTRACT/versions.toml")
fi

# The marker: tests/contract/sglang/env.py computes the same digest to tell an up-to-date install.
stamp() { { printf '%s\n' "$1"; cat "$2"; } | sha256sum | cut -d' ' -f1; }

# Wheels only (nothing is built here), no byte-compiling (the probe imports a small part of each
# package; Python caches what it imports), quiet unless something goes wrong.
pip_target() {
  local target=$1
  shift
  "$PIP" install --quiet --disable-pip-version-check --no-deps --no-compile --only-binary=:all: \
    --target "$target" "$@"
}

for version in "${versions[@]}"; do
  requirements="$CONTRACT/requirements-$version.txt"
  if [ ! -f "$requirements" ]; then
    echo "sglang $version: no $requirements (pin its light dependencies there first)" >&2
    exit 1
  fi
  want=$(stamp "$version" "$requirements")
  dest="$ROOT/$version"
  if [ -f "$dest/installed" ] && [ "$(cat "$dest/installed")" = "$want" ]; then
    echo "sglang $version: up to date in $dest"
    continue
  fi
  echo "sglang $version: installing into $dest"
  started=$SECONDS
  # Built beside the old one and swapped in at the end: an interrupted install leaves no half folder
  # that looks installed (only a .VERSION.* folder, removed on the next run).
  mkdir -p "$ROOT"
  rm -rf "$ROOT/.$version."*
  work=$(mktemp -d "$ROOT/.$version.XXXXXX")
  chmod 755 "$work"
  pip_target "$work/pkg" "sglang==$version"
  pip_target "$work/deps" -r "$requirements"
  printf '%s\n' "$want" >"$work/installed"
  rm -rf "$dest"
  mv -T "$work" "$dest"
  echo "sglang $version: installed in $((SECONDS - started)) s ($(du -sh "$dest" | cut -f1))"
done
