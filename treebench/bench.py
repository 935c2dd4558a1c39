"""Performance benchmark of every registered method: fit time, predict throughput, memory, scaling.

``treebench bench`` (or ``python scripts/bench.py``) runs, for every method of the registry (settings
from ``treebench/conf/bench/bench.yaml`` and the method YAMLs, never from the method's name in code):

* **main table**: on each dataset, one warm-up run then ``repeats`` timed runs, interleaved over the
  methods (repeat r of every method before repeat r + 1) so that the load of a shared machine hits all
  methods alike. Fit seconds (wall and process CPU), predict throughput (the test part predicted until
  ``predict_min_seconds`` have passed; the fastest call counts), peak memory, split evaluations per
  sample (``size_report``) and test accuracy. Ratios are against the reference method (CART) of the
  same run on the same data: fit ratio = method / CART median fit seconds, predict ratio = method /
  CART median throughput.
* **scaling**: fit seconds vs n_samples (nested subsets) and vs one parameter per method (depth,
  trees, rounds); log-log slopes compared with the expected exponent from the bench config.
* **inference target**: deterministic inference of each hard-routed method's depth-10 model on a
  large tabular batch, one thread, against 1 million samples/s and against CART; a method below the
  target is profiled (cProfile of one predict call) and its top functions are written out.
* **threads**: fit and predict seconds with 1 and 2 threads for methods marked ``threads: true``.

Measurements run in forked worker processes (:class:`Worker`: one per method and dataset in the main
table, one per series elsewhere), so one method's memory, thread pools or a crash never reach the
next, and a job over ``timeout`` seconds is killed. Every worker gets a warm-up job first, whose
times are not used (lazy imports, numba compilation, first-call caches; tracemalloc slows Python-heavy
code). Peak memory: before every job the kernel's peak-RSS counter is reset
(``/proc/self/clear_refs``); ``peak_rss_mb`` = VmHWM − VmRSS at the job's start (everything: numpy,
torch, native code). In a fresh worker (the warm-up) this is exact; later jobs may reuse heap the
allocator kept, so they can read lower. The warm-up also traces Python allocations with
``tracemalloc`` (numpy arrays report to it; torch tensors do not): ``peak_traced_mb``.
"""

from __future__ import annotations

import cProfile
import datetime as _dt
import io
import json
import math
import multiprocessing as mp
import os
import platform
import pstats
import re
import socket
import time
import traceback
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from treebench.config import CONF_DIR, PROJECT_DIR

CLASSIFICATION = "classification"

RAW_COLUMNS = [
    "section",
    "dataset",
    "method",
    "repeat",
    "warmup",
    "status",
    "n_train",
    "n_test",
    "n_features",
    "threads",
    "param",
    "value",
    "fit_s",
    "fit_cpu_s",
    "predict_s",
    "predict_cpu_s",
    "predict_calls",
    "predict_samples_per_s",
    "predict_cpu_samples_per_s",
    "ref_samples_per_s",
    "ref_cpu_samples_per_s",
    "peak_rss_mb",
    "peak_traced_mb",
    "split_evals",
    "n_splits",
    "depth",
    "accuracy",
    "error",
]
SUMMARY_COLUMNS = [
    "dataset",
    "method",
    "status",
    "n_train",
    "n_test",
    "n_features",
    "repeats",
    "fit_s_median",
    "fit_s_min",
    "fit_s_max",
    "fit_wall_s_median",
    "fit_ratio_cart",
    "predict_sps_median",
    "predict_sps_min",
    "predict_sps_max",
    "predict_wall_sps_median",
    "predict_ratio_cart",
    "peak_rss_mb",
    "peak_traced_mb",
    "split_evals",
    "split_evals_ratio_cart",
    "n_splits",
    "accuracy",
]


# ----------------------------------------------------------------------------- configuration


def load_config(quick: bool = False, path: str | Path | None = None) -> dict:
    """The bench config (``treebench/conf/bench/bench.yaml``), with its ``quick`` block merged when asked."""
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


def _method_yaml(name: str) -> dict:
    p = Path(CONF_DIR) / "method" / f"{name}.yaml"
    return yaml.safe_load(p.read_text()) if p.exists() else {}


def method_settings(name: str, cfg: dict) -> dict:
    """Bench settings of one method: ``params`` (YAML params + bench overlay), expectations, sweep."""
    m = dict(cfg["methods"].get(name) or {})
    y = _method_yaml(m.get("variant", name))
    params = dict(y.get("params") or {})
    if "params" in m:
        params.update(m["params"] or {})
    else:
        params.update(y.get("bench_params") or y.get("smoke_params") or {})
    return {
        "params": params,
        "expected": m.get("expected") or {},
        "sweep": m.get("sweep"),
        "inference": m.get("inference"),
        "threads": bool(m.get("threads", False)),
    }


def registered_methods() -> list[str]:
    """Names of every registered method with a classifier (the bench datasets are classification)."""
    from treebench.methods.base import discover

    return sorted(n for n, e in discover().items() if CLASSIFICATION in e.classes)


# ----------------------------------------------------------------------------- data


