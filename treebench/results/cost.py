"""Core-time estimates of runs not made yet, from a method's other runs' recorded core time."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def method_choice(overrides) -> str | None:
    """Return the ``method=<config>`` a record's overrides chose, or None.

    E.g. ``tnt_finetune`` for a record whose estimator is ``tnt``.
    """
    if not isinstance(overrides, list | tuple | np.ndarray):
        return None
    for o in overrides:
        key, _, value = str(o).lstrip("+").partition("=")
        if key == "method":
            return value
    return None


def _core_seconds(r: dict) -> float | None:
    cpu = r.get("cpu_seconds")
    if cpu is not None:
        return float(cpu)
    wall = r.get("wall_seconds")
    return None if wall is None else float(wall) * float(r.get("threads") or 1)


class CostModel:
    """Per (method config, task, tuned or not).

    ``log(core seconds) = a + b·log(n_train) + c·log(n_features)``, least squares over the ok
    records of that kind (``b`` and ``c`` dropped when their rows and features vary too little to
    fit them; then the mean cost per training row).

    An estimate from other datasets' runs: a job's own done seeds are the better guide where they
    exist (the sweeper's first choice).
    """

    def __init__(self, fits: dict[tuple, tuple]):
        self.fits = fits

    @classmethod
    def from_records(cls, records: Iterable[dict]) -> CostModel:
        """Return the cost model fitted to the ok records with a training size."""
        points: dict[tuple, list[tuple[float, float, float]]] = {}
        for r in records:
            if r.get("status") != "ok" or not r.get("n_train"):
                continue
            sec = _core_seconds(r)
            if not sec or sec <= 0:
                continue
            method = method_choice(r.get("overrides")) or r.get("method")
            kind = (method, r.get("task") or "classification", bool(r.get("tuning")))
            x = (math.log(r["n_train"]), math.log(max(1, r.get("n_features") or 1)), math.log(sec))
            points.setdefault(kind, []).append(x)
        fits = {}
        for kind, pts in points.items():
            a = np.array(pts)
            shapes = {(round(p[0], 3), round(p[1], 3)) for p in pts}
            if len(shapes) >= 6:
                design = np.c_[np.ones(len(a)), a[:, 0], a[:, 1]]
            elif len({s[0] for s in shapes}) >= 3:
                design = np.c_[np.ones(len(a)), a[:, 0], np.zeros(len(a))]
            else:  # seconds per training row
                fits[kind] = (float(np.mean(a[:, 2] - a[:, 0])), 1.0, 0.0, len(pts))
                continue
            coef, *_ = np.linalg.lstsq(design, a[:, 2], rcond=None)
            fits[kind] = (float(coef[0]), float(coef[1]), float(coef[2]), len(pts))
        return cls(fits)

    @classmethod
    def from_ledger(cls, ledger) -> CostModel:
        """Return :meth:`from_records` of a :class:`~treebench.results.ledger.Ledger`'s records.

        Parsed with orjson (the ledger holds thousands; a dry run reads them all).
        """
        import gzip

        import orjson

        def records():
            for path in ledger.files():
                with gzip.open(path, "rb") as f:
                    yield from (orjson.loads(line) for line in f if line.strip())

        return cls.from_records(records())

    def predict(
        self, method: str, task: str, tuned: bool, n_train: float, n_features: float
    ) -> float | None:
        """Core seconds of one run, or None when no record of that kind exists."""
        fit = self.fits.get((method, task, tuned))
        if fit is None or not n_train:
            return None
        a, b, c, _ = fit
        return float(math.exp(a + b * math.log(n_train) + c * math.log(max(1, n_features or 1))))
