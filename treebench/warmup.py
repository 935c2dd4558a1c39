"""Compile methods' numba kernels into the on-disk cache once, before a sweep times its fits.

``python -m treebench.warmup [METHOD ...]`` (default: the methods of ``experiment=demo``) fits
each method once on a fold of ``digits`` prepared as the runner prepares it, so the kernels are
compiled for the types a run passes them; later processes load them from numba's cache
(``__pycache__`` beside the kernels, or ``$NUMBA_CACHE_DIR``) instead of compiling. Nothing is
recorded. ``make demo`` runs it first.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def demo_methods() -> list[str]:
    """Return the methods ``experiment=demo`` sweeps (its config file says which)."""
    from treebench.config import CONF_DIR, load_yaml

    cfg = load_yaml((Path(CONF_DIR) / "experiment" / "demo.yaml").read_text())
    return [m.strip() for m in str(cfg["hydra"]["sweeper"]["params"]["method"]).split(",")]


def warm_up(methods, dataset: str = "digits", log=print) -> dict[str, float]:
    """Fit each of ``methods`` once on ``dataset``'s first fold.

    Return each fit's compile seconds (0 for a method without numba kernels or whose kernels were
    cached already).
    """
    from treebench.api import load_fold, make_estimator
    from treebench.compiletime import compile_clock

    fold = load_fold(dataset)
    out = {}
    for name in methods:
        t0 = time.perf_counter()
        with compile_clock() as compiled:
            make_estimator(name).fit(fold.X_train, fold.y_train)
        out[name] = compiled.seconds
        log(
            f"{name}: {compiled.seconds:.1f} s compiling or loading kernels "
            f"({time.perf_counter() - t0:.1f} s in all)"
        )
    return out


def main(argv=None) -> None:
    """Compile the kernels of the methods on the command line (default: the demo's)."""
    methods = list(sys.argv[1:] if argv is None else argv) or demo_methods()
    print(f"compiling the numba kernels of {', '.join(methods)} into the on-disk cache (once)")
    warm_up(methods)


if __name__ == "__main__":
    main()
