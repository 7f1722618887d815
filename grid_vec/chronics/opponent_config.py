"""The opponent a grid2op ``config.py`` configures, read as data with :mod:`ast` (never run).

grid2op's datasets name their opponent in ``config = {...}``: ``opponent_class``,
``opponent_budget_class``, ``opponent_action_class`` (classes, read here as their names),
``opponent_attack_cooldown``, ``opponent_attack_duration``, ``opponent_budget_per_ts``,
``opponent_init_budget`` and ``kwargs_opponent`` (numbers, strings, lists, dicts). Real files
write some of these as module-level names with arithmetic (``cooldown = 12 * 24`` above the
dict), so this reader evaluates a small, bounded subset of Python:

* literals: numbers, strings, ``True``/``False``/``None``, lists, tuples (read as lists) and
  dicts with string keys;
* ``+ - * / // % **`` and unary ``-``/``+`` on numbers (not on strings, lists or bools);
* a name assigned at module level *above* the line that uses it (``x = ...``; the last such
  assignment wins), evaluated by the same rules;
* in the three class keys only: a name or a dotted name (``Opponent.RandomLineOpponent``),
  read as the string of its last part. Nothing is imported.

Anything else (calls, attribute access elsewhere, subscripts, comprehensions, f-strings,
lambdas, names defined later or nowhere) is one :class:`FolderFormatError` naming the file,
the key and the line.

:func:`read_config_entries` reads every entry of ``config`` by the same rules, for handing
grid2op a config it may run (:mod:`grid_vec.integrations.grid2op_folder`): there, a name or
dotted name that no assignment above defines is a :class:`ClassRef` (with the module a
module-level ``from M import N`` names, in a ``try`` block too), and a call of one with such
values as arguments a :class:`ClassCall`. Both are data: nothing is imported here.

Evaluation is bounded: nesting depth (:data:`MAX_DEPTH`), nodes evaluated
(:data:`MAX_NODES`), every number's size (``MAX_ABS_NUMBER``) and exponents.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grid_vec.chronics.config_file import parse_config
from grid_vec.chronics.untrusted import (
    MAX_ABS_NUMBER,
    FolderFormatError,
    short,
)

MAX_DEPTH = 32  # nested expressions (and names through names) evaluated
MAX_NODES = 100_000  # expression nodes evaluated for one file
MAX_EXPONENT = 64  # |y| in x ** y

CLASS_KEYS = ("opponent_class", "opponent_budget_class", "opponent_action_class")
NUMBER_KEYS = (
    "opponent_attack_cooldown",
    "opponent_attack_duration",
    "opponent_budget_per_ts",
    "opponent_init_budget",
)
KWARGS_KEY = "kwargs_opponent"
KEYS = (*CLASS_KEYS, *NUMBER_KEYS, KWARGS_KEY)

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


@dataclass(frozen=True)
class OpponentConfig:
    """The opponent entries of a ``config.py``: class names as strings, the rest as values
    (bounded, untyped: the env layer checks each one where it maps it)."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)  # the KEYS present in config

    def where(self, key: str) -> str:
        """``<path>: config['key']``, for messages."""
        return f"{self.path}: config[{key!r}]"


def opponent_entries(tree: ast.Module, path: Path) -> OpponentConfig:
    """The opponent entries (:data:`KEYS`) of the ``config`` dict of a ``config.py``.

    Args:
        tree: the file, parsed (:func:`grid_vec.chronics.config_file.parse_config`).
        path: the file it was read from (inside the dataset folder; for messages).

    Returns:
        The entries present, evaluated by the rules of the module docstring.

    Raises:
        FolderFormatError: the file has no module-level ``config = {...}`` dict, or an entry
            uses something this reader refuses.
    """
    assignments = _module_assignments(tree)
    config = assignments.get("config", [None])[-1]
    if config is None or not isinstance(config.value, ast.Dict):
        raise FolderFormatError(f"{path}: no module-level 'config = {{...}}' dict literal")
    evaluator = _Evaluator(path, assignments)
    values: dict[str, Any] = {}
    for key_node, value_node in zip(config.value.keys, config.value.values, strict=True):
        if not isinstance(key_node, ast.Constant) or key_node.value not in KEYS:
            continue
        key = key_node.value
        evaluator.key = key
        if key in CLASS_KEYS:
            values[key] = evaluator.class_name(value_node, 0)
        else:
            values[key] = evaluator.value(value_node, 0)
    return OpponentConfig(path, values)


