"""The bench config (``treebench/conf/bench/bench.yaml``), per-method settings and output places."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from treebench.config import CONF_DIR, compose

CLASSIFICATION = "classification"
SECTIONS = ("main", "inference", "threads", "scaling", "small", "store", "startup")
#: rows of the untraced first fit and predict of a new worker with ``first_call`` (quick profile)
FIRST_CALL_ROWS = 100


def load_config(quick: bool = False, path: str | Path | None = None) -> dict:
    """Return the bench config, with its ``quick`` block merged when asked."""
    cfg = yaml.safe_load(Path(path or Path(CONF_DIR) / "bench" / "bench.yaml").read_text())
    q = cfg.pop("quick", {}) or {}
    if quick:
        for k, v in q.items():
            if isinstance(v, dict) and isinstance(cfg.get(k), dict) and k != "datasets":
                cfg[k] = {**cfg[k], **v}
            else:
                cfg[k] = v
    cfg.setdefault("methods", {})
    return cfg


@cache
def _method_config(variant: str, dataset: str | None) -> dict:
    """Return a method config composed as a run composes it.

    Interpolations resolved against ``dataset``.
    """
    overrides = [f"method={variant}"] + ([f"dataset={dataset}"] if dataset else [])
    return OmegaConf.to_container(compose(overrides).method, resolve=True)


def method_settings(name: str, cfg: dict, dataset: str | None = None) -> dict:
    """Bench settings of one method.

    ``params`` (composed method config's ``params`` + the bench overlay), the expected scaling, the
    parameter ``sweep``, ``inference`` and ``threads``.

    The method config is ``method=<variant or name>`` composed with ``dataset`` (default: the
    config's default dataset), so its interpolations resolve as in a run on that dataset.
    """
    m = dict(cfg["methods"].get(name) or {})
    y = _method_config(m.get("variant", name), dataset)
    params = dict(y.get("params") or {})
    if "params" in m:
        params.update(m["params"] or {})
    else:
        params.update(y.get("bench_params") or y.get("smoke_params") or {})
    return {"params": params, **method_profile(name, cfg)}


def default_params(name: str, cfg: dict, dataset: str | None = None) -> dict:
    """Return a method's own default ``params``.

    Its config composed for ``dataset``, without the bench profile: what
    ``treebench run method=<name> dataset=<dataset>`` fits.
    """
    variant = (cfg["methods"].get(name) or {}).get("variant", name)
    return dict(_method_config(variant, dataset).get("params") or {})


@cache
def tune_job(name: str, dataset: str, tune: str) -> tuple[dict, str]:
    """Return the ``tune`` settings and the metric of a tuned job.

    The settings are :func:`treebench.runner.tune_settings` (the method's search space included)
    and the metric the one a ``treebench run method=<name> dataset=<dataset> tune=<tune>`` job
    tunes with.
    """
    from treebench.runner import tune_settings

    c = compose([f"method={name}", f"dataset={dataset}", f"tune={tune}"])
    return tune_settings(c), str(c.metrics[c.dataset.task][0])


def method_profile(name: str, cfg: dict) -> dict:
    """Return the bench config's settings of one method besides its ``params``.

    No method config is composed (tens of milliseconds each): ``expected``, ``sweep``,
    ``inference``, ``threads`` and ``time_cap`` (the method's own per-point cap of the scaling
    series; None: the section's).
    """
    m = cfg["methods"].get(name) or {}
    return {
        "expected": m.get("expected") or {},
        "sweep": m.get("sweep"),
        "inference": m.get("inference"),
        "threads": bool(m.get("threads", False)),
        "time_cap": m.get("time_cap"),
    }


def registered_methods() -> list[str]:
    """Names of every registered method with a classifier.

    The bench datasets are classification.
    """
    from treebench.methods.base import discover

    return sorted(n for n, e in discover().items() if CLASSIFICATION in e.classes)


def basis_columns(basis: str = "cpu") -> tuple[str, str]:
    """(fit seconds, predict samples/s) raw columns of a timing basis: process CPU time or wall."""
    if basis not in ("cpu", "wall"):
        raise ValueError(f"time_basis must be 'cpu' or 'wall', got {basis!r}")
    if basis == "cpu":
        return "fit_cpu_s", "predict_cpu_samples_per_s"
    return "fit_s", "predict_samples_per_s"


def output_dir(out: str | Path | None = None, update: bool = False) -> Path:
    """Where a bench run writes ``BENCHMARKS.md`` and ``docs/bench/``.

    Parameters
    ----------
    out : str or Path, optional
        An explicit directory; always wins.
    update : bool
        Without ``out``: write the committed files in the current directory (the checkout).

    Returns
    -------
    Path
        ``out``; else ``.`` with ``update``; else ``$TREEBENCH_OUTPUTS/bench`` (``outputs/bench``
        when the variable is unset), so a smoke run never overwrites the committed results.
    """
    if out is not None:
        return Path(out)
    if update:
        return Path(".")
    return Path(os.environ.get("TREEBENCH_OUTPUTS") or "outputs") / "bench"
