"""A job checked while it is planned.

Its dataset config resolves, its method parameters are names and values the estimator takes, and
with ``tune`` on its ``search:`` block is usable.
"""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from treebench.errors import TreebenchError
from treebench.methods._requires import install_hint, missing_requirements
from treebench.methods.base import get_entry, suggest


class ParamError(ValueError, TreebenchError):
    """A method parameter or dataset setting is unusable.

    A parameter the estimator does not take, a value its declared constraints reject, or a dataset
    setting that is missing or names no usable file.
    """


def _plain(node) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def check_dataset(cfg: DictConfig) -> None:
    """Check that the job's dataset config resolves.

    Required settings given (``dataset=csv`` needs ``dataset.path`` and ``dataset.target``), the
    user's file exists. Raises :class:`ParamError`.
    """
    from omegaconf.errors import OmegaConfBaseException

    node = cfg.dataset
    missing = [f"dataset.{k}=…" for k in node if OmegaConf.is_missing(node, k)]
    if missing:
        raise ParamError(
            f"this dataset config needs {' '.join(missing)} ({node.get('description', '')})"
        )
    try:
        plain = _plain(node)
    except OmegaConfBaseException as exc:  # a resolver's error, e.g. no such file
        cause = exc
        while cause.__cause__ is not None or cause.__context__ is not None:
            cause = cause.__cause__ or cause.__context__
        raise ParamError(f"dataset: {cause}") from None
    _check_source(plain)


def _check_source(dataset: dict) -> None:
    """Let the dataset's source check what it can before any data loads.

    A source module may define ``check_config(**loader_arguments)`` (e.g. a user's CSV: the target
    column exists).
    """
    import importlib

    from treebench.data.base import DataError

    loader = dict(dataset.get("loader") or {})
    target = loader.pop("_target_", None)
    if not isinstance(target, str) or "." not in target:
        return
    module, _, _ = target.rpartition(".")
    if not module.startswith("treebench.data.sources."):  # the shipped sources only
        return
    check = getattr(importlib.import_module(module), "check_config", None)
    if check is None:
        return
    try:
        check(**loader)
    except DataError as exc:
        raise ParamError(f"dataset {dataset.get('name')!r}: {exc}") from None


#: the largest integer a parameter, seed or thread count may hold (numpy's and C's int64)
_INT_MAX = 2**63 - 1


