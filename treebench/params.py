"""A job checked while it is planned: its dataset config resolves, its method parameters are names
and values the estimator takes, and with ``tune`` on its ``search:`` block is usable."""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from treebench.methods._requires import install_hint, missing_requirements
from treebench.methods.base import get_entry, suggest


class ParamError(ValueError):
    """A method parameter the estimator does not take, a value its declared constraints reject, or
    a dataset setting that is missing or names no usable file."""


def _plain(node) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def check_dataset(cfg: DictConfig) -> None:
    """The job's dataset config resolves: required settings given (``dataset=csv`` needs
    ``dataset.path`` and ``dataset.target``), the user's file exists. Raises :class:`ParamError`."""
    from omegaconf.errors import OmegaConfBaseException

    node = cfg.dataset
    missing = [f"dataset.{k}=…" for k in node if OmegaConf.is_missing(node, k)]
    if missing:
        raise ParamError(
            f"this dataset config needs {' '.join(missing)} ({node.get('description', '')})"
        )
    try:
        _plain(node)
    except OmegaConfBaseException as exc:  # a resolver's error, e.g. no such file
        cause = exc
        while cause.__cause__ is not None or cause.__context__ is not None:
            cause = cause.__cause__ or cause.__context__
        raise ParamError(f"dataset: {cause}") from None


def check_params(cfg: DictConfig) -> None:
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
    check_method(cfg)


def check_method(cfg: DictConfig) -> None:
    """The method half of :func:`check_params`: its requirements, ``method.params`` and (with
    ``tune``) ``search:`` block against the estimator of the dataset's task."""
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
    """With ``tune`` on: the method has a ``search:`` block in the grammar of ``docs/tuning.md``,
    naming parameters ``cls`` takes, with values its constraints accept (every choice, or a
    range's low and high), and its fit does not need the test part.

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
