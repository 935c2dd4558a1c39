"""Per-job cluster resources from the method's and the dataset's ``resources:`` hints."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

#: Launcher keys a hint may set; every submitit launcher (local and SLURM) knows them.
RESOURCE_KEYS = ("timeout_min", "cpus_per_task", "mem_gb", "gpus_per_node")


def _hints(node) -> dict:
    """Return the ``resources:`` mapping of a method or dataset config (empty when absent)."""
    if node is None:
        return {}
    res = node.get("resources") if hasattr(node, "get") else None
    if not res:
        return {}
    unknown = set(res) - set(RESOURCE_KEYS)
    if unknown:
        name = node.get("name", "?")
        raise ValueError(
            f"unknown resource hint(s) {sorted(unknown)} in config {name!r}; "
            f"allowed: {', '.join(RESOURCE_KEYS)}"
        )
    return {k: res[k] for k in RESOURCE_KEYS if res.get(k) is not None}


def job_resources(cfg, n_runs: int = 1) -> dict:
    """Resources one job needs: the larger of the method's and the dataset's hint per key.

    ``timeout_min`` in a hint is per (seed, fold) run; a job loops over its runs, so its timeout is
    the hint times ``n_runs`` (only the runs still to do), and with ``tune`` on also times the fits
    a search makes (:func:`treebench.tuning.fit_equivalents`). Returns {} when neither config hints.

    Parameters
    ----------
    cfg : DictConfig
        The job's composed config (``method`` and ``dataset`` groups).
    n_runs : int
        Number of (seed, fold) runs the job still has to do.
    """
    merged: dict = {}
    for hints in (_hints(cfg.get("method")), _hints(cfg.get("dataset"))):
        for k, v in hints.items():
            merged[k] = max(merged.get(k, v), v)
    if "timeout_min" in merged:
        from treebench.runner import tune_settings
        from treebench.tuning import fit_equivalents

        tune = tune_settings(cfg)
        per_run = merged["timeout_min"] * (fit_equivalents(tune) if tune else 1)
        merged["timeout_min"] = int(math.ceil(per_run * max(n_runs, 1)))
    return merged


def explicit_launcher_keys(hydra_overrides: Iterable[str]) -> set[str]:
    """Launcher keys the user set on the command line (they win over any hint)."""
    keys = set()
    for o in hydra_overrides:
        name = str(o).lstrip("+~").split("=", 1)[0]
        if name.startswith("hydra.launcher."):
            keys.add(name[len("hydra.launcher.") :])
    return keys


def group_by_resources(
    jobs: Iterable[tuple[list[str], Mapping]], explicit: set[str] = frozenset()
) -> list[tuple[dict, list[list[str]]]]:
    """Group jobs (overrides, resources) into launches that share one resource request.

    Keys in ``explicit`` are dropped from every request, so the launcher's value is used.
    Groups keep the order in which their first job appears.
    """
    groups: dict[tuple, tuple[dict, list[list[str]]]] = {}
    for overrides, res in jobs:
        req = {k: v for k, v in res.items() if k not in explicit}
        key = tuple(sorted(req.items()))
        groups.setdefault(key, (req, []))[1].append(list(overrides))
    return list(groups.values())
