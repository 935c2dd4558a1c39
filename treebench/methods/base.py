"""The method contract.

Size report, registry, parameter-constraint shorthands and shared helpers.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import _fit_context  # noqa: F401 - re-exported for the estimators' fit
from sklearn.utils._param_validation import (  # noqa: F401 - re-exported
    Interval,
    InvalidParameterError,
    StrOptions,
)
from sklearn.utils.validation import _check_sample_weight

from treebench.errors import TreebenchError
from treebench.graph.flat import node_depths
from treebench.methods._index import (  # noqa: F401 - the task names are re-exported
    CLASSIFICATION,
    REGRESSION,
    TASKS,
    scan,
)
from treebench.methods._threads import limited

# Shorthands for the estimators' scikit-learn ``_parameter_constraints`` (validated at the start of
# ``fit`` by ``_fit_context`` and while a job is planned by :func:`treebench.params.check_params`).
POSITIVE_INT = Interval(Integral, 1, None, closed="left")
NON_NEGATIVE_INT = Interval(Integral, 0, None, closed="left")
POSITIVE = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
UNIT = Interval(Real, 0, 1, closed="both")

SIZE_KEYS = ("n_trees", "n_splits", "n_leaves", "depth", "mean_depth", "split_evals")


class SizeMixin:
    """Mixin for treebench estimators: a model-size report.

    Subclasses implement :meth:`size_report`; ``requires_torch = True`` marks estimators whose
    ``fit`` imports PyTorch (the bench imports it once in the parent before forking its workers). A
    tree method also implements ``to_graph()``; a model that is not a tree says why in ``no_graph``.
    """

    requires_torch = False
    no_graph = ""

    def size_report(self, X) -> dict[str, float]:
        """Size of the fitted model, measured with the samples ``X``.

        Returns
        -------
        dict
            ``n_trees`` (members), ``n_splits`` (internal nodes, summed over members),
            ``n_leaves``, ``depth`` (max over members), ``mean_depth`` (mean number of
            internal nodes a sample of ``X`` visits in one member) and ``split_evals``
            (mean split evaluations per sample, summed over members).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement size_report")


# ----------------------------------------------------------------------------- registry


@dataclass
class MethodEntry:
    """One registered method name and its estimator class per task."""

    name: str
    description: str
    classes: dict[str, type] = field(default_factory=dict)

    @property
    def tasks(self) -> tuple[str, ...]:
        """Return the tasks the method is registered for."""
        return tuple(t for t in TASKS if t in self.classes)


_REGISTRY: dict[str, MethodEntry] = {}
_DISCOVERED = False


class UnknownMethodError(KeyError, TreebenchError):
    """Raised for a method name that is not registered; the message lists the choices."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


class UnsupportedTaskError(ValueError, TreebenchError):
    """Raised when a method has no estimator for the dataset's task (recorded as a skip)."""


def register(name: str, task: str, description: str = ""):
    """Class decorator: register an estimator under a short method name for one task.

    Its ``fit`` and predictions then run under its thread limit
    (:func:`~treebench.methods._threads.limited`).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")

    def deco(cls):
        entry = _REGISTRY.setdefault(name, MethodEntry(name, description))
        if description and not entry.description:
            entry.description = description
        entry.classes[task] = cls
        cls._tb_name = name
        return limited(cls)  # fits and predicts under its thread limit, as in the runner

    return deco


def discover() -> dict[str, MethodEntry]:
    """Import every method package of :mod:`treebench.methods` once so all methods register.

    A method is a subpackage ``treebench/methods/<method>/`` (its name not starting with ``_``)
    whose import registers its estimators with :func:`register`; modules beside the packages
    (``base``, ``_routing``, ...) are shared helpers and are not imported here.
    """
    global _DISCOVERED
    if not _DISCOVERED:
        pkg = importlib.import_module("treebench.methods")
        for mod in pkgutil.iter_modules(pkg.__path__):
            if mod.ispkg and not mod.name.startswith("_"):
                importlib.import_module(f"treebench.methods.{mod.name}")
        _DISCOVERED = True
    return _REGISTRY


def available_methods() -> list[str]:
    """Sorted names of all registered methods."""
    return sorted(discover())


def suggest(name: str, choices: list[str]) -> str:
    """Return a 'did you mean' hint for ``name`` among ``choices`` (empty when nothing is close)."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _import_registering(name: str) -> None:
    """Import the modules whose source registers ``name`` (:mod:`treebench.methods._index`).

    Thus one method costs its own imports only (CART need not import PyTorch or numba).
    """
    for module in scan().modules(name):
        if module not in sys.modules:
            importlib.import_module(module)


def get_entry(name: str) -> MethodEntry:
    """Return the registry entry of ``name``; an unknown name raises with the list of choices.

    Imports only the method package(s) registering ``name``; a name their source does not show
    imports every package (:func:`discover`) before it is looked up or refused.
    """
    _import_registering(name)
    reg = _REGISTRY if name in _REGISTRY else discover()
    if name not in reg:
        choices = sorted(reg)
        raise UnknownMethodError(
            f"Unknown method {name!r}.{suggest(name, choices)} Choices: {', '.join(choices)}"
        )
    return reg[name]


def get_method(name: str, task: str) -> type:
    """Return the estimator class registered as ``name`` for ``task``."""
    entry = get_entry(name)
    if task not in entry.classes:
        raise UnsupportedTaskError(
            f"method {name!r} does not support {task} (it supports: {', '.join(entry.tasks)})"
        )
    return entry.classes[task]


# ----------------------------------------------------------------------------- sample weights


