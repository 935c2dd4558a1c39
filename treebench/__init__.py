"""treebench: reproduce non-greedy and differentiable decision-tree papers side by side with CART."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("treebench")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.1.0"

__all__ = ["__version__"]
