"""A job checked while it is planned: its dataset config resolves, and its method parameters are
names and values the estimator takes."""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

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
    (an estimator without declared constraints is not checked further). Nothing is fitted and no
    data is read.

    Parameters
    ----------
    cfg : DictConfig
        A composed job config (``method``, ``dataset.task``).

    Raises
    ------
    ParamError
        Naming the method, the parameter and its allowed values (or the close names).
    """
    check_dataset(cfg)
    method = cfg.method.name
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
    constraints = getattr(cls, "_parameter_constraints", None)
    if not constraints:
        return
    given = {k: v for k, v in params.items() if k in constraints}
    if not given:
        return
    values = instantiate(given, _convert_="all")  # nested ``_target_`` estimators, as at fit time
    try:
        validate_parameter_constraints(constraints, values, caller_name=cls.__name__)
    except InvalidParameterError as exc:
        raise ParamError(f"method {method!r}, method.params: {exc}") from None