def usable_cores() -> int:
    """Return the cores this process may run on (its CPU affinity: a SLURM job's allocation)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_run_settings(cfg: DictConfig, max_threads: int | None = None) -> None:
    """``threads``, ``seed`` and ``seeds`` are usable.

    Threads between 1 and the cores a job can have (``max_threads``, default the cores this process
    may run on; 0 = no upper bound, for a cluster job that checks on its node), seeds from 0 to
    2**32 - 1 (numpy's ``SeedSequence`` takes no negative seed). Raises :class:`ParamError` naming
    the fix.
    """
    threads = cfg.get("threads")
    cores = usable_cores() if max_threads is None else max_threads
    if threads is not None and (int(threads) < 1 or (cores and int(threads) > cores)):
        raise ParamError(
            f"threads={threads}: a job can use 1 to {cores or 'its node’s'} threads "
            f"({cores} cores here); set threads=<1..{cores}> or threads=null (the cores shared "
            "by the jobs running at once)"
        )
    seeds = list(cfg.get("seeds") or []) or [cfg.get("seed")]
    bad = [s for s in seeds if s is not None and not 0 <= int(s) < 2**32]
    if bad:
        raise ParamError(f"seed {bad[0]} is not in 0..4294967295; seeds are non-negative")


def _int_bounds(method: str, values, where: str) -> None:
    """No integer in ``values`` (nested) is beyond 64 bits, which every fit would refuse late."""
    if isinstance(values, dict):
        for k, v in values.items():
            _int_bounds(method, v, f"{where}.{k}")
    elif isinstance(values, list | tuple):
        for i, v in enumerate(values):
            _int_bounds(method, v, f"{where}[{i}]")
    elif isinstance(values, int) and not isinstance(values, bool) and abs(values) > _INT_MAX:
        raise ParamError(
            f"method {method!r}, {where}={values}: beyond a 64-bit integer (|value| <= {_INT_MAX})"
        )


def check_params(cfg: DictConfig, max_threads: int | None = None) -> None:
    """Check the job's ``method.params`` against the estimator of its method and dataset task.

    A name the estimator does not take fails with a did-you-mean among its parameters; a value fails
    when the estimator declares scikit-learn ``_parameter_constraints`` for it and they reject it
    (an estimator without declared constraints is not checked further). With ``tune`` on, the
    method's ``search:`` block is checked too (:func:`check_tune`). Nothing is fitted and no data
    is read.

    Parameters
    ----------
    cfg : DictConfig
        A composed job config (``method``, ``dataset.task``).

    Raises
    ------
    ParamError
        Naming the method, the parameter and its allowed values (or the close names), or the
        optional dependency the method config ``requires`` and how to install it.
    """
    check_dataset(cfg)
    check_run_settings(cfg, max_threads)
    check_method(cfg)


def check_method(cfg: DictConfig) -> None:
    """Check the method half of :func:`check_params`.

    Its requirements, ``method.params`` and (with ``tune``) ``search:`` block against the estimator
    of the dataset's task.
    """
    method = cfg.method.name
    missing = missing_requirements(cfg.method)
    if missing:
        raise ParamError(
            f"method {method!r} needs {', '.join(missing)}, which is not installed: "
            f"{install_hint(missing)}"
        )
    cls = get_entry(method).classes.get(cfg.dataset.get("task"))
    if cls is None:  # the runner records the unsupported task as a skip
        return
    params = _plain(cfg.method.get("params")) or {}
    _int_bounds(method, params, "method.params")
    names = sorted(cls._get_param_names())
    for name in params:
        if name not in names:
            raise ParamError(
                f"method {method!r} ({cls.__name__}) has no parameter {name!r}."
                f"{suggest(name, names)} Its parameters: {', '.join(names)}."
            )
    _check_values(method, cls, params, "method.params")
    check_tune(cfg, cls, params)


def _check_values(method: str, cls, values: dict, where: str) -> None:
    """``values`` pass the estimator's declared ``_parameter_constraints`` (if it declares any)."""
    constraints = getattr(cls, "_parameter_constraints", None)
    given = {k: v for k, v in values.items() if k in (constraints or {})}
    if not given:
        return
    values = instantiate(given, _convert_="all")  # nested ``_target_`` estimators, as at fit time
    try:
        validate_parameter_constraints(constraints, values, caller_name=cls.__name__)
    except InvalidParameterError as exc:
        raise ParamError(f"method {method!r}, {where}: {exc}") from None


def check_tune(cfg: DictConfig, cls, params: dict) -> None:
    """Check a tuned job's search: with ``tune`` on, the method must have a valid ``search:`` block.

    The method has a ``search:`` block in the grammar of ``docs/tuning.md``, naming parameters
    ``cls`` takes, with values its constraints accept (every choice, or a range's low and high), and
    its fit does not need the test part.

    Raises
    ------
    ParamError
        Naming the method, the dimension and the fix.
    """
    from treebench.runner import tune_settings
    from treebench.tuning import SearchSpaceError, dimension_values, grid_size, search_space

    tune = tune_settings(cfg)
    if tune is None:
        return
    method = cfg.method.name
    try:
        space = search_space(tune["search"])
        if tune["strategy"] == "grid":
            grid_size(space)
    except SearchSpaceError as exc:
        raise ParamError(f"method {method!r}: {exc} (docs/tuning.md)") from None
    if not space:
        raise ParamError(
            f"method {method!r} has no search: block, so tune= has nothing to search; add one "
            f"to its config (treebench/conf/method/<name>.yaml, grammar in docs/tuning.md) or "
            f"run it without tune="
        )
    names = sorted(cls._get_param_names())
    for name, dim in space.items():
        if name not in names:
            raise ParamError(
                f"method {method!r} ({cls.__name__}) has no parameter {name!r} to search."
                f"{suggest(name, names)} Fix search.{name} in its config; its parameters: "
                f"{', '.join(names)}."
            )
        for value in dimension_values(dim):
            _check_values(method, cls, {name: value}, f"search.{name}")
    est = cls(**instantiate(params, _convert_="all"))
    wants = getattr(est, "wants_eval_set", None)
    if callable(wants) and wants():
        raise ParamError(
            f"method {method!r} with these params fits on the test part (wants_eval_set), and "
            f"tuning never sees it; choose a selection on the training part in method.params or "
            f"run without tune="
        )