@dataclass
class BenchData:
    """Preprocessed train/test arrays of one dataset (a random stratified subset)."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    image_shape: tuple | None = None

    def subset(self, n_train: int | None, n_test: int | None = None) -> BenchData:
        """The first ``n_train`` / ``n_test`` rows (rows are already in random order: nested subsets)."""
        return BenchData(
            self.name,
            self.X_train[:n_train],
            self.y_train[:n_train],
            self.X_test[:n_test],
            self.y_test[:n_test],
            self.image_shape,
        )


def _order(y: np.ndarray, n: int | None, rs: np.random.RandomState) -> np.ndarray:
    """A random order of the rows whose first ``n`` rows are a stratified subset."""
    idx = rs.permutation(len(y))
    if n is None or n >= len(y):
        return idx
    from sklearn.model_selection import train_test_split

    strat = y if np.bincount(np.unique(y, return_inverse=True)[1]).min() >= 2 else None
    try:
        head, tail = train_test_split(
            idx, train_size=n, random_state=rs, stratify=strat[idx] if strat is not None else None
        )
    except ValueError:
        head, tail = idx[:n], idx[n:]
    return np.concatenate([head, tail])


def load_bench_data(
    name: str,
    max_train: int | None = None,
    max_test: int | None = None,
    seed: int = 0,
    data_dir: str | None = None,
) -> BenchData:
    """Load a dataset through ``treebench.data.load_dataset``; the given split or a 75/25 holdout."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from treebench.data import DataContext, load_dataset

    cfg = OmegaConf.load(Path(CONF_DIR) / "dataset" / f"{name}.yaml")
    ctx = DataContext(
        Path(data_dir or os.environ.get("TREEBENCH_DATA_DIR") or "data"),
        os.environ.get("TREEBENCH_MIRROR"),
        allow_fetch=True,
    )
    ds = load_dataset(cfg, ctx)
    rs = np.random.RandomState(seed)
    if "train" in ds.parts and "test" in ds.parts:
        tr, te = ds.parts["train"], ds.parts["test"]
    else:
        from treebench.data.base import Part, take

        allp = ds.pooled()
        o = _order(np.asarray(allp.y), int(round(0.75 * len(allp.y))), rs)
        cut = int(round(0.75 * len(allp.y)))
        tr = Part(take(allp.X, o[:cut]), np.asarray(allp.y)[o[:cut]])
        te = Part(take(allp.X, o[cut:]), np.asarray(allp.y)[o[cut:]])
    from treebench.data.base import take

    otr = _order(np.asarray(tr.y), max_train, rs)[:max_train]
    ote = _order(np.asarray(te.y), max_test, rs)[:max_test]
    Xtr, ytr = take(tr.X, otr), np.asarray(tr.y)[otr]
    Xte, yte = take(te.X, ote), np.asarray(te.y)[ote]
    pre = instantiate(cfg.preprocess)
    pre.fit(Xtr, ytr, categorical=ds.categorical)
    Xtr = np.ascontiguousarray(pre.transform(Xtr), dtype=np.float32)
    Xte = np.ascontiguousarray(pre.transform(Xte), dtype=np.float32)
    shape = tuple(ds.image_shape) if ds.image_shape is not None else None
    return BenchData(name, Xtr, ytr, Xte, yte, shape)


# ----------------------------------------------------------------------------- child processes


def _status_kb() -> dict[str, int]:
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":")
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


_DATA: dict[tuple, BenchData] = {}  # filled by the parent before it forks workers


def _run_job(fn, args, kw) -> dict:
    """One job inside a worker: peak-RSS counter reset, run, peak growth, errors as a status."""
    try:
        _reset_peak()
        base = _status_kb().get("VmRSS")
        out = fn(*args, **kw)
        hwm = _status_kb().get("VmHWM")
        if base is not None and hwm is not None:
            out.setdefault("peak_rss_mb", (hwm - base) / 1024.0)
        out.setdefault("status", "ok")
    except Exception as exc:  # reported to the parent, which goes on with the next job
        out = {
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    return out


def _worker_loop(conn) -> None:
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        fn, args, kw = msg
        conn.send(_run_job(fn, args, kw))
    conn.close()


class Worker:
    """A forked child process that runs jobs one at a time; killed when a job exceeds its timeout.

    Forked after the parent loaded the data (``_DATA``), so jobs name their data by key. The first job
    of a fresh worker pays the lazy imports and first-call costs: benches send a warm-up job first.
    Not a daemon process, so joblib may start its own workers (n_jobs > 1) inside it.
    """

    def __init__(self):
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_loop, args=(child,), daemon=False)
        self.proc.start()
        child.close()
        self.alive = True

    def call(self, fn, args=(), kw=None, timeout: float = 300) -> dict:
        if not self.alive:
            return {"status": "failed", "error": "worker is gone after an earlier failure"}
        self.conn.send((fn, args, kw or {}))
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                self.proc.join(1)
                self.alive = False
                return {"status": "failed", "error": f"child died (exit code {self.proc.exitcode})"}
        self.kill()
        return {"status": "timeout", "error": f"no result within {timeout:.0f} s"}

    def kill(self) -> None:
        self.alive = False
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def close(self) -> None:
        if self.alive:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.alive = False


# ----------------------------------------------------------------------------- one measurement


def make_estimator(name: str, params: dict, threads: int, seed: int, image_shape=None):
    """The classifier ``name`` with ``params``; runner-owned params filled like the runner does."""
    from hydra.utils import instantiate

    from treebench.methods.base import get_method
    from treebench.runner import _set_context_params

    cls = get_method(name, CLASSIFICATION)
    p = instantiate(params, _convert_="all") if params else {}
    est = cls(**p)
    _set_context_params(est, threads, seed, image_shape)
    return est


