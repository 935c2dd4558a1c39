"""Where treebench's configs and committed results ledger live, and config composition."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

#: the checkout holding the package (the committed ledger and REPRODUCTION.md live there)
PROJECT_DIR = _PACKAGE.parent

#: the Hydra config root, shipped inside the package (``TREEBENCH_CONF_DIR`` replaces it)
CONF_DIR = os.environ.get("TREEBENCH_CONF_DIR") or str(_PACKAGE / "conf")

_LEDGER_OFF = ("", "0", "off", "none", "false")


def ledger_dir() -> Path | None:
    """Return the committed ledger (``results/`` of the checkout).

    ``TREEBENCH_LEDGER`` moves it, and ``TREEBENCH_LEDGER=off`` reads none (the local store alone,
    as a regression check needs).
    """
    env = os.environ.get("TREEBENCH_LEDGER")
    if env is not None:
        return None if env.strip().lower() in _LEDGER_OFF else Path(env).expanduser()
    return PROJECT_DIR / "results"


def search_dirs(overrides=()) -> list[Path]:
    """Config directories.

    :data:`CONF_DIR`, then those a ``hydra.searchpath=[file://DIR,...]`` override adds (a user's own
    configs, e.g. ``DIR/dataset/mydata.yaml``; ``pkg://`` entries are left to Hydra).
    """
    dirs = [Path(CONF_DIR)]
    wanted = [o for o in overrides if o.lstrip("+~").startswith("hydra.searchpath=")]
    if not wanted:  # Hydra's override parser costs ~0.15 s to import (``treebench list``)
        return dirs
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for o in OverridesParser.create().parse_overrides(wanted):
        value = o.value()
        for entry in value if isinstance(value, list) else [value]:
            entry = str(entry)
            if entry.startswith("file://"):
                dirs.append(Path(entry[len("file://") :]).expanduser())
            elif "://" not in entry:
                dirs.append(Path(entry).expanduser())
    return dirs


def compose(overrides=(), return_hydra_config: bool = False):
    """Compose ``treebench/conf/config.yaml`` with command-line style overrides.

    ``dataset=letter``, ...
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from treebench.schema import register_schema

    register_schema()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return hydra_compose(
            "config", overrides=list(overrides), return_hydra_config=return_hydra_config
        )


def sweep_plan(sweeper, profile=None) -> dict:
    """Return the ``params`` and ``rows`` an experiment's sweeper runs.

    Its ``reduced`` plan with ``profile=reduced`` (where it has one), else its own.
    """
    from omegaconf import OmegaConf

    plan = OmegaConf.to_container(sweeper) if OmegaConf.is_config(sweeper) else dict(sweeper or {})
    if getattr(profile, "value", profile) == "reduced" and plan.get("reduced"):
        plan = plan["reduced"]
    return {"params": dict(plan.get("params") or {}), "rows": plan.get("rows") or []}


def plan_values(plan: dict, key: str) -> list[str]:
    """Every value a sweep plan gives ``key`` (``dataset``, ``method``), in order, each once.

    The ``dataset`` values include the members of the plan's suites of dataset configs
    (:mod:`treebench.suites`, those whose names are ``dataset=`` choices).
    """
    values = [str(plan["params"].get(key) or "")]
    rows = plan["rows"]
    for row in [r for rs in rows.values() for r in rs] if isinstance(rows, dict) else rows:
        values += [o.split("=", 1)[1] for o in str(row).split() if o.startswith(f"{key}=")]
    out: list[str] = []
    for v in (v.strip() for vs in values for v in vs.split(",")):
        if v and v not in out:
            out.append(v)
    if key == "dataset":
        from treebench.suites import load

        for name in plan_values(plan, "suite"):
            suite = load(name, search_dirs())
            if suite.dataset is None:
                out += [m for m in suite.members if m not in out]
    return out


def plan_rows(plan: dict) -> list[dict[str, str]]:
    """Return each job line of a sweep plan as ``{key: value}``.

    The sweep's ``params`` under every row; named lists of rows crossed; tokens without ``=``
    (``~key`` deletions) are left out.
    """
    rows = plan["rows"]
    if isinstance(rows, dict):
        lines = [" ".join(c) for c in itertools.product(*[list(v) for v in rows.values()])]
    else:
        lines = [str(r) for r in rows] or [""]
    base = {str(k): str(v) for k, v in plan["params"].items() if v is not None}
    out = []
    for line in lines:
        toks = dict(t.split("=", 1) for t in line.split() if "=" in t and not t.startswith("~"))
        out.append({**base, **toks})
    return out


def _listed(value: str) -> list[str]:
    """Return a sweep value's alternatives.

    ``a,b`` is two, a ``{...}`` or ``[...]`` literal is one.
    """
    v = value.strip()
    return [v] if v[:1] in "{[" else [x.strip() for x in v.split(",") if x.strip()]


def _same_value(a, b) -> bool:
    """Return whether a sweep value string and a wanted value are the same.

    ``40000`` and ``"4e4"`` too; a sweep's ``null`` and a paper file's ``null``, which YAML reads as
    None.
    """
    nulls = (None, "null", "None")
    if a in nulls or b in nulls:
        return a in nulls and b in nulls
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def plan_configs(
    plan: dict, dataset: str, method: str, params: list[str], where: dict | None = None
) -> set[tuple[str, ...]] | None:
    """Return the combinations of method ``params`` the plan sweeps for ``dataset`` and ``method``.

    As raw value strings (``None`` where a row leaves a param at its default), keeping only the
    values ``where`` (``{param: value or [values]}``) allows; None when no row runs them.
    """
    wanted = {k: v if isinstance(v, list) else [v] for k, v in (where or {}).items()}
    configs: set[tuple[str, ...]] = set()
    hit = False
    for row in plan_rows(plan):
        if dataset not in _listed(row.get("dataset", "")) or method not in _listed(
            row.get("method", "")
        ):
            continue
        values = {
            k[len("method.params.") :]: _listed(v)
            for k, v in row.items()
            if k.startswith("method.params.")
        }
        for k, ws in wanted.items():
            if k in values:
                values[k] = [v for v in values[k] if any(_same_value(v, w) for w in ws)]
        if any(not vs for vs in values.values()):  # the row runs none of the wanted values
            continue
        hit = True
        configs.update(itertools.product(*[values.get(p, [None]) for p in params]))
    return configs if hit else None


def load_yaml(text: str):
    """Return ``yaml.safe_load(text)``, parsed by libyaml when PyYAML has it.

    Libyaml is ~8x faster: ``run`` and ``list`` read every method, dataset and paper file at
    startup.

    A text libyaml refuses is parsed again by the pure-Python loader, so that an invalid file
    raises the same :class:`yaml.YAMLError`, message included, as ``yaml.safe_load``.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)  # noqa: S506 - CSafeLoader is the safe loader
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)
