"""What every comparison shares.

Timing, importing the reference checkout, data through treebench.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path


class Timer:
    """Wall and CPU seconds of a ``with`` block (``.wall``, ``.cpu`` after it)."""

    wall = cpu = 0.0


@contextmanager
def timed():
    t = Timer()
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        yield t
    finally:
        t.wall, t.cpu = time.perf_counter() - w0, time.process_time() - c0


def use_reference(path: str) -> None:
    """Make the reference checkout importable (it is imported from there, never copied)."""
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise SystemExit(f"reference checkout not found: {p}")
    sys.path.insert(0, str(p))


def fold(dataset: str, seed: int = 0, overrides=()):
    """``(X_train, y_train, X_test, y_test)`` of fold 0, as ``treebench run`` loads it."""
    from treebench.api import load_fold

    f = load_fold(dataset, seed, 0, list(overrides))
    return f.X_train, f.y_train, f.X_test, f.y_test


def ratio(ref: float, ours: float) -> str:
    return f"{ref / ours:.1f}x" if ours > 0 else "n/a"


def fit_measured(est, X_train, y_train, X_test, y_test) -> dict:
    """Fit a treebench estimator; its CPU and wall seconds, test accuracy and number of splits."""
    with timed() as t:
        est.fit(X_train, y_train)
    return {
        "cpu": t.cpu,
        "wall": t.wall,
        "accuracy": float((est.predict(X_test) == y_test).mean()),
        "size": est.size_report(X_test)["n_splits"],
    }