def _measure(
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

    ``key`` names the data in ``_DATA`` (inherited from the parent); ``n_train`` takes the first rows
    (nested subsets); ``tile_to`` predicts on the test part tiled to that many rows.
    """
    from threadpoolctl import threadpool_limits

    data = _DATA[key]
    if n_train is not None:
        data = data.subset(n_train)
    X_predict = None
    if tile_to:
        reps = int(math.ceil(tile_to / len(data.y_test)))
        X_predict = np.ascontiguousarray(np.tile(data.X_test, (reps, 1))[:tile_to])
    est = make_estimator(name, params, threads, seed, data.image_shape)
    out: dict[str, Any] = {"n_train": len(data.y_train)}
    if traced:
        tracemalloc.start()
    with threadpool_limits(limits=threads):
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
                ref = make_estimator(yardstick[0], yardstick[1], threads, seed, data.image_shape)
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


def _trim_profile(text: str) -> str:
    """The pstats table (header line + rows) without the preamble, paths shortened."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls")), 0)
    keep = [ln.replace(str(PROJECT_DIR) + "/", "") for ln in lines[start:]]
    keep = [ln.replace(os.path.dirname(os.__file__) + "/", "") for ln in keep]
    # a virtualenv's path names the machine that ran it: keep only what follows site-packages/
    keep = [re.sub(r"\S*/site-packages/", "site-packages/", ln) for ln in keep]
    head = next((ln for ln in lines if "function calls" in ln), "").strip()
    return "\n".join([head, *[ln.rstrip() for ln in keep if ln.strip()]])


# ----------------------------------------------------------------------------- sections


class Bench:
    """One benchmark run: config, data, workers, raw rows, log."""

    def __init__(
        self,
        cfg: dict,
        methods: list[str],
        datasets: list[str],
        log=print,
        data_dir: str | None = None,
    ):
        self.cfg, self.methods, self.datasets, self.log = cfg, methods, datasets, log
        self.ref = cfg["reference"]
        self.seed = int(cfg.get("seed", 0))
        self.threads = int(cfg.get("threads", 1))
        self.timeout = float(cfg.get("timeout", 300))
        self.basis = cfg.get("time_basis", "cpu")
        self.FIT, self.PRED = basis_columns(self.basis)
        self.data_dir = data_dir
        self.rows: list[dict] = []
        self.profiles: dict[str, str] = {}
        self.runs: dict[str, dict] = {}  # section -> when/how it ran (sections may come from runs)
        self.settings = {m: method_settings(m, cfg) for m in methods}
        self._preimport()

    def _preimport(self) -> None:
        """Import torch (no ops: fork-safe) and the numba routers once in the parent, so workers
        do not each pay the import (seconds of CPU per worker)."""
        from treebench.methods.base import get_method

        if any(get_method(m, CLASSIFICATION).requires_torch for m in self.methods):
            try:
                import torch  # noqa: F401
            except ImportError:  # pragma: no cover - depends on the environment
                pass
        import treebench.methods._routing  # noqa: F401

    def data(self, name, max_train=None, max_test=None) -> tuple:
        """Load (once) and return the key of a dataset subset in ``_DATA``; before forking workers."""
        key = (name, max_train, max_test)
        if key not in _DATA:
            _DATA[key] = load_bench_data(name, max_train, max_test, self.seed, self.data_dir)
        return key

    def _run(
        self,
        worker,
        section,
        method,
        key,
        params,
        *,
        repeat=0,
        warmup=False,
        threads=None,
        param=None,
        value=None,
        record=True,
        **kw,
    ) -> dict:
        threads = self.threads if threads is None else threads
        res = worker.call(_measure, (method, params, key, threads, self.seed), kw, self.timeout)
        data = _DATA[key]
        row = {c: None for c in RAW_COLUMNS}
        row.update(
            section=section,
            dataset=data.name,
            method=method,
            repeat=repeat,
            warmup=warmup,
            n_train=len(data.y_train),
            n_test=len(data.y_test),
            n_features=data.X_train.shape[1],
            threads=threads,
            param=param,
            value=value,
        )
        row.update({k: v for k, v in res.items() if k in RAW_COLUMNS})
        if res.get("profile"):
            self.profiles[method] = res["profile"]
        if row["status"] != "ok":
            self.log(f"  {method} on {data.name}: {row['status']} {row['error']}")
        if record:
            self.rows.append(row)
        return row

    # -- main table
    def main(self, repeats: int) -> None:
        """Per dataset: one worker per method; warm-up (memory traced), then interleaved repeats."""
        min_p = float(self.cfg.get("predict_min_seconds", 0.2))
        for ds in self.datasets:
            spec = self.cfg["datasets"].get(ds) or {}
            key = self.data(ds, spec.get("max_train"), spec.get("max_test"))
            data = _DATA[key]
            self.log(f"[main] {ds}: train {data.X_train.shape}, test {data.X_test.shape}")
            workers = {m: Worker() for m in self.methods}
            try:
                for r in range(repeats + 1):
                    for m in self.methods:
                        if not workers[m].alive:
                            continue
                        row = self._run(
                            workers[m],
                            "main",
                            m,
                            key,
                            self.settings[m]["params"],
                            repeat=r,
                            warmup=(r == 0),
                            traced=(r == 0),
                            min_predict_s=min_p,
                        )
                        if row["status"] != "ok":
                            workers[m].kill()
                        else:
                            self.log(
                                f"  {'warm-up' if r == 0 else f'r{r}':7s} {m:16s} fit {row[self.FIT]:8.3f}s  predict "
                                f"{row[self.PRED]:12.0f}/s  "
                                f"acc {row['accuracy']:.3f}"
                            )
            finally:
                for w in workers.values():
                    w.close()

    def _series(self, section, m, key, points, cap):
        """Fit-only points (param, value, params, n_train) in one worker after a warm-up fit."""
        w = Worker()
        try:
            first = points[0]
            self._run(w, section, m, key, first[2], n_train=first[3], predict=False, record=False)
            for param, value, params, n in points:
                row = self._run(
                    w, section, m, key, params, param=param, value=value, n_train=n, predict=False
                )
                if row["status"] != "ok":
                    break
                self.log(f"[{section}] {m:16s} {param}={value} fit {row[self.FIT]:.3f}s")
                if row[self.FIT] > cap:
                    break
        finally:
            w.close()

    # -- scaling
    def scaling(self) -> None:
        sc = self.cfg["scaling"]
        key = self.data(sc["dataset"], max(sc["sizes"]), sc.get("n_test"))
        n_max = len(_DATA[key].y_train)
        ps = self.cfg["param_scaling"]
        pkey = self.data(ps["dataset"], ps.get("max_train"), 200)
        for m in self.methods:
            base = self.settings[m]["params"]
            pts = [("n_samples", n, base, n) for n in sc["sizes"] if n <= n_max]
            self._series("scaling_n", m, key, pts, float(sc.get("time_cap", 6)))
        for m in self.methods:
            sw = self.settings[m]["sweep"]
            if not sw:
                continue
            pts = [
                (sw["param"], v, {**self.settings[m]["params"], sw["param"]: v}, None)
                for v in sw["values"][: ps.get("max_values")]
            ]
            self._series("scaling_param", m, pkey, pts, float(ps.get("time_cap", 6)))

    # -- inference target
    def inference(self) -> None:
        ic = self.cfg["inference"]
        key = self.data(ic["dataset"], ic.get("max_train"), None)
        for m in self.methods:
            inf = self.settings[m]["inference"]
            if inf is None:
                continue
            params = {**self.settings[m]["params"], **inf}
            w = Worker()
            try:
                yard = (
                    self.ref,
                    {
                        **self.settings[self.ref]["params"],
                        **(self.settings[self.ref]["inference"] or {}),
                    },
                )
                row = self._run(
                    w,
                    "inference",
                    m,
                    key,
                    params,
                    tile_to=int(ic["n_samples"]),
                    min_predict_s=0.5,
                    yardstick=yard,
                )
                if row["status"] == "ok":
                    self.log(
                        f"[inference] {m:16s} depth {row['depth']} {row[self.PRED]:12.0f} samples/s"
                    )
                    ratio = row[self.PRED] / (
                        row["ref_cpu_samples_per_s" if self.basis == "cpu" else "ref_samples_per_s"]
                        or np.inf
                    )
                    if row[self.PRED] < float(ic["target"]) or ratio < float(
                        ic.get("profile_below_ratio", 0.5)
                    ):
                        self._run(
                            w,
                            "inference_profile",
                            m,
                            key,
                            params,
                            tile_to=int(ic["n_samples"]),
                            min_predict_s=0.0,
                            profile_top=int(ic.get("profile_top", 8)),
                            record=False,
                        )
            finally:
                w.close()

    # -- threads
    def threading(self) -> None:
        tc = self.cfg["threading"]
        key = self.data(tc["dataset"], tc.get("max_train"), None)
        for m in self.methods:
            if not self.settings[m]["threads"]:
                continue
            w = Worker()
            try:
                self._run(
                    w,
                    "threads",
                    m,
                    key,
                    self.settings[m]["params"],
                    threads=1,
                    min_predict_s=0.0,
                    record=False,
                )  # warm-up
                for t in tc["threads"]:
                    row = self._run(
                        w,
                        "threads",
                        m,
                        key,
                        self.settings[m]["params"],
                        threads=t,
                        min_predict_s=0.2,
                    )
                    if row["status"] == "ok":
                        self.log(
                            f"[threads] {m:16s} {t} threads: fit {row['fit_s']:.3f}s "
                            f"predict {row['predict_samples_per_s']:.0f}/s"
                        )
            finally:
                w.close()