@dataclass(frozen=True)
class ClassRef:
    """A class a ``config.py`` names: its name (the last part of a dotted name) and the
    module it is imported from (a ``from M import N`` at module level, or the dotted prefix;
    None when the file says nowhere)."""

    name: str
    module: str | None


@dataclass(frozen=True)
class ClassCall:
    """A call of a class in ``config.py`` (``RulesByArea([[0, 1], [2]])``), its arguments
    read by the same rules."""

    cls: ClassRef
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def read_config_entries(path: Path) -> dict[str, Any]:
    """Every entry of the ``config`` dict of ``path``, read as data (the file is never run):
    values as :func:`opponent_entries` reads them, classes as :class:`ClassRef`, calls
    of classes as :class:`ClassCall`.

    Args:
        path: a ``config.py`` inside the dataset folder (already checked to lie there).

    Returns:
        Each entry (string keys only), in the file's order.

    Raises:
        FolderFormatError: the file is not Python, has no module-level ``config = {...}``
            dict, a key is not a string, or an entry uses something refused.
    """
    tree = parse_config(path)
    assignments = _module_assignments(tree)
    config = assignments.get("config", [None])[-1]
    if config is None or not isinstance(config.value, ast.Dict):
        raise FolderFormatError(f"{path}: no module-level 'config = {{...}}' dict literal")
    evaluator = _Evaluator(path, assignments, _imported_names(tree))
    entries: dict[str, Any] = {}
    for key_node, value_node in zip(config.value.keys, config.value.values, strict=True):
        if not isinstance(key_node, ast.Constant) or not isinstance(key_node.value, str):
            line = getattr(key_node or value_node, "lineno", "?")
            raise FolderFormatError(f"{path}: config (line {line}): a key that is not a string")
        evaluator.key = key_node.value
        entries[key_node.value] = evaluator.value(value_node, 0)
    return entries


