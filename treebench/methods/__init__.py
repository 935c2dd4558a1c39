"""Methods: one package per method, registered under short names.

``treebench/methods/<method>/`` holds everything about one method: its estimator(s) (registered with
:func:`register` when the package is imported), kernels and cores, and its graph export
(``to_graph()`` builds a :class:`treebench.inspect.GraphEnsemble` in the package's ``export.py``).
:func:`discover` imports every subpackage whose name does not start with ``_``. Modules beside the
packages are shared: ``base`` (the contract, registry, size helpers), ``_flatgraph`` (structure of
flat trees and graphs), ``_routing`` (compiled routing) and ``_export`` (graph-export helpers).
"""

from treebench.methods.base import (
    CLASSIFICATION,
    REGRESSION,
    SizeMixin,
    UnknownMethodError,
    UnsupportedTaskError,
    available_methods,
    discover,
    get_entry,
    get_method,
    register,
)

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