# ----------------------------------------------------------------------------- summaries


def basis_columns(basis: str = "cpu") -> tuple[str, str]:
    """(fit seconds, predict samples/s) raw columns of a timing basis: process CPU time or wall."""
    if basis not in ("cpu", "wall"):
        raise ValueError(f"time_basis must be 'cpu' or 'wall', got {basis!r}")
    if basis == "cpu":
        return "fit_cpu_s", "predict_cpu_samples_per_s"
    return "fit_s", "predict_samples_per_s"


def summarize(raw: pd.DataFrame, ref: str = "cart", basis: str = "cpu") -> pd.DataFrame:
    """Median/min/max per (dataset, method) of the timed main rows; ratios against ``ref``.

    ``fit_s_*`` and ``predict_sps_*`` are on the ``basis`` (CPU time of the process by default);
    ``fit_wall_s_median`` and ``predict_wall_sps_median`` are wall-clock medians.
    """
    FIT, PRED = basis_columns(basis)
    main = raw[(raw["section"] == "main") & (~raw["warmup"].astype(bool))]
    warm = raw[(raw["section"] == "main") & (raw["warmup"].astype(bool))]
    out = []
    for (ds, m), g in main.groupby(["dataset", "method"], sort=False):
        ok = g[g["status"] == "ok"]
        w = warm[(warm["dataset"] == ds) & (warm["method"] == m)]
        rec = {
            "dataset": ds,
            "method": m,
            "status": "ok" if len(ok) else g["status"].iloc[0],
            "n_train": g["n_train"].iloc[0],
            "n_test": g["n_test"].iloc[0],
            "n_features": g["n_features"].iloc[0],
            "repeats": len(ok),
        }
        if len(ok):
            f, p = ok[FIT].astype(float), ok[PRED].astype(float)
            rec.update(
                fit_s_median=f.median(),
                fit_s_min=f.min(),
                fit_s_max=f.max(),
                fit_wall_s_median=ok["fit_s"].astype(float).median(),
                predict_wall_sps_median=ok["predict_samples_per_s"].astype(float).median(),
                predict_sps_median=p.median(),
                predict_sps_min=p.min(),
                predict_sps_max=p.max(),
                peak_rss_mb=(w["peak_rss_mb"] if len(w) else ok["peak_rss_mb"]).astype(float).max(),
                peak_traced_mb=w["peak_traced_mb"].astype(float).max() if len(w) else None,
                split_evals=ok["split_evals"].astype(float).median(),
                n_splits=ok["n_splits"].astype(float).median(),
                accuracy=ok["accuracy"].astype(float).median(),
            )
        out.append(rec)
    s = pd.DataFrame(out).reindex(columns=SUMMARY_COLUMNS)
    for _ds, g in s.groupby("dataset", sort=False):
        r = g[g["method"] == ref]
        if not len(r):
            continue
        r = r.iloc[0]
        idx = g.index
        s.loc[idx, "fit_ratio_cart"] = s.loc[idx, "fit_s_median"] / r["fit_s_median"]
        s.loc[idx, "predict_ratio_cart"] = (
            s.loc[idx, "predict_sps_median"] / r["predict_sps_median"]
        )
        s.loc[idx, "split_evals_ratio_cart"] = s.loc[idx, "split_evals"] / r["split_evals"]
    return s


