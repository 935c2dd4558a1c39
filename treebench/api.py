"""Python API for scripts.

The runner's own data path (load, split, preprocess) and estimators by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from treebench.runner import Job, _plain, build_estimator, data_context, prepare_fold


@dataclass
class FoldArrays:
    """One fold of a dataset, preprocessed exactly as the runner does it.

    Attributes
    ----------
    X_train, y_train, X_test, y_test : ndarray
        The fold's parts after the dataset's preprocessing (fitted on the train part).
    task : str
        ``classification`` or ``regression``.
    image_shape : tuple or None
        Pixel grid of image datasets (e.g. (28, 28)).
    split_id : str
        The split's identifier, as recorded by the runner.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    task: str
    image_shape: tuple | None
    split_id: str


def compose_config(overrides: Sequence[str] = (), return_hydra_config: bool = False):
    """Compose ``treebench/conf/config.yaml`` with command-line style overrides.

    ``dataset=letter``, ...
    """
    from treebench.config import compose

    return compose(overrides, return_hydra_config)


def load_fold(
    dataset: str,
    seed: int = 0,
    fold: int = 0,
    overrides: Sequence[str] = (),
    mirror: str | None = None,
    allow_fetch: bool = False,
) -> FoldArrays:
    """Load, split and preprocess one fold of ``dataset`` the way ``treebench run`` does.

    Parameters
    ----------
    dataset : str
        A name of ``treebench/conf/dataset`` (``treebench list`` shows them).
    seed, fold : int
        The run's seed and fold; the split depends on (seed, dataset) only, as in the runner.
    overrides : sequence of str
        Extra config overrides, e.g. ``["split=holdout", "dataset.preprocess.scale=standard"]``.
    mirror : str, optional
        Mirror directory or URL; default ``$TREEBENCH_MIRROR`` / the config's ``data.mirror``.
    allow_fetch : bool
        May download missing files (otherwise a missing file names the fetch command).

    Returns
    -------
    FoldArrays
    """
    cfg = compose_config([f"dataset={dataset}", *overrides])
    pf = prepare_fold(Job.from_config(cfg, seed), fold, data_context(cfg, mirror, allow_fetch))
    return FoldArrays(
        pf.X_train,
        pf.y_train,
        pf.X_test,
        pf.y_test,
        cfg.dataset.task,
        pf.ds.image_shape,
        pf.fold.split_id,
    )


def make_estimator(
    method: str,
    task: str = "classification",
    params: dict | None = None,
    *,
    random_state: int | None = 0,
    n_jobs: int = 1,
    image_shape: tuple | None = None,
    **kwargs,
):
    """Return an estimator of a registered method with its YAML's parameters.

    They are updated by ``params`` and keyword parameters: ``make_estimator("tnt",
    ccp_alpha=1e-3)``.

    ``method`` is a ``treebench/conf/method`` file name (a variant such as ``tnt_finetune`` works
    too). ``random_state``, ``n_jobs`` and ``image_shape`` fill what the YAML leaves unset, as the
    runner does; the estimator's ``fit`` and predictions run with BLAS/OpenMP limited to its
    ``n_jobs`` (one thread for a method without one), as a runner job of ``threads=n_jobs``. A name
    the estimator does not take fails with a did-you-mean among its parameters.
    """
    from treebench.methods.base import get_entry, suggest

    cfg = compose_config([f"method={method}"])
    given = {**(params or {}), **kwargs}
    cls = get_entry(cfg.method.name).classes.get(task)
    if cls is not None:
        names = sorted(cls._get_param_names())
        for name in given:
            if name not in names:
                raise TypeError(
                    f"{method} ({cls.__name__}) has no parameter {name!r}."
                    f"{suggest(name, names)} Its parameters: {', '.join(names)}."
                )
    return build_estimator(
        cfg.method.name,
        task,
        {**(_plain(cfg.method.get("params")) or {}), **given},
        threads=n_jobs,
        random_state=random_state,
        image_shape=image_shape,
    )


def progress(verbose: int = 1, callback=None, logger=None, every: float = 30.0):
    """Show the progress of the fits made inside a ``with`` block, as ``treebench run`` does.

    ``with treebench.api.progress(): est.fit(X, y)``: on a terminal a bar per phase (epochs,
    iterations, grow rounds) with the time left, off a terminal a line at most every ``every``
    seconds. ``callback(phase, done, total)`` receives the steps instead; ``logger`` (a
    :class:`logging.Logger`) gets them as INFO records, at most every ``every`` seconds per phase
    and at its end. ``verbose=0`` shows nothing.
    """
    import time
    from contextlib import ExitStack

    from treebench.methods.progress import reporting
    from treebench.progress import FitProgress

    stack = ExitStack()
    if callback is None and logger is not None:
        last: dict[str, float] = {}

        def callback(phase, done, total):
            now = time.monotonic()
            if now - last.get(phase, -every) >= every or (total is not None and done >= total):
                last[phase] = now
                logger.info("%s %d/%s", phase, done, "?" if total is None else total)

    if callback is None and verbose:
        callback = stack.enter_context(FitProgress("fit", every=every))
    stack.enter_context(reporting(callback if verbose or logger is not None else None))
    return stack
