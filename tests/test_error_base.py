"""Every error treebench raises derives from :class:`treebench.TreebenchError`.

Each keeps its built-in base, so ``except TreebenchError`` catches them all and
``except ValueError`` still works.
"""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

from treebench import TreebenchError
from treebench.errors import TreebenchError as Base

ROOT = Path(__file__).resolve().parents[1] / "treebench"

#: ``Exception`` classes that are not errors of bad input or state, and why (stops of a sweep,
#: ``SweepStopped`` and a SLURM time limit, derive from ``BaseException`` and are not looked at)
NOT_ERRORS = {
    "Skip": "the runner's signal that a job is recorded as skipped, never raised to a caller",
    "DeadlineExceeded": "an optimal solver's child killed at its deadline, caught by the method",
    "_Unstorable": "a private signal of the parsed-data cache",
}
_BUILTIN = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)}


def _exception_classes() -> dict[str, tuple[str, list[str]]]:
    """Return every class of treebench/ deriving from a built-in ``Exception``.

    By name, through treebench's own classes: name -> (module, base names).
    """
    found: dict[str, tuple[str, list[str]]] = {}
    for p in sorted(ROOT.rglob("*.py")):
        module = ".".join(p.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        )
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                found[node.name] = (module, bases)

    def is_exception(name: str, seen=()) -> bool:
        if name in _BUILTIN:
            return issubclass(getattr(builtins, name), Exception)
        return (
            name in found
            and name not in seen
            and any(is_exception(b, (*seen, name)) for b in found[name][1])
        )

    return {n: v for n, v in found.items() if any(is_exception(b) for b in v[1])}


ERRORS = sorted(n for n in _exception_classes() if n not in NOT_ERRORS and n != "TreebenchError")


def test_the_package_has_its_errors():
    assert len(ERRORS) >= 16 and TreebenchError is Base


@pytest.mark.parametrize("name", ERRORS)
def test_each_error_is_a_treebench_error_and_keeps_its_builtin_base(name):
    module, bases = _exception_classes()[name]
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, TreebenchError)
    builtin = [b for b in bases if b in _BUILTIN]
    for b in builtin:  # the caller's ``except ValueError`` (OSError, KeyError …) still catches it
        assert issubclass(cls, getattr(builtins, b))


def test_a_caller_catches_a_bad_input_as_a_treebench_error():
    from treebench.params import ParamError
    from treebench.results.validate import RecordError

    for exc in (ParamError("bad"), RecordError("bad")):
        with pytest.raises(TreebenchError):
            raise exc
    with pytest.raises(ValueError):
        raise ParamError("still a ValueError")


def test_an_os_and_a_key_error_keep_their_behaviour():
    from treebench.files import OutputsError
    from treebench.methods.base import UnknownMethodError

    assert isinstance(UnknownMethodError("x"), KeyError)
    assert str(UnknownMethodError("no method x")) == "no method x"  # its own str, not KeyError's
    exc = OutputsError(13, "Permission denied")
    assert exc.errno == 13 and isinstance(exc, OSError)
