"""treebench: reproduce non-greedy and differentiable decision-tree papers beside CART."""

from treebench.errors import TreebenchError

__all__ = ["TreebenchError", "__version__"]


def __getattr__(name: str):
    """``__version__``, looked up on first use.

    ``importlib.metadata`` and the search of the installed distributions cost ~50 ms of every
    command's startup (``--help``, ``list``).
    """
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("treebench")
    except PackageNotFoundError:  # running from a source tree without install
        value = "0.1.0"
    globals()["__version__"] = value
    return value
