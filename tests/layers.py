"""The tracker's layers as import-linter's contracts in pyproject.toml state them, and the "May import:"
sentence each package's docstring must carry (checked by tests/test_architecture.py, written by
``python -m tests.layers --write``)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEAVES = ("settings", "errors", "enums")
LINE_WIDTH = 105


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def layers() -> list[list[str]]:
    """The tracker's layers, top first; siblings of one layer share a list."""
    for contract in _contracts():
        if contract.get("type") == "layers" and contract.get("containers") == ["tracker"]:
            names = contract["layers"]
            assert isinstance(names, list)
            return [[name.strip() for name in str(layer).split("|")] for layer in names]
    raise AssertionError("pyproject.toml has no layers contract for the tracker")


def _forbidden(package: str) -> set[str]:
    """Tracker packages a forbidden contract keeps ``tracker.<package>`` (as a whole) from importing."""
    out: set[str] = set()
    for contract in _contracts():
        if contract.get("type") == "forbidden" and f"tracker.{package}" in (
            contract.get("source_modules") or []
        ):
            for module in contract.get("forbidden_modules") or []:  # type: ignore[attr-defined]
                if str(module).startswith("tracker."):
                    out.add(str(module).removeprefix("tracker."))
    return out


def may_import(package: str) -> list[str]:
    """The tracker packages ``package`` may import, in layer order (top first)."""
    stack = layers()
    index = next(i for i, layer in enumerate(stack) if package in layer)
    below = [name for layer in stack[index + 1 :] for name in layer]
    return [name for name in below if name not in _forbidden(package)]


def sentence(package: str) -> str:
    """The "May import:" paragraph for ``package``, wrapped to the docstring's width."""
    names = may_import(package)
    text = (
        "May import: " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]) + "."
    )
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > LINE_WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines)


PARAGRAPH = re.compile(r"^May import:.*?(?=\n\s*\n|\Z)", re.S | re.M)


def stated(init: Path) -> str | None:
    """The "May import:" paragraph a package's docstring carries, or None."""
    docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
    found = PARAGRAPH.search(docstring)
    return found.group(0).strip() if found else None


def packages() -> list[str]:
    return sorted(init.parent.name for init in (ROOT / "tracker").glob("*/__init__.py"))


def write() -> None:
    """Rewrite each package docstring's "May import:" paragraph from the contracts."""
    for package in packages():
        init = ROOT / "tracker" / package / "__init__.py"
        old = stated(init)
        assert old is not None, f"{init} has no May import: paragraph to rewrite"
        init.write_text(init.read_text().replace(old, sentence(package), 1))


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    for name in packages():
        print(f"{name}: {sentence(name)}")