def validate_sample_weight(sample_weight, X):
    """Return validated ``sample_weight`` of the rows of ``X``.

    Float64 (n,), finite and >= 0, some > 0.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), number or None
        The weights passed to ``fit`` (a number means that weight for every row).
    X : array-like of shape (n_samples, n_features)
        The validated training inputs.

    Returns
    -------
    ndarray of shape (n_samples,) or None
        None when ``sample_weight`` is None, so that callers keep their unweighted path unchanged.

    Raises
    ------
    ValueError
        For a wrong shape, a negative or non-finite weight, or weights that are all zero.
    """
    if sample_weight is None:
        return None
    sw = _check_sample_weight(sample_weight, X, dtype=np.float64)  # shape, finite (and all-zero)
    if np.any(sw < 0):
        raise ValueError("sample_weight: negative weights are not allowed")
    if not np.any(sw > 0):  # older scikit-learn does not check this itself
        raise ValueError("sample_weight: all weights are zero; at least one must be positive")
    return sw


# ----------------------------------------------------------------------------- estimator checks


def expected_failed_checks(estimator, inherited: bool = True) -> dict[str, str]:
    """scikit-learn estimator checks that ``estimator`` is declared to fail, with a reason each.

    Estimator classes declare them in a class attribute ``_expected_failed_checks``
    (``{check name: one-line reason}``, merged along the MRO, subclasses last). Subclasses of
    scikit-learn estimators also keep scikit-learn's own declarations for their base class, which
    scikit-learn looks up by exact type and so would not find for a subclass.

    Parameters
    ----------
    estimator : estimator instance
    inherited : bool, default=True
        Include scikit-learn's declarations of scikit-learn base classes.

    Returns
    -------
    dict
        The ``expected_failed_checks`` argument of ``check_estimator``; as a callable, this
        function is the argument of the same name of ``parametrize_with_checks``.
    """
    out: dict[str, str] = {}
    sklearn_xfail = {}
    if inherited:
        try:
            from sklearn.utils._test_common.instance_generator import PER_ESTIMATOR_XFAIL_CHECKS
        except ImportError:  # pragma: no cover - private scikit-learn module moved
            PER_ESTIMATOR_XFAIL_CHECKS = {}
        sklearn_xfail = PER_ESTIMATOR_XFAIL_CHECKS
    for cls in reversed(type(estimator).__mro__):
        out.update(sklearn_xfail.get(cls, {}))
        out.update(vars(cls).get("_expected_failed_checks", {}))
    return out


# ----------------------------------------------------------------------------- size helpers


def sklearn_tree_size(estimator, X) -> dict[str, float]:
    """Return the size report of a fitted scikit-learn tree (``estimator.tree_``) on ``X``."""
    t = estimator.tree_
    is_leaf = t.children_left < 0
    n_leaves = int(is_leaf.sum())
    depth = node_depths(t.children_left, t.children_right)
    X = np.asarray(X, dtype=np.float32)
    mean_depth = float(depth[estimator.apply(X)].mean()) if len(X) else 0.0
    return {
        "n_trees": 1,
        "n_splits": int(t.node_count - n_leaves),
        "n_leaves": n_leaves,
        "depth": int(depth.max()),
        "mean_depth": mean_depth,
        "split_evals": mean_depth,
    }


def combine_sizes(reports: list[dict[str, float]]) -> dict[str, float]:
    """Size report of an ensemble from its members' reports (sums, max depth, mean depth)."""
    if not reports:
        return dict.fromkeys(SIZE_KEYS, 0)
    return {
        "n_trees": int(sum(r["n_trees"] for r in reports)),
        "n_splits": int(sum(r["n_splits"] for r in reports)),
        "n_leaves": int(sum(r["n_leaves"] for r in reports)),
        "depth": int(max(r["depth"] for r in reports)),
        "mean_depth": float(np.mean([r["mean_depth"] for r in reports])),
        "split_evals": float(sum(r["split_evals"] for r in reports)),
    }


def member_size(member, X) -> dict[str, float]:
    """Size report of an ensemble member: a treebench estimator or a scikit-learn tree."""
    if hasattr(member, "size_report"):
        return member.size_report(X)
    if hasattr(member, "tree_"):
        return sklearn_tree_size(member, X)
    raise TypeError(f"cannot measure the size of {type(member).__name__}")


# ----------------------------------------------------------------------------- in-process caches


_CACHE_CLEARERS: list = []


def register_cache(clear):
    """Register a method's in-process cache by the function that empties it (a decorator)."""
    _CACHE_CLEARERS.append(clear)
    return clear


def clear_caches() -> None:
    """Empty every method's in-process cache, so that a timed fit does all its work.

    Benchmarks repeat the same fit in one process; a memo would time the hit, not the method.
    """
    for clear in _CACHE_CLEARERS:
        clear()


# ----------------------------------------------------------------------------- torch helpers


def import_torch(n_threads: int | None = None):
    """Import torch lazily and set its intra-op threads (``None`` or <= 0 leaves the default)."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "this method needs PyTorch; install the CPU wheel with `pip install torch==2.13.0` "
            "or `pip install -e .[torch]`"
        ) from exc
    if n_threads is not None and n_threads > 0:
        torch.set_num_threads(int(n_threads))
    return torch


def int_seed(random_state: Any) -> int:
    """Return an integer seed for a library that takes one.

    Drawn from a numpy ``RandomState``/int/None.
    """
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def torch_generator(random_state: Any):
    """Return a seeded ``torch.Generator`` derived from a numpy ``RandomState``/int/None.

    Never global.
    """
    from sklearn.utils import check_random_state

    torch = import_torch()
    rs = check_random_state(random_state)
    g = torch.Generator()
    g.manual_seed(int(rs.randint(0, 2**31 - 1)))
    return g
