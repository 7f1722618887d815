"""The documentation's links, commands and Python blocks stay true to the repository.

Checked in README.md, docs/*.md, notebooks/README.md and benchmarks/README.md: every relative
link names an existing file (and a ``#anchor`` a heading of it); every ``grid-vec ...`` command
line parses with the real CLI parser (parsed, never run); every ``python``/``pytest``/``bash``
command names an existing file; every Python block compiles, imports or defines every name it
uses, and the names it takes from grid_vec exist.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

from grid_vec.cli import UsageError, build_parser
from grid_vec.env.tasks import TASKS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
DOC_FILES = [README, *DOCS, ROOT / "notebooks" / "README.md", ROOT / "benchmarks" / "README.md"]
IDS = [str(path.relative_to(ROOT)) for path in DOC_FILES]

FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
SHELL_BLOCKS = {"", "bash", "sh", "shell", "console"}
COMMANDS = {"grid-vec", "python", "pytest", "bash"}
# Placeholders the docs write in command lines, and what stands for them when parsing.
PLACEHOLDERS = {"TASK": next(iter(TASKS))}


def _fenced(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block."""
    return [(m.group(1).lower(), m.group(2)) for m in FENCE.finditer(text)]


def _prose(text: str) -> str:
    """The text outside fenced blocks."""
    return FENCE.sub("", text)


def _code_spans(prose: str) -> list[str]:
    """Every inline code span, its line breaks read as spaces (as Markdown renders them)."""
    return [" ".join(m.group(2).split()) for m in CODE_SPAN.finditer(prose)]


def _links(path: Path) -> list[str]:
    """Every link target of a page, code left out."""
    prose = CODE_SPAN.sub("", _prose(path.read_text(encoding="utf-8")))
    return LINK.findall(prose)


