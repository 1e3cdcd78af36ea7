"""The shape of the code, checked: no import cycle inside the tracker (imports inside functions
count too, so none can hide a circle), no import inside a function in the service's packages, and
no module over 400 lines or function over 60 without a reason written above it.

The layers between packages are import-linter's (``lint-imports``, contracts in pyproject.toml);
it reads the same imports but does not report cycles inside a layer, which this does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import layers

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tracker", "web", "wire", "runners", "perftrack")
# The toy repository's sources are data written into a git history, never imported from here.
DATA = ROOT / "runners" / "toy" / "source"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# Written on the line above a longer function (or its decorators): "# Long on purpose: why".
LONG_MARKER = "# Long on purpose:"


@dataclass(frozen=True)
class Import:
    """One import statement of a module: whom it names, where, and whether inside a function."""

    module: str
    target: str
    line: int
    in_function: bool


def _modules(package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        if DATA in path.parents:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(module, alias.name, child.lineno, in_function)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    yield Import(module, f"{base}.{alias.name}", child.lineno, in_function)
            yield from visit(child, inside)

    yield from visit(tree, False)


def _graph(package: str) -> dict[str, set[str]]:
    modules = dict(_modules(package))
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for found in _imports(name, path):
            target = found.target
            while target and target not in modules:  # "pkg.mod.name" names the module "pkg.mod"
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return cycles


def test_the_cycle_finder_finds_a_circle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_the_tracker_has_no_import_cycle() -> None:
    assert find_cycles(_graph("tracker")) == []


@pytest.mark.parametrize("package", ["tracker", "web", "wire", "runners"])
def test_no_import_inside_a_function(package: str) -> None:
    inner = [
        f"{path.relative_to(ROOT)}:{found.line} imports {found.target}"
        for name, path in _modules(package)
        for found in _imports(name, path)
        if found.in_function
    ]
    assert inner == []


def _long_functions(path: Path) -> Iterator[str]:
    lines = path.read_text().splitlines()
    for node in ast.walk(ast.parse("\n".join(lines), filename=str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        if length <= MAX_FUNCTION_LINES:
            continue
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        above = lines[first - 2].strip() if first >= 2 else ""
        if not above.startswith(LONG_MARKER) or len(above) < len(LONG_MARKER) + 12:
            yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name} is {length} lines"


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_and_functions_stay_small(package: str) -> None:
    too_long = []
    for _, path in _modules(package):
        count = len(path.read_text().splitlines())
        if count > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(ROOT)} is {count} lines")
        too_long.extend(_long_functions(path))
    assert too_long == []


def test_each_tracker_package_says_what_it_owns_and_may_import() -> None:
    """Each package's docstring says what it owns, and its "May import:" paragraph is the one the
    import-linter contracts give (``python -m tests.layers --write`` rewrites them all)."""
    wrong = {}
    for package in layers.packages():
        init = ROOT / "tracker" / package / "__init__.py"
        if layers.stated(init) != layers.sentence(package):
            wrong[package] = layers.sentence(package)
    assert wrong == {}


def test_each_tracker_package_has_a_test_folder() -> None:
    missing = [
        package for package in layers.packages() if not (ROOT / "tests" / "tracker" / package).is_dir()
    ]
    assert missing == []
