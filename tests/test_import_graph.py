"""The import graph of grid_vec: no circle between its modules, layers import only downwards,
the batched core needs no gymnasium, and no private name crosses modules.

Every import is read from the source (module level and inside functions, under
``TYPE_CHECKING`` too): a lazy import hides a circle from Python, not from this walk.
``from pkg import name`` counts as an import of the submodule ``pkg.name`` when there is one,
else of ``pkg``.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

import grid_vec

PACKAGE = Path(grid_vec.__file__).parent

# the layers, lowest first: a module may import its own layer and those before it
LAYERS = (
    ("_untrusted", "_untrusted_npz", "_argtypes", "_signals", "_distinct"),
    ("grid",),
    ("chronics",),
    ("core",),
    ("env",),
    ("vector",),
    ("runner", "marl"),
    ("integrations", "bench", "task_commands", "export_command", "cli", "grid_vec_launcher"),
)
_RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("grid_vec", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    launcher = PACKAGE.parent / "grid_vec_launcher.py"  # the frozen app's entry, beside it
    if launcher.is_file():
        modules["grid_vec_launcher"] = launcher
    return modules


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module of the package a dotted name lies in (None: outside it)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> list[tuple[ast.stmt, str, list[str]]]:
    """Each import statement of ``module``: (node, imported module, names taken from it)."""
    out = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                if not is_package:
                    parts = parts[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    out.append((node, sub, []))
                else:
                    out.append((node, base, [alias.name]))
    return out


def _graph() -> dict[str, dict[str, int]]:
    """module -> {module of the package it imports: line of the first such import}."""
    graph: dict[str, dict[str, int]] = {m: {} for m in MODULES}
    for module, path in MODULES.items():
        for node, target, _ in _imports(module, path):
            owner = _owner(target) if target.startswith("grid_vec") else None
            if owner is not None and owner != module:
                graph[module].setdefault(owner, node.lineno)
    return graph


GRAPH = _graph()


def _layer(module: str) -> int | None:
    """The module's layer (None: the package itself, which only registers and re-exports)."""
    parts = module.split(".")
    return _RANK.get(parts[1] if len(parts) > 1 else parts[0])


def _cycle() -> list[str] | None:
    """One circle of imports (its modules in order, the first repeated last), None: none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def _chain(cycle: list[str]) -> str:
    return (
        " -> ".join(f"{a} (line {GRAPH[a][b]})" for a, b in itertools.pairwise(cycle))
        + f" -> {cycle[-1]}"
    )


def test_the_walk_sees_the_package():
    assert "grid_vec.core.batch" in MODULES and "grid_vec.env.grid_env" in MODULES
    assert "grid_vec.core.state" in GRAPH["grid_vec.core.batch"]
    for module in MODULES:
        if module != "grid_vec":
            assert _layer(module) is not None, f"{module} is in no layer: add it to LAYERS"


def test_no_import_circle_between_modules():
    cycle = _cycle()
    assert cycle is None, f"import circle: {_chain(cycle)}"


def test_layers_import_only_downwards():
    upward = [
        f"{module} (line {line}) -> {target}"
        for module, targets in GRAPH.items()
        for target, line in targets.items()
        if _layer(module) is not None
        and _layer(target) is not None
        and _layer(target) > _layer(module)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("grid_vec.core")))
def test_the_core_needs_no_gymnasium(module):
    for node, target, _ in _imports(module, MODULES[module]):
        assert target.split(".")[0] != "gymnasium", (
            f"{module} (line {node.lineno}) imports {target}"
        )


def test_no_private_name_crosses_modules():
    crossing = [
        f"{module} (line {node.lineno}) imports {name} from {target}"
        for module, path in MODULES.items()
        for node, target, names in _imports(module, path)
        if target.startswith("grid_vec")
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not crossing, "\n".join(crossing)


def test_no_test_module_imports_the_tests_folder_as_a_package():
    """``tests/`` is no package: pytest puts the folder itself on ``sys.path`` (its conftest's
    rootdir), so a helper is ``import benchmark_scripts``; ``from tests.x import`` only works
    under ``python -m pytest`` (the current folder on the path) and broke CI's plain ``pytest``."""
    tests_dir = Path(__file__).parent
    offenders = [
        f"{path.relative_to(tests_dir)}:{node.lineno} imports {target}"
        for path in sorted(tests_dir.rglob("*.py"))
        for node, target, _ in _imports(path.stem, path)
        if target == "tests" or target.startswith("tests.")
    ]
    assert not offenders, offenders
