"""One measurement inside a worker: fit and predict times, memory, size, accuracy, a profile.

The estimator is the runner's (:func:`treebench.runner.build_estimator`); timing is process CPU
and wall time, predict throughput the fastest of repeated calls.
"""

from __future__ import annotations

import cProfile
import io
import math
import os
import pstats
import re
import time
import tracemalloc
from typing import Any

import numpy as np

from treebench.bench.config import CLASSIFICATION
from treebench.bench.worker import DATA
from treebench.config import PROJECT_DIR
from treebench.methods._threads import thread_limit
from treebench.methods.base import clear_caches


def _estimator(name: str, params: dict, threads: int, seed: int, image_shape=None):
    from treebench.runner import build_estimator

    return build_estimator(
        name, CLASSIFICATION, params, threads=threads, random_state=seed, image_shape=image_shape
    )


def measure(
    name: str,
    params: dict,
    key: tuple,
    threads: int,
    seed: int,
    *,
    n_train: int | None = None,
    predict: bool = True,
    traced: bool = False,
    min_predict_s: float = 0.2,
    tile_to: int | None = None,
    profile_top: int = 0,
    yardstick: tuple | None = None,
) -> dict:
    """Fit and predict once (inside a worker): times, memory, size, accuracy, optional profile.

    ``key`` names the data in :data:`~treebench.bench.worker.DATA` (inherited from the parent);
    ``n_train`` takes the first rows (nested subsets); ``tile_to`` predicts on the test part tiled
    to that many rows.
    """
    data = DATA[key]
    if n_train is not None:
        data = data.subset(n_train)
    X_predict = None
    if tile_to:
        reps = int(math.ceil(tile_to / len(data.y_test)))
        X_predict = np.ascontiguousarray(np.tile(data.X_test, (reps, 1))[:tile_to])
    est = _estimator(name, params, threads, seed, data.image_shape)
    out: dict[str, Any] = {"n_train": len(data.y_train)}
    if traced:
        tracemalloc.start()
    clear_caches()  # repeats in one worker: each timed fit does all its work
    with thread_limit(threads):
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(data.X_train, data.y_train)
        out["fit_s"] = time.perf_counter() - t0
        out["fit_cpu_s"] = time.process_time() - c0
        if predict:
            Xp = data.X_test if X_predict is None else X_predict
            calls, cpu = [], []
            while (sum(cpu) < min_predict_s or not calls) and len(calls) < 1000:
                t0, c0 = time.perf_counter(), time.process_time()
                pred = est.predict(Xp)
                calls.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                if len(calls) == 1 and X_predict is None:
                    out["accuracy"] = float(np.mean(pred == data.y_test))
            out["predict_s"], out["predict_cpu_s"] = min(calls), min(cpu)
            out["predict_calls"] = len(calls)
            out["predict_samples_per_s"] = len(Xp) / max(min(calls), 1e-9)
            out["predict_cpu_samples_per_s"] = len(Xp) / max(min(cpu), 1e-9)
            if yardstick is not None:  # the reference model, timed alternately with this one
                ref = _estimator(yardstick[0], yardstick[1], threads, seed, data.image_shape)
                ref.fit(data.X_train, data.y_train)
                rw, rc = [], []
                for _ in range(5):
                    for e, (w_, c_) in ((ref, (rw, rc)), (est, (calls, cpu))):
                        t0, c0 = time.perf_counter(), time.process_time()
                        e.predict(Xp)
                        w_.append(time.perf_counter() - t0)
                        c_.append(time.process_time() - c0)
                out["predict_s"], out["predict_cpu_s"] = min(calls), min(cpu)
                out["predict_samples_per_s"] = len(Xp) / max(min(calls), 1e-9)
                out["predict_cpu_samples_per_s"] = len(Xp) / max(min(cpu), 1e-9)
                out["ref_samples_per_s"] = len(Xp) / max(min(rw), 1e-9)
                out["ref_cpu_samples_per_s"] = len(Xp) / max(min(rc), 1e-9)
            if profile_top:
                prof = cProfile.Profile(time.process_time)  # CPU time: robust under load
                prof.enable()
                est.predict(Xp)
                prof.disable()
                s = io.StringIO()
                pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(profile_top)
                out["profile"] = _trim_profile(s.getvalue())
    if traced:
        out["peak_traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if hasattr(est, "size_report") and len(data.X_test):
        size = est.size_report(data.X_test)
        out["split_evals"] = float(size.get("split_evals", float("nan")))
        out["n_splits"] = float(size.get("n_splits", float("nan")))
        out["depth"] = float(size.get("depth", float("nan")))
    return out


def measure_tuned(
    name: str, params: dict, key: tuple, threads: int, seed: int, tune: dict, metric: str
) -> dict:
    """CPU and wall seconds of one tuned job's fit (inside a worker).

    The search and the refit of :func:`treebench.tuning.tune_fit` on the data's training part, as
    the runner fits with ``tune`` on (candidates one thread each, ``threads`` of them at a time).
    """
    from treebench.tuning import tune_fit

    data = DATA[key]
    est = _estimator(name, params, 1, seed)
    clear_caches()
    with thread_limit(threads):
        t0, c0 = time.perf_counter(), time.process_time()
        tuned = tune_fit(
            est,
            data.X_train,
            data.y_train,
            tune,
            task=CLASSIFICATION,
            metric=metric,
            random_state=seed,
            n_jobs=threads,
        )
        fit_s, fit_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    n_scored = len(tuned.record["candidates"]["mean"])  # candidates x rounds
    fits = n_scored * int(tune["cv"]) + 1  # inner folds of each, and the refit
    return {"n_train": len(data.y_train), "fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "fits": fits}


def _trim_profile(text: str) -> str:
    """Return the pstats table (header line + rows) without the preamble, paths shortened."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls")), 0)
    keep = [ln.replace(str(PROJECT_DIR) + "/", "") for ln in lines[start:]]
    keep = [ln.replace(os.path.dirname(os.__file__) + "/", "") for ln in keep]
    # a virtualenv's path names the machine that ran it: keep only what follows site-packages/
    keep = [re.sub(r"\S*/site-packages/", "site-packages/", ln) for ln in keep]
    head = next((ln for ln in lines if "function calls" in ln), "").strip()
    return "\n".join([head, *[ln.rstrip() for ln in keep if ln.strip()]])
