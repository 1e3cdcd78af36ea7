"""The wire format is a leaf, and runners reach the tracker over HTTP only: AST scans of the sources,
and what importing ``wire`` actually loads."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module) of every import in ``path``, inside functions and ``TYPE_CHECKING`` too."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            yield node.lineno, node.module


def imports_of(package: str, *, top_level: set[str]) -> list[str]:
    """``file:line module`` for every import under ``package`` whose top-level name is in ``top_level``."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in imported_modules(path):
            if module.partition(".")[0] in top_level:
                found.append(f"{path.relative_to(ROOT)}:{line} {module}")
    return found


def test_the_wire_format_imports_only_pydantic_and_the_standard_library() -> None:
    allowed = {"pydantic", "wire", *sys.stdlib_module_names}
    outside = []
    for path in sorted((ROOT / "wire").rglob("*.py")):
        outside += [
            f"{path.relative_to(ROOT)}:{line} {module}"
            for line, module in imported_modules(path)
            if module.partition(".")[0] not in allowed
        ]
    assert outside == []


def test_importing_the_wire_format_loads_no_other_part_of_perftrack() -> None:
    script = (
        "import sys, wire\n"
        "banned = {'tracker', 'web', 'runners', 'fastapi', 'sqlalchemy', 'httpx', 'starlette'}\n"
        "print(sorted({name.partition('.')[0] for name in sys.modules} & banned))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == "[]"


def test_runners_import_nothing_from_the_tracker_or_the_web_app() -> None:
    assert imports_of("runners", top_level={"tracker", "web"}) == []


def test_the_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "import os\n\ndef late():\n    from tracker.db import upgrade\n    from . import sibling\n"
    )
    assert list(imported_modules(source)) == [(1, "os"), (4, "tracker.db")]