def _module_assignments(tree: ast.Module) -> dict[str, list[ast.Assign]]:
    """The module-level ``name = ...`` assignments, by name, in the file's order."""
    assignments: dict[str, list[ast.Assign]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                assignments.setdefault(target.id, []).append(node)
    return assignments


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Name -> module of the module-level imports (``from M import N [as A]``, ``import M``),
    those of a ``try`` block's body included (the first import of a name wins: the body of
    ``try: from new import X except ImportError: from old import X``)."""
    names: dict[str, str] = {}
    statements = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.Try):
            statements.extend(node.body)
    for node in statements:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names.setdefault(alias.asname or alias.name, node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.setdefault(alias.asname or alias.name.split(".")[0], alias.name)
    return names


class _Evaluator:
    """Evaluates the expressions of one file within the bounds of the module docstring;
    given ``imports`` (name -> module), names no assignment above defines are classes."""

    def __init__(
        self,
        path: Path,
        assignments: dict[str, list[ast.Assign]],
        imports: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        self.assignments = assignments
        self.imports = imports
        self.key = ""
        self.nodes = 0
        self.memo: dict[int, Any] = {}

    def error(self, node: ast.AST, what: str) -> FolderFormatError:
        line = getattr(node, "lineno", "?")
        return FolderFormatError(
            f"{self.path}: config[{self.key!r}] (line {line}): {what}; only literals, "
            "arithmetic and names assigned above are read, the file is never executed"
        )

    def _enter(self, node: ast.AST, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(node, f"more than {MAX_NODES} expression nodes")
        if depth > MAX_DEPTH:
            raise self.error(node, f"nested more than {MAX_DEPTH} levels deep")

    def _assigned(self, node: ast.Name) -> ast.Assign:
        """The last module-level assignment of ``node``'s name above its line."""
        earlier = [a for a in self.assignments.get(node.id, []) if a.lineno < node.lineno]
        if not earlier:
            raise self.error(node, f"name {short(node.id)} is not assigned above this line")
        return earlier[-1]

    def class_name(self, node: ast.expr, depth: int) -> str | None:
        """A class named by a name or dotted name, as the string of its last part (None for
        a literal None; a name assigned above is followed)."""
        self._enter(node, depth)
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, ast.Attribute):
            inner = node.value
            while isinstance(inner, ast.Attribute):
                inner = inner.value
            if not isinstance(inner, ast.Name):
                raise self.error(node, "a class must be a name or a dotted name")
            return node.attr
        if isinstance(node, ast.Name):
            if any(a.lineno < node.lineno for a in self.assignments.get(node.id, [])):
                return self.class_name(self._assigned(node).value, depth + 1)
            return node.id  # an imported (or otherwise defined) class: its name only
        raise self.error(node, f"a class must be a name, got {type(node).__name__}")

    def value(self, node: ast.expr, depth: int) -> Any:
        self._enter(node, depth)
        if isinstance(node, ast.Constant):
            v = node.value
            if v is None or isinstance(v, (bool, str)):
                return v
            if isinstance(v, (int, float)):
                return self._number(node, v)
            raise self.error(node, f"constant {short(v)} is not a number, string or bool")
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise self.error(node, "'**' in a dict is refused")
                key = self.value(k, depth + 1)
                if not isinstance(key, str):
                    raise self.error(k, f"dict key {short(key)} is not a string")
                out[key] = self.value(v, depth + 1)
            return out
        if self.imports is not None and isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            found = self._class_or_call(node, depth)
            if found is not None:
                return found
        if isinstance(node, ast.Name):
            assign = self._assigned(node)
            if id(assign) not in self.memo:
                self.memo[id(assign)] = self.value(assign.value, depth + 1)
            return self.memo[id(assign)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            x = self._operand(node.operand, depth)
            return self._number(node, -x if isinstance(node.op, ast.USub) else x)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            x = self._operand(node.left, depth)
            y = self._operand(node.right, depth)
            if isinstance(node.op, ast.Pow) and not abs(y) <= MAX_EXPONENT:
                raise self.error(node, f"exponent {short(y)} beyond {MAX_EXPONENT}")
            try:
                result = _BINARY[type(node.op)](x, y)
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                raise self.error(node, f"arithmetic fails ({type(e).__name__})") from None
            if isinstance(result, complex):
                raise self.error(node, "arithmetic gives a complex number")
            return self._number(node, result)
        raise self.error(node, f"{type(node).__name__} is refused")

    def _class_or_call(self, node: ast.expr, depth: int) -> ClassRef | ClassCall | None:
        """A class (a name no assignment above defines, or a dotted name) or a call of one;
        None for a name assigned above (a value)."""
        assert self.imports is not None
        if isinstance(node, ast.Name):
            if any(a.lineno < node.lineno for a in self.assignments.get(node.id, [])):
                return None
            return ClassRef(node.id, self.imports.get(node.id))
        if isinstance(node, ast.Attribute):
            parts = [node.attr]
            inner = node.value
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if not isinstance(inner, ast.Name):
                raise self.error(node, "a class must be a name or a dotted name")
            root = self.imports.get(inner.id, inner.id)
            return ClassRef(node.attr, ".".join([root, *reversed(parts[1:])]))
        assert isinstance(node, ast.Call)
        cls = self.value(node.func, depth + 1)
        if not isinstance(cls, ClassRef):
            raise self.error(node, "only a class may be called")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise self.error(node, "'*' and '**' arguments are refused")
        args = tuple(self.value(a, depth + 1) for a in node.args)
        kwargs = {str(k.arg): self.value(k.value, depth + 1) for k in node.keywords}
        return ClassCall(cls, args, kwargs)

    def _operand(self, node: ast.expr, depth: int) -> int | float:
        x = self.value(node, depth + 1)
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise self.error(node, f"arithmetic on {short(x)}, which is not a number")
        return x

    def _number(self, node: ast.AST, x: int | float) -> int | float:
        if not abs(x) <= MAX_ABS_NUMBER or (isinstance(x, float) and not math.isfinite(x)):
            raise self.error(node, f"number beyond |x| <= {MAX_ABS_NUMBER:g}")
        return x