def fit_slope(x, t, model: str = "power") -> float:
    """Least-squares slope of log t vs log x (``power``) or of log2 t vs x (``exp2``)."""
    x, t = np.asarray(x, float), np.asarray(t, float)
    ok = np.isfinite(x) & np.isfinite(t) & (t > 0) & (x > 0)
    if ok.sum() < 3:
        return float("nan")
    xx = np.log(x[ok]) if model == "power" else x[ok]
    yy = np.log(t[ok]) if model == "power" else np.log2(t[ok])
    return float(np.polyfit(xx, yy, 1)[0])


def scaling_summary(
    raw: pd.DataFrame, cfg: dict, settings: dict, basis: str = "wall"
) -> pd.DataFrame:
    """Fitted slopes per method and axis, the expected value and a flag when it is exceeded."""
    FIT = basis_columns(basis)[0]
    tol = float(cfg["scaling"].get("tolerance", 0.3))
    out = []
    for sec in ("scaling_n", "scaling_param"):
        d = raw[(raw["section"] == sec) & (raw["status"] == "ok")]
        for m, g in d.groupby("method", sort=False):
            st = settings.get(m, {})
            if sec == "scaling_n":
                axis, model, exp = "n_samples", "power", st.get("expected", {}).get("n_samples")
            else:
                sw = st.get("sweep") or {}
                axis, model, exp = sw.get("param"), sw.get("model", "power"), sw.get("expected")
            slope = fit_slope(g["value"].astype(float), g[FIT].astype(float), model)
            flag = exp is not None and np.isfinite(slope) and slope > float(exp) + tol
            out.append(
                {
                    "method": m,
                    "axis": axis,
                    "model": "log-log" if model == "power" else "log2 t per unit",
                    "points": len(g),
                    "range": f"{g['value'].min():g}-{g['value'].max():g}",
                    "fit_s_range": f"{g[FIT].min():.3g}-{g[FIT].max():.3g}",
                    "slope": slope,
                    "expected": exp,
                    "flag": "SLOWER THAN STATED" if flag else "",
                }
            )
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- outputs


