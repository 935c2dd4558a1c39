"""Which module registers which method name for which task, read from the method packages' source.

The registry (:mod:`treebench.methods.base`) is filled by the ``@register(name, task, ...)``
decorators that run when a method package is imported, and importing every package costs seconds
(PyTorch, numba, scikit-learn ensembles). :func:`registrations` reads the same decorators from the
source files instead, without importing anything: ``treebench list`` shows the tasks from it, and
:func:`~treebench.methods.base.get_entry` imports only the module(s) that register the method asked
for. The decorators stay the one place that says which tasks a method supports; a test checks that
this index equals the registry after :func:`~treebench.methods.base.discover`.

This module imports only the standard library (``treebench list`` must not pay for scikit-learn).
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

CLASSIFICATION = "classification"
REGRESSION = "regression"
TASKS = (CLASSIFICATION, REGRESSION)

# the names a decorator may use for a task (``from treebench.methods.base import CLASSIFICATION``)
_TASK_NAMES = {"CLASSIFICATION": CLASSIFICATION, "REGRESSION": REGRESSION}


@dataclass
class SourceIndex:
    """The registrations found in the method packages' source.

    Attributes
    ----------
    tasks : dict
        ``{method name: {task: module}}`` of every ``@register`` call whose name and task are
        literals (or the task constants); ``module`` is the dotted module that holds the call.
    opaque : list of str
        Modules with a ``register`` call the source alone does not resolve (a computed name or
        task): only importing them says what they register.
    """

    tasks: dict[str, dict[str, str]] = field(default_factory=dict)
    opaque: list[str] = field(default_factory=list)

    def modules(self, name: str) -> list[str]:
        """Return the modules that register ``name`` (empty when the source does not name it)."""
        return sorted(set(self.tasks.get(name, {}).values()))


def _literal_task(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and node.value in TASKS:
        return node.value
    if isinstance(node, ast.Name):
        return _TASK_NAMES.get(node.id)
    if isinstance(node, ast.Attribute):  # base.CLASSIFICATION
        return _TASK_NAMES.get(node.attr)
    return None


# a registration: a decorator at the start of a line, ``@register(`` or ``@base.register(``
_DECORATOR = re.compile(r"^@((?:\w+\.)*register\()", re.M)
_ANY_CALL = re.compile(r"(?<!\w)register\(")
_MAX_LINES = 50  # a decorator call longer than this is left to the import


def _decorator_call(text: str, start: int) -> ast.Call | None:
    """Return the call expression that starts at ``text[start]`` (``register(...)``), or None.

    Parsed from as many lines as it spans; None when it does not parse within :data:`_MAX_LINES`
    lines.
    """
    end = start
    for _ in range(_MAX_LINES):
        end = text.find("\n", end) + 1 or len(text)
        try:
            node = ast.parse(text[start:end].strip(), mode="eval").body
        except SyntaxError:
            if end == len(text):
                return None
            continue
        return node if isinstance(node, ast.Call) else None
    return None


def _scan_file(path: Path, module: str, index: SourceIndex) -> None:
    # parsing only the decorators, not the whole module: ~1 ms instead of ~90 ms for the methods
    text = path.read_text(encoding="utf-8")
    if "register(" not in text:
        return
    found = list(_DECORATOR.finditer(text))
    if len(found) != len(_ANY_CALL.findall(text)):  # a call elsewhere: only the import tells
        index.opaque.append(module)
    for m in found:
        call = _decorator_call(text, m.start(1))
        if call is None:
            if module not in index.opaque:
                index.opaque.append(module)
            continue
        args = list(call.args)
        kw = {k.arg: k.value for k in call.keywords}
        name_node = args[0] if args else kw.get("name")
        task_node = args[1] if len(args) > 1 else kw.get("task")
        name = (
            name_node.value
            if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str)
            else None
        )
        task = _literal_task(task_node) if task_node is not None else None
        if name is None or task is None:
            if module not in index.opaque:
                index.opaque.append(module)
            continue
        index.tasks.setdefault(name, {})[task] = module


def scan(package: str = "treebench.methods") -> SourceIndex:
    """Return the registrations of every method package of ``package``.

    As :func:`~treebench.methods.base.discover` imports them: subpackages whose names do not start
    with ``_``, on the package's current ``__path__``.

    Parameters
    ----------
    package : str
        The dotted name of the methods package.

    Returns
    -------
    SourceIndex
        Method names with their tasks and registering modules, and the modules not resolved.
    """
    return _scan(package, tuple(importlib.import_module(package).__path__))


@functools.cache
def _scan(package: str, paths: tuple[str, ...]) -> SourceIndex:
    """:func:`scan` of the directories ``paths`` (read once per process)."""
    index = SourceIndex()
    for root in map(Path, paths):
        if not root.is_dir():
            continue
        for pkg in sorted(root.iterdir()):
            if pkg.name.startswith(("_", ".")) or not (pkg / "__init__.py").is_file():
                continue
            for path in sorted(pkg.rglob("*.py")):
                rel = path.relative_to(root).with_suffix("").parts
                parts = rel[:-1] if rel[-1] == "__init__" else rel
                _scan_file(path, ".".join((package, *parts)), index)
    return index
