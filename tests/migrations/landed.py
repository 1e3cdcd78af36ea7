"""The migrations that have landed, each with a fingerprint of its code: a landed revision is never
edited (docs/development.md). Run ``python -m tests.migrations.landed`` to print the lines for a new
revision; an edit to a listed one fails tests/migrations/test_landed.py."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

VERSIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"
MANIFEST = Path(__file__).resolve().parent / "landed.txt"


def fingerprint(path: Path) -> str:
    """A hash of the revision's syntax tree: formatting and comments may change, code may not."""
    return hashlib.sha256(ast.dump(ast.parse(path.read_text())).encode()).hexdigest()[:16]


def revisions() -> dict[str, str]:
    """Every revision file under migrations/versions with its fingerprint."""
    return {path.name: fingerprint(path) for path in sorted(VERSIONS.glob("*.py"))}


def landed() -> dict[str, str]:
    """The manifest: revision file name to the fingerprint it landed with."""
    entries = {}
    for line in MANIFEST.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, digest = line.split()
            entries[name] = digest
    return entries


if __name__ == "__main__":
    for name, digest in revisions().items():
        print(f"{name} {digest}")
