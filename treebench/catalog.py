"""The config catalog.

The names of each config group with their descriptions, checked before a run; method requirements,
experiments' sweep plans and datasets' nodes, read without composing (fast).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from treebench.config import CONF_DIR, load_yaml
from treebench.errors import TreebenchError

GROUPS = ("method", "dataset", "experiment", "split", "tune")
CHOICE_RE = re.compile(r"^(method|dataset|experiment|split|tune)=(.+)$")


class UnknownChoiceError(ValueError, TreebenchError):
    """A ``group=name`` override naming no config of the group; the message lists the choices."""


def group_names(group: str, args=()) -> list[str]:
    """Config names of a group (file stems), without reading the files.

    What :func:`check_choices` needs before every ``run`` (parsing every YAML for its description
    costs a noticeable part of a second).
    """
    from treebench.config import search_dirs

    return sorted({p.stem for d in search_dirs(args) for p in (d / group).glob("*.yaml")})


def group_choices(group: str, args=()) -> dict[str, str]:
    """Config names of a group with their one-line descriptions (``description`` or first comment).

    With ``args``, also those of the directories their ``hydra.searchpath`` adds.
    """
    from treebench.config import search_dirs

    out = {}
    files = [p for d in search_dirs(args) for p in sorted((d / group).glob("*.yaml"))]
    for p in files:
        if p.stem in out:
            continue
        text = p.read_text()
        desc = ""
        try:
            data = load_yaml(text) or {}
            desc = data.get("description", "") if isinstance(data, dict) else ""
        except yaml.YAMLError:
            pass
        if not desc:
            comments = [
                ln[1:].strip()
                for ln in text.splitlines()
                if ln.startswith("#") and "@package" not in ln
            ]
            desc = comments[0] if comments else ""
        out[p.stem] = desc
    return out


def complete(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of ``run``/``fetch`` arguments.

    ``method=``, ``dataset=`` … and their config names with descriptions (``treebench
    --install-completion`` sets it up).
    """
    if "=" not in incomplete:
        keys = [f"{g}=" for g in GROUPS] + ["seed=", "seeds=", "split=", "profile=", "-m"]
        return [(k, "") for k in keys if k.startswith(incomplete)]
    group, value = incomplete.split("=", 1)
    if group not in GROUPS:
        return []
    head, _, last = value.rpartition(",")  # method=cart,t → method=cart,tnt …
    prefix = f"{group}={head + ',' if head else ''}"
    return [
        (prefix + name, desc[:60])
        for name, desc in group_choices(group).items()
        if name.startswith(last)
    ]


def check_choices(args: list[str]) -> None:
    """Fail early on an unknown method/dataset/experiment/split/tune, with the choices.

    The error names the choices and the nearest name.

    Raises
    ------
    UnknownChoiceError
        Naming the group, the value, the nearest choice and every choice (rich markup).
    """
    from treebench.methods.base import suggest

    for a in args:
        m = CHOICE_RE.match(a)
        if not m:
            continue
        group, values = m.groups()
        choices = group_names(group, args)
        for v in values.split(","):
            v = v.strip()
            if v in ("null", "") or v in choices or v.startswith(("choice(", "range(", "glob(")):
                continue
            names = sorted(choices)
            raise UnknownChoiceError(
                f"[red]Unknown {group} {v!r}.[/]{suggest(v, names)}\n"
                f"Choices: {', '.join(names)}\n(see `treebench list {group}s`)"
            )


def method_requires(name: str) -> list[str]:
    """Return a method config's ``requires``: its own, or the one of the config it extends."""
    data = load_yaml((Path(CONF_DIR) / "method" / f"{name}.yaml").read_text()) or {}
    if data.get("requires") is not None:
        return list(data["requires"])
    parents = [d for d in data.get("defaults") or [] if isinstance(d, str) and d != "_self_"]
    return [m for parent in parents for m in method_requires(parent)]


def method_listing(name: str) -> tuple[str, str | None]:
    """``treebench list``'s facts of method config ``name``.

    Its tasks (``?`` when no package registers it) and, when a requirement is not installed, the
    line that installs it.

    The tasks come from the registering decorators' source: importing every method package to
    fill the registry costs seconds (PyTorch, numba).
    """
    from treebench.methods._catalog import method_tasks
    from treebench.methods._requires import install_hint, missing_requirements

    try:
        conf = load_yaml((Path(CONF_DIR) / "method" / f"{name}.yaml").read_text())
        tasks = ", ".join(method_tasks(conf["name"]))
    except KeyError:
        tasks = "?"
    missing = missing_requirements({"requires": method_requires(name)})
    hint = f"needs {', '.join(missing)}: {install_hint(missing)}" if missing else None
    return tasks, hint


def method_config_names() -> set[str]:
    """Return the ``name`` of every method config.

    A registered method's config may carry another.
    """
    names = set()
    for p in (Path(CONF_DIR) / "method").glob("*.yaml"):
        try:
            names.add(load_yaml(p.read_text())["name"])
        except (KeyError, TypeError, yaml.YAMLError):
            continue
    return names


def full_plans() -> dict:
    """Each experiment's full-profile sweep plan (``hydra.sweeper`` of its config file)."""
    from treebench.config import sweep_plan

    plans = {}
    for p in sorted((Path(CONF_DIR) / "experiment").glob("*.yaml")):
        try:
            cfg = load_yaml(p.read_text()) or {}
            sweeper = (cfg.get("hydra") or {}).get("sweeper")
        except (AttributeError, yaml.YAMLError):
            continue
        if sweeper:
            plans[cfg.get("experiment_name") or p.stem] = sweep_plan(sweeper, "full")
    return plans


def needs_settings(name: str) -> bool:
    """Return a dataset config with a required setting (``dataset=csv`` needs ``dataset.path``)."""
    path = Path(CONF_DIR) / "dataset" / f"{name}.yaml"
    return path.is_file() and "???" in (load_yaml(path.read_text()) or {}).values()


def dataset_node(name: str, compose_dataset):
    """Return a dataset's config node.

    Its YAML read directly when it is self-contained (composing through Hydra costs ~0.3 s per
    dataset), else composed.
    """
    from omegaconf import OmegaConf

    path = Path(CONF_DIR) / "dataset" / f"{name}.yaml"
    if path.is_file():
        node = OmegaConf.load(path)
        if "defaults" not in node and not any(OmegaConf.is_missing(node, k) for k in node):
            return node
    return compose_dataset(name).dataset
