"""Method registry: every module here registers scikit-learn estimators under short names."""

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