def _relative_links(path: Path) -> list[str]:
    return [t for t in _links(path) if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces made ``-``."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading gets ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    anchors = set()
    for match in HEADING.finditer(_prose(path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def _command_lines(path: Path) -> list[str]:
    """Candidate command lines: each inline code span, and each line of a shell block
    (backslash continuations joined)."""
    text = path.read_text(encoding="utf-8")
    lines = _code_spans(_prose(text))
    for language, code in _fenced(text):
        if language in SHELL_BLOCKS:
            lines += code.replace("\\\n", " ").splitlines()
    return lines


def _commands(path: Path) -> list[list[str]]:
    """Every command a page writes: argv lists whose first word is one of COMMANDS, split at
    ``&&``, ``||``, ``;`` and ``|``, leading ``VAR=value`` settings and a ``$`` prompt left out."""
    found = []
    for line in _command_lines(path):
        line = line.strip().removeprefix("$ ")
        if not any(line.startswith(c) or re.match(r"^\w+=\S+ ", line) for c in COMMANDS):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # prose in a code span, not a command
            continue
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in {"&&", "||", ";", "|"}:
                while command and re.match(r"^\w+=", command[0]):
                    command.pop(0)
                if command and command[0] in COMMANDS:
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found


def _python_blocks(path: Path) -> list[str]:
    return [
        code
        for language, code in _fenced(path.read_text(encoding="utf-8"))
        if language in {"python", "py"}
    ]


def test_readme_is_at_most_200_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


MAX_README_CELL = 200  # a table cell a reader takes in at a glance; the details live in docs/


def test_every_readme_table_cell_is_short():
    rows = [line for line in README.read_text(encoding="utf-8").splitlines() if line[:1] == "|"]
    assert rows, "the README has no table"
    long = [
        cell.strip()[:80]
        for row in rows
        for cell in row.strip().strip("|").split(" | ")
        if len(cell.strip()) > MAX_README_CELL
    ]
    assert not long, f"README cells over {MAX_README_CELL} characters: {long}"


def test_readme_links_every_page_under_docs():
    linked = {(README.parent / t.split("#")[0]).resolve() for t in _relative_links(README)}
    assert DOCS, "docs/ holds no page"
    missing = [str(page.relative_to(ROOT)) for page in DOCS if page.resolve() not in linked]
    assert not missing, f"README.md links none of {missing}"


def test_the_checks_find_links_commands_and_python_blocks():
    """The extractors do find what the pages hold (a broken pattern would pass every check)."""
    assert sum(len(_relative_links(path)) for path in DOC_FILES) > 20
    words = [command[0] for path in DOC_FILES for command in _commands(path)]
    assert {"grid-vec", "python", "pytest", "bash"} <= set(words)
    assert sum(len(_python_blocks(path)) for path in DOCS) >= 2


def test_slug_follows_githubs_rule():
    assert slug("Differences from grid2op") == "differences-from-grid2op"
    assert slug("`grid-vec bench`") == "grid-vec-bench"
    assert slug("Tasks, action spaces, masks and heuristics, rewards") == (
        "tasks-action-spaces-masks-and-heuristics-rewards"
    )


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_relative_link_resolves_to_an_existing_file(path):
    missing = []
    for target in _relative_links(path):
        file = target.split("#")[0]
        if file and not (path.parent / file).exists():
            missing.append(target)
    assert not missing, f"{path.name}: links to missing files: {missing}"


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_link_anchor_names_a_heading_of_its_target(path):
    broken = []
    for target in _relative_links(path):
        file, _, anchor = target.partition("#")
        page = (path.parent / file) if file else path
        if anchor and page.suffix == ".md" and page.exists() and anchor not in _anchors(page):
            broken.append(target)
    assert not broken, f"{path.name}: anchors with no such heading: {broken}"


def _parse_error(argv: list[str]) -> str | None:
    """Why the CLI parser refuses ``argv`` (None: it parses). Nothing is run."""
    words = [PLACEHOLDERS.get(word, word) for word in argv[1:]]
    if len(words) == 1 and not words[0].startswith("-"):
        words.append("--help")  # a bare command name: the command exists
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parser.parse_args(words)
    except UsageError as exc:
        return str(exc)
    except SystemExit as exc:  # --help, --version
        return None if exc.code in (0, None) else f"exit {exc.code}"
    return None


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_grid_vec_command_line_parses_with_the_cli_parser(path):
    refused = []
    for argv in _commands(path):
        if argv[0] == "grid-vec" and len(argv) > 1:
            error = _parse_error(argv)
            if error is not None:
                refused.append(f"{shlex.join(argv)}: {error}")
    assert not refused, f"{path.name}:\n" + "\n".join(refused)


def _named_files(argv: list[str]) -> list[str]:
    """The files a ``python``, ``pytest`` or ``bash`` command names: the script (not after
    ``-c`` or ``-m``), or pytest's path arguments (a node id's file)."""
    if argv[0] in {"python", "bash"}:
        script = next((w for w in argv[1:] if not w.startswith("-")), None)
        if script is None or any(w in {"-c", "-m"} for w in argv[1 : argv.index(script)]):
            return []
        return [script]
    if argv[0] == "pytest":
        words = [w.split("::")[0] for w in argv[1:] if not w.startswith("-")]
        return [w for w in words if "/" in w or w.endswith(".py")]
    return []


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_python_pytest_or_bash_command_names_an_existing_file(path):
    missing = []
    for argv in _commands(path):
        missing += [
            f"{shlex.join(argv)}: {f}" for f in _named_files(argv) if not (ROOT / f).exists()
        ]
    assert not missing, f"{path.name}: commands name missing files:\n" + "\n".join(missing)


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_python_block_compiles(path):
    for number, code in enumerate(_python_blocks(path)):
        compile(code, f"{path.name}, Python block {number}", "exec")


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    """``grid_vec.a.b`` -> ["grid_vec", "a", "b"]; None when not rooted at ``grid_vec``."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "grid_vec":
        return ["grid_vec", *reversed(names)]
    return None


class _MissingExtra(Exception):
    """A grid_vec module needs an optional dependency that is not installed."""


def _import(name: str) -> object:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] != "grid_vec":
            raise _MissingExtra(exc.name) from exc
        raise


def _resolves(dotted: list[str]) -> bool:
    """Whether ``a.b.c`` names a module or an attribute, importing submodules on the way.

    Raises:
        _MissingExtra: a module on the way needs an optional dependency not installed.
    """
    try:
        obj = _import(dotted[0])
    except ImportError:
        return False
    for i, name in enumerate(dotted[1:], start=1):
        if hasattr(obj, name):
            obj = getattr(obj, name)
            continue
        try:
            obj = _import(".".join(dotted[: i + 1]))
        except ImportError:
            return False
    return True


def _grid_vec_names(tree: ast.AST) -> list[list[str]]:
    """Every grid_vec name a block imports or reads as ``grid_vec.x.y``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grid_vec":
            names += [[*node.module.split("."), alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name.split(".") for a in node.names if a.name.split(".")[0] == "grid_vec"]
        elif isinstance(node, ast.Attribute) and (chain := _attribute_chain(node)):
            names.append(chain)
    return names


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_grid_vec_name_a_python_block_imports_exists(path):
    missing, extras = [], set()
    for code in _python_blocks(path):
        for dotted in _grid_vec_names(ast.parse(code)):
            try:
                if not _resolves(dotted):
                    missing.append(".".join(dotted))
            except _MissingExtra as exc:
                extras.add(str(exc))
    assert not missing, f"{path.name}: no such grid_vec names: {missing}"
    if extras:  # the conftest turns this skip into a failure under GRID_VEC_REQUIRE_EXTRAS=1
        pytest.skip(f"needs the {sorted(extras)[0]} extra (not installed): {sorted(extras)}")


def _bound_names(tree: ast.AST) -> set[str]:
    """Names a block binds anywhere (scopes ignored: a loose but sufficient check)."""
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


@pytest.mark.parametrize("path", DOC_FILES, ids=IDS)
def test_every_python_block_imports_or_defines_every_name_it_uses(path):
    undefined = []
    for code in _python_blocks(path):
        tree = ast.parse(code)
        bound = _bound_names(tree)
        undefined += sorted(
            {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in bound}
        )
    assert not undefined, f"{path.name}: names used but never imported or defined: {undefined}"


def test_the_notebooks_documented_command_collects_every_notebook_test():
    """notebooks/README.md's command once deselected all of them (they are marked slow, and
    the default options leave the slow tests out)."""
    import subprocess
    import sys

    for module in ("nbformat", "nbclient", "ipykernel", "matplotlib", "stable_baselines3"):
        pytest.importorskip(module)  # the notebooks extra: without it the module skips itself
    readme = ROOT / "notebooks" / "README.md"
    (command,) = [
        line
        for language, code in _fenced(readme.read_text(encoding="utf-8"))
        if language == "bash"
        for line in code.splitlines()
        if " pytest " in f" {line} "
    ]
    argv = shlex.split(command)
    argv = argv[argv.index("pytest") + 1 :]
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    ids = [line for line in listed.stdout.splitlines() if "tests/test_notebooks.py::" in line]
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    # one execution test per notebook, and the check of their names
    assert len(ids) == len(notebooks) + 1, listed.stdout[-2000:]
