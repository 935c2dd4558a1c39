"""Optional dependencies a method config ``requires`` (``requires: [torch]``).

Which are missing and the one line that installs them. Standard library only (``treebench list``
reads it).
"""

from __future__ import annotations

#: the extra that installs an optional dependency a method config ``requires``
EXTRAS = {
    "torch": "torch",
    "gosdt": "optimal",
    "pystreed": "optimal",
    "interpret": "optimal",
    "imodels": "optimal",
}


def missing_requirements(method_cfg) -> list[str]:
    """Return the modules a method config ``requires`` that are not installed.

    None imported here.
    """
    from importlib.util import find_spec

    def missing(module: str) -> bool:
        try:
            return find_spec(module) is None
        except (ImportError, ValueError):  # a finder that refuses it
            return True

    return [m for m in (method_cfg.get("requires") or []) if missing(m)]


def install_hint(modules: list[str]) -> str:
    extras = sorted({EXTRAS.get(m, m) for m in modules})
    return f"pip install 'treebench[{','.join(extras)}]'"
