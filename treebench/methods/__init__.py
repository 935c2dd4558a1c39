"""Methods: one package per method, registered under short names.

``treebench/methods/<method>/`` holds everything about one method: its estimator(s) (registered with
:func:`register` when the package is imported), kernels and cores, and its graph export
(``to_graph()`` builds a :class:`treebench.graph.GraphEnsemble` in the package's ``export.py``).
:func:`discover` imports every subpackage whose name does not start with ``_``. Modules beside the
packages are shared: ``base`` (the contract, registry, size helpers), ``_routing`` (compiled
routing), ``_export`` (graph-export helpers) and ``_index`` (which module registers which method,
read from the source without importing it). The registry functions below are imported from ``base``
on first use, so that importing a light module of this package does not import scikit-learn.
"""

import importlib

__all__ = [
    "CLASSIFICATION",
    "REGRESSION",
    "SizeMixin",
    "UnknownMethodError",
    "UnsupportedTaskError",
    "available_methods",
    "discover",
    "get_entry",
    "get_method",
    "register",
]


def __getattr__(name: str):
    """Return the names of :mod:`treebench.methods.base`, imported on first use.

    ``base`` imports scikit-learn (~1 s), which ``treebench list`` and the light modules here do not
    need.
    """
    if name in __all__:
        return getattr(importlib.import_module("treebench.methods.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