def _fmt(v, nd=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 1e5:
        return f"{v:.3g}"
    return f"{v:.{nd}g}"


def _md_table(df: pd.DataFrame, cols: list[str], headers: list[str] | None = None) -> str:
    headers = headers or cols
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append(
            "| "
            + " | ".join(_fmt(r[c]) if not isinstance(r[c], str) else r[c] for c in cols)
            + " |"
        )
    return "\n".join(lines)


def _machine() -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    from treebench.runner import git_sha, package_versions

    return {
        "host": socket.gethostname(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "packages": package_versions(),
        "git_sha": git_sha(),
    }


def plot_overview(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary[summary["status"] == "ok"]
    methods = list(dict.fromkeys(s["method"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * len(methods) + 2), sharey=True)
    ypos = {m: i for i, m in enumerate(methods)}
    for ds, g in s.groupby("dataset", sort=False):
        y = [ypos[m] for m in g["method"]]
        axes[0].errorbar(
            g["fit_s_median"],
            y,
            xerr=[g["fit_s_median"] - g["fit_s_min"], g["fit_s_max"] - g["fit_s_median"]],
            fmt="o",
            label=ds,
            capsize=2,
        )
        axes[1].errorbar(
            g["predict_sps_median"],
            y,
            xerr=[
                g["predict_sps_median"] - g["predict_sps_min"],
                g["predict_sps_max"] - g["predict_sps_median"],
            ],
            fmt="o",
            label=ds,
            capsize=2,
        )
    for ax, t in zip(
        axes, ["fit seconds (median, min-max)", "predict samples/s (test part)"], strict=True
    ):
        ax.set_xscale("log")
        ax.set_xlabel(t)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_yticks(range(len(methods)), methods)
    axes[0].invert_yaxis()
    axes[1].legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_scaling(
    raw: pd.DataFrame, slopes: pd.DataFrame, path: Path, fit_col: str = "fit_s"
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from treebench.report.figures import method_color

    secs = [("scaling_n", "n_samples (log)")]
    params = raw.loc[raw["section"] == "scaling_param", "param"].dropna().unique().tolist()
    secs += [("scaling_param", p) for p in params]
    fig, axes = plt.subplots(1, len(secs), figsize=(6 * len(secs), 4.5), squeeze=False)
    for ax, (sec, p) in zip(axes[0], secs, strict=True):
        d = raw[(raw["section"] == sec) & (raw["status"] == "ok")]
        if sec == "scaling_param":
            d = d[d["param"] == p]
        for m, g in d.groupby("method", sort=False):
            sl = slopes[
                (slopes["method"] == m)
                & (slopes["axis"] == (p if sec != "scaling_n" else "n_samples"))
            ]
            lab = m + (
                f" ({sl['slope'].iloc[0]:.2f})"
                if len(sl) and np.isfinite(sl["slope"].iloc[0])
                else ""
            )
            ax.plot(
                g["value"].astype(float),
                g[fit_col].astype(float),
                "o-",
                color=method_color(m),
                label=lab,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(p.split(" ")[0])
        ax.set_ylabel("fit seconds")
        ax.set_title(f"fit time vs {p.split(' ')[0]} (slope)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_outputs(bench: Bench, out: Path, meta: dict) -> dict[str, Path]:
    """Write BENCHMARKS.md, CSVs and PNGs under ``out`` (plots and CSVs in ``out/docs/bench``)."""
    out = Path(out)
    d = out / "docs" / "bench"
    d.mkdir(parents=True, exist_ok=True)
    raw = pd.DataFrame(bench.rows, columns=RAW_COLUMNS)
    files = {
        "raw": d / "bench_raw.csv",
        "summary": d / "bench_summary.csv",
        "md": out / "BENCHMARKS.md",
    }
    raw.to_csv(files["raw"], index=False)
    summary = (
        summarize(raw, bench.ref, bench.basis)
        if (raw["section"] == "main").any()
        else pd.DataFrame(columns=SUMMARY_COLUMNS)
    )
    summary.to_csv(files["summary"], index=False)
    (d / "runs.json").write_text(json.dumps(bench.runs, indent=1))
    (d / "profiles.json").write_text(json.dumps(bench.profiles, indent=1))
    runs = "\n".join(
        f"* {sec}: `{r['command']}` at git `{str(r.get('git_sha'))[:7]}`, {r['started']} – "
        f"{r['finished']}, load average (1, 5, 15 min) "
        f"{r['load_start']} at the start, {r['load_end']} at the end"
        for sec, r in bench.runs.items()
    )
    md = [
        f"# Benchmarks\n\nGenerated by `treebench bench` (`treebench/bench.py`, "
        f"`treebench/conf/bench/bench.yaml`). Sections and their runs:\n\n{runs}\n",
        f"**Shared machine**: {meta['cores']} cores ({meta['cpu']}) shared with ~6 other users "
        "while this ran (see the load averages above: well above the core count). Absolute seconds "
        "are noisy; the ratios to CART are measured in the same run, interleaved repeat by "
        "repeat, and are the numbers to compare across machines.\n",
        f"Host `{meta['host']}`, Python {meta['python']}, git `{meta['git_sha']}`, packages "
        + ", ".join(f"{k} {v}" for k, v in meta["packages"].items())
        + ".\n",
        "## How it is measured\n",
        "* Measurements run in forked worker processes (one per method and dataset, or per "
        "series), which get a warm-up job first, so lazy imports and first-call costs are not "
        f"timed; a job over {bench.timeout:g} s is killed. "
        f"{bench.threads} thread(s) (`threadpoolctl` limit, `n_jobs`, torch intra-op threads) "
        "unless stated.",
        "* Settings per method: `treebench/conf/bench/bench.yaml` over the method YAML (`params`, else "
        "`bench_params`/`smoke_params`). These are *bench profiles* (fewer epochs/trees than the "
        "papers): fit seconds measure the implementation's speed, not the papers' full budgets.",
        f"* Main table: one warm-up run (not timed; memory traced) then {bench.runs.get('main', meta)['repeats']} timed "
        f"repeats, interleaved over methods. Times are **{bench.basis} time** "
        + (
            "(`time.process_time()` of the worker: on a loaded shared machine wall time mostly "
            "measures waiting for a core, CPU time what one core spends; with 1 thread it is "
            "what an idle core's wall time would be; wall medians are in the CSV and the `fit wall` "
            "column). "
            if bench.basis == "cpu"
            else "(wall clock). "
        )
        + "`fit s` = seconds of `fit` (median [min, max]); "
        "`predict/s` = test rows / fastest `predict` call (calls repeated for "
        f"{bench.cfg.get('predict_min_seconds')} s; small test parts are dominated by per-call "
        "overhead); `× CART` ratios are against CART's median on the same data in the same run "
        "(fit: method/CART seconds; predict: method/CART throughput).",
        "* Memory: `peak RSS MB` = peak resident set growth during the warm-up job in a fresh "
        "worker (kernel peak counter reset via `/proc/self/clear_refs`, VmHWM − VmRSS at the "
        "job's start; covers numpy, torch and native code, including library pages a method touches "
        "for the first time: torch's runtime alone is ~100 MB of it); `traced MB` = `tracemalloc` peak of the warm-up run "
        "(Python objects and numpy arrays, not torch tensors).",
        "* `split evals` = `size_report(X_test)['split_evals']`: mean split evaluations per "
        "sample, summed over members (soft trees evaluate every split).\n",
    ]
    if len(summary):
        md.append("## Fit, predict, memory and size per dataset\n")
        for ds, g in summary.groupby("dataset", sort=False):
            g = g.copy()
            g["fit"] = [
                f"{_fmt(a)} [{_fmt(b)}, {_fmt(c)}]" if r == "ok" else r
                for a, b, c, r in zip(
                    g["fit_s_median"], g["fit_s_min"], g["fit_s_max"], g["status"], strict=True
                )
            ]
            g["pred"] = [
                f"{_fmt(a)} [{_fmt(b)}, {_fmt(c)}]" if r == "ok" else "-"
                for a, b, c, r in zip(
                    g["predict_sps_median"],
                    g["predict_sps_min"],
                    g["predict_sps_max"],
                    g["status"],
                    strict=True,
                )
            ]
            r0 = g.iloc[0]
            md.append(
                f"### {ds} (train {r0['n_train']}, test {r0['n_test']}, "
                f"{r0['n_features']} features)\n"
            )
            md.append(
                _md_table(
                    g,
                    [
                        "method",
                        "fit",
                        "fit_ratio_cart",
                        "fit_wall_s_median",
                        "pred",
                        "predict_ratio_cart",
                        "peak_rss_mb",
                        "peak_traced_mb",
                        "split_evals",
                        "n_splits",
                        "accuracy",
                    ],
                    [
                        "method",
                        "fit s (median [min, max])",
                        "fit × CART",
                        "fit wall s",
                        "predict/s (median [min, max])",
                        "predict × CART",
                        "peak RSS MB",
                        "traced MB",
                        "split evals",
                        "splits",
                        "test acc",
                    ],
                )
                + "\n"
            )
        plot_overview(summary, d / "overview.png")
        files["overview"] = d / "overview.png"
        md.append("![fit and predict](docs/bench/overview.png)\n")
    inf = raw[raw["section"] == "inference"]
    if len(inf):
        ic = bench.cfg["inference"]
        inf = inf.copy()
        ref = inf[(inf["method"] == bench.ref) & (inf["status"] == "ok")]
        P = bench.PRED
        base = float(ref[P].iloc[0]) if len(ref) else float("nan")
        RP = "ref_cpu_samples_per_s" if bench.basis == "cpu" else "ref_samples_per_s"
        if RP not in inf:
            inf[RP] = np.nan
        adj = inf[RP].astype(float)
        inf["ratio"] = inf[P].astype(float) / adj.where(adj.notna(), base)
        inf["target"] = [
            "met" if s == "ok" and v >= float(ic["target"]) else ("below" if s == "ok" else s)
            for s, v in zip(inf["status"], inf[P], strict=True)
        ]
        inf.to_csv(d / "inference.csv", index=False)
        md.append(
            f"## Inference target: deterministic depth-10 tree/graph, one core\n\n"
            f"{ic['dataset']} (train {inf['n_train'].iloc[0]}), predict on "
            f"{ic['n_samples']} rows (the test part tiled), 1 thread, the fastest of the calls "
            f"in 0.5 s of {bench.basis} time (wall-clock samples/s in `inference.csv`). Target ≥ "
            f"{float(ic['target']):.0f} samples/s; CART (scikit-learn, depth 10) is the yardstick: "
            "in every method's worker a CART is fitted on the same data and its predict is timed "
            "alternately with the method's (5 rounds, fastest call of each), so `× CART` compares "
            "the two under the same load; `CART samples/s` is that adjacent measurement.\n"
        )
        md.append(
            _md_table(
                inf,
                [
                    "method",
                    "depth",
                    "n_splits",
                    "split_evals",
                    P,
                    "predict_samples_per_s",
                    RP,
                    "ratio",
                    "target",
                ],
                [
                    "method",
                    "depth",
                    "splits",
                    "split evals",
                    f"samples/s ({bench.basis})",
                    "samples/s (wall)",
                    "CART samples/s (adjacent)",
                    "× CART",
                    "≥ target",
                ],
            )
            + "\n"
        )
        if bench.profiles:
            md.append(
                "Profiles (cProfile with a CPU-time clock, sorted by own time) of one `predict` "
                "call of each method below the target or below "
                f"{ic.get('profile_below_ratio', 0.5)} × CART:\n"
            )
            for m, prof in bench.profiles.items():
                md.append(f"<details><summary>{m}</summary>\n\n```\n{prof}\n```\n</details>\n")
    thr = raw[(raw["section"] == "threads") & (raw["status"] == "ok")]
    if len(thr):
        rows = []
        for m, g in thr.groupby("method", sort=False):
            g = g.set_index("threads")
            t1 = g.index.min()
            for t, r in g.iterrows():
                rows.append(
                    {
                        "method": m,
                        "threads": t,
                        "fit_s": r["fit_s"],
                        "fit_cpu_s": r["fit_cpu_s"],
                        "fit_speedup": g.loc[t1, "fit_s"] / r["fit_s"],
                        "predict_sps": r["predict_samples_per_s"],
                        "predict_speedup": r["predict_samples_per_s"]
                        / g.loc[t1, "predict_samples_per_s"],
                    }
                )
        tt = pd.DataFrame(rows)
        tt.to_csv(d / "threads.csv", index=False)
        md.append(
            f"## Threads\n\n{bench.cfg['threading']['dataset']} (train "
            f"{thr['n_train'].iloc[0]}, test {thr['n_test'].iloc[0]}): `n_jobs` = threadpool "
            "limit = torch threads = the thread count. On a shared 2-core machine the speedup "
            "is bounded by the other users' load.\n"
        )
        md.append(
            _md_table(
                tt,
                [
                    "method",
                    "threads",
                    "fit_s",
                    "fit_cpu_s",
                    "fit_speedup",
                    "predict_sps",
                    "predict_speedup",
                ],
                [
                    "method",
                    "threads",
                    "fit s",
                    "fit CPU s (this process)",
                    "fit speedup",
                    "predict/s",
                    "predict speedup",
                ],
            )
            + "\n"
        )
    sc = raw[raw["section"].isin(["scaling_n", "scaling_param"])]
    if len(sc):
        slopes = scaling_summary(raw, bench.cfg, bench.settings, bench.basis)
        slopes.to_csv(d / "scaling.csv", index=False)
        plot_scaling(raw, slopes, d / "scaling.png", bench.FIT)
        files["scaling"] = d / "scaling.png"
        scfg = bench.cfg["scaling"]
        md.append(
            f"## Scaling\n\nFit seconds vs n_samples ({scfg['dataset']}, nested random "
            f"subsets {scfg['sizes']}) and vs one parameter per method "
            f"({bench.cfg['param_scaling']['dataset']}, "
            f"{bench.cfg['param_scaling'].get('max_train')} rows); a method stops growing "
            f"after a fit longer than its time cap. `slope` is the least-squares slope of "
            "log t vs log x (log-log) or of log2 t vs x (exp2 models: full trees of depth D "
            f"cost 2^D); `expected` is stated in `treebench/conf/bench/bench.yaml`; a slope above "
            f"expected + {scfg.get('tolerance', 0.3)} is flagged. Small sizes are dominated "
            "by fixed costs, which flattens slopes.\n"
        )
        md.append(
            _md_table(
                slopes,
                [
                    "method",
                    "axis",
                    "model",
                    "points",
                    "range",
                    "fit_s_range",
                    "slope",
                    "expected",
                    "flag",
                ],
            )
            + "\n"
        )
        md.append("![scaling](docs/bench/scaling.png)\n")
    md.append("Raw rows: `docs/bench/bench_raw.csv`; summary: `docs/bench/bench_summary.csv`.\n")
    files["md"].write_text("\n".join(md))
    return files


# ----------------------------------------------------------------------------- entry point

SECTIONS = ("main", "inference", "threads", "scaling")


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


def run(
    methods: list[str] | None = None,
    datasets: list[str] | None = None,
    repeats: int | None = None,
    quick: bool = False,
    out: str | Path | None = None,
    sections: list[str] | None = None,
    timeout: float | None = None,
    log=print,
    command: str = "treebench bench",
    config: str | None = None,
    update: bool = False,
) -> dict[str, Path]:
    """Run the benchmark and write its outputs (see :func:`output_dir`); returns the written files."""
    out = output_dir(out, update)
    cfg = load_config(quick, config)
    if timeout is not None:
        cfg["timeout"] = timeout
    allm = registered_methods()
    ref = cfg["reference"]
    chosen = allm if not methods else list(methods)
    unknown = [m for m in chosen if m not in allm]
    if unknown:
        raise ValueError(f"unknown or non-classification methods {unknown}; choices: {allm}")
    chosen = [ref] + [m for m in chosen if m != ref]  # the reference is always measured
    dsets = list(datasets) if datasets else list(cfg["datasets"])
    sections = list(sections) if sections else list(SECTIONS)
    if sections == ["none"]:  # with --update: only rewrite BENCHMARKS.md from the stored results
        sections = []
    bad = [s for s in sections if s not in SECTIONS]
    if bad:
        raise ValueError(f"unknown sections {bad}; choices: {SECTIONS}")
    reps = int(repeats if repeats is not None else cfg.get("repeats", 3))
    cfg["datasets"] = {d: (cfg["datasets"].get(d) or {}) for d in dsets}
    meta = {
        "command": command,
        "repeats": reps,
        "load_start": _load(),
        "started": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        **_machine(),
    }
    bench = Bench(cfg, chosen, dsets, log=log)
    if update:
        _load_previous(bench, Path(out), sections)
    t0 = time.perf_counter()
    steps = {
        "main": lambda: bench.main(reps),
        "inference": bench.inference,
        "threads": bench.threading,
        "scaling": bench.scaling,
    }
    files = {}
    for name in SECTIONS:
        if name not in sections:
            continue
        started, load0 = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), _load()
        steps[name]()
        bench.runs[name] = {
            "command": command,
            "started": started,
            "finished": _dt.datetime.now(_dt.UTC).strftime("%H:%M UTC"),
            "load_start": load0,
            "load_end": _load(),
            "repeats": reps,
            "git_sha": meta["git_sha"],
        }
        meta.update(load_end=_load(), finished=_dt.datetime.now(_dt.UTC).strftime("%H:%M UTC"))
        files = write_outputs(bench, Path(out), meta)  # after every section: partial results kept
    if not files:
        files = write_outputs(bench, Path(out), meta)
    log(f"bench done in {time.perf_counter() - t0:.0f} s; wrote {files['md']}")
    return files


def _raw_section(sec: str) -> str:
    return "scaling" if sec.startswith("scaling") else sec.replace("_profile", "")


def _load_previous(bench: Bench, out: Path, sections: list[str]) -> None:
    """Keep the rows, run records and profiles of the sections not re-run (``--update``)."""
    d = out / "docs" / "bench"
    if (d / "bench_raw.csv").exists():
        old = pd.read_csv(d / "bench_raw.csv")
        old = old[~old["section"].map(_raw_section).isin(sections)]
        old = old.astype(object).where(old.notna(), None)
        bench.rows.extend(old.to_dict("records"))
    if (d / "runs.json").exists():
        prev = json.loads((d / "runs.json").read_text())
        bench.runs.update({k: v for k, v in prev.items() if k not in sections})
    if "inference" not in sections and (d / "profiles.json").exists():
        bench.profiles.update(json.loads((d / "profiles.json").read_text()))


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"
