"""A bench run: its sections over forked workers and the CLI's processes.

The sections are the main table, inference target, threads and scaling; the result store's scale
(``store``: CLI processes, :mod:`treebench.bench.store`) and the CLI's startup (``startup``: CLI
processes, :mod:`treebench.bench.startup`) run as processes of their own.

Every section sends jobs to :class:`~treebench.bench.worker.Worker` processes, a warm-up job first
(lazy imports, numba compilation and first-call caches are not timed; the warm-up also traces
Python allocations). The main table interleaves repeats over the methods, so that the load of a
shared machine hits all methods alike; ratios are against the reference method (CART) measured in
the same run. With ``overlap_processes`` (the quick profile) the process sections run in a worker of
their own beside the others.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import time
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.bench.config import (
    CLASSIFICATION,
    FIRST_CALL_ROWS,
    SECTIONS,
    basis_columns,
    default_params,
    load_config,
    method_profile,
    method_settings,
    output_dir,
    registered_methods,
    tune_job,
)
from treebench.bench.data import load_bench_data, synthetic_data
from treebench.bench.measure import measure, measure_tuned
from treebench.bench.summary import RAW_COLUMNS
from treebench.bench.worker import DATA, Worker
from treebench.bench.write import write_outputs


def _init_numba() -> None:
    """Compile one trivial function.

    Numba's LLVM JIT engine is initialised in this process (~0.3 s of CPU a worker would pay at its
    first compiled call; no threads are started).
    """
    try:
        import numba
    except ImportError:  # pragma: no cover - depends on the environment
        return
    numba.njit(lambda x: x + 1)(1)


#: the sections whose measurements are CLI processes (no worker jobs)
PROCESS_SECTIONS = ("store", "startup")


def _process_sections(cfg: dict, names: list[str]) -> dict:
    """Run the process sections ``names`` (inside a worker, see :meth:`Bench.start_processes`).

    Returns
    -------
    dict
        The rows of each section by name, ``runs`` (section -> when it ran and the load average
        then) and ``log`` (the lines the sections logged, for the parent to show).
    """
    from treebench.bench.startup import run_startup_section
    from treebench.bench.store import run_store_section

    lines: list[str] = []
    out: dict = {"log": lines, "runs": {}}
    for name in names:
        started, load0 = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), _load()
        section = run_store_section if name == "store" else run_startup_section
        out[name] = section(cfg, log=lambda *a: lines.append(" ".join(map(str, a))))
        out["runs"][name] = {
            "started": started,
            "finished": _dt.datetime.now(_dt.UTC).strftime("%H:%M UTC"),
            "load_start": load0,
            "load_end": _load(),
        }
    return out


class Bench:
    """One benchmark run: config, data, workers, raw rows, log.

    Parameters
    ----------
    processes : sequence of str
        Process sections (:data:`PROCESS_SECTIONS`) started at once in a worker of their own, to
        run beside the other sections (:meth:`start_processes`).
    """

    def __init__(
        self,
        cfg: dict,
        methods: list[str],
        datasets: list[str],
        log=print,
        data_dir: str | None = None,
        processes=(),
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
        self.store_rows: list[dict] = []  # the store section's rows (treebench.bench.store)
        self.startup_rows: list[dict] = []  # the startup section's rows (treebench.bench.startup)
        self.runs: dict[str, dict] = {}  # section -> when/how it ran (sections may come from runs)
        self.settings = {m: method_profile(m, cfg) for m in methods}
        self.first_call = bool(cfg.get("first_call", False))
        self.reuse_workers = bool(cfg.get("reuse_workers", False))
        self._workers: dict[str, Worker] = {}  # with reuse_workers: one per method
        self._first_calls: dict[Worker, str] = {}  # workers still running their first call
        self._aside: Worker | None = None  # the process sections' worker (start_processes)
        self._aside_names: set[str] = set()
        self.aside_runs: dict[str, dict] = {}  # when each of them ran
        if processes:  # forked before the imports below, which it does not need
            self.start_processes(processes)
        self._preimport()

    def params(self, method: str, dataset: str) -> dict:
        """Return the method's bench parameters with its config composed for ``dataset``."""
        return method_settings(method, self.cfg, dataset)["params"]

    def _preimport(self) -> None:
        """Import torch (no ops: fork-safe) and the numba routers once in the parent.

        Thus workers do not each pay the import (seconds of CPU per worker); and the config's
        ``preimport`` modules (e.g. ``torch._dynamo``, which torch's optimizers import on first use:
        ~1 s of CPU per worker, ten times that under the warm-up's tracemalloc).
        """
        import importlib

        from treebench.methods.base import get_method

        if any(get_method(m, CLASSIFICATION).requires_torch for m in self.methods):
            try:
                import torch  # noqa: F401

                for name in self.cfg.get("preimport") or []:
                    importlib.import_module(name)
            except ImportError:  # pragma: no cover - depends on the environment
                pass
        import treebench.methods._routing  # noqa: F401

        if self.cfg.get("jit_init"):  # numba's LLVM engine set up once, not in every worker
            _init_numba()

    def worker(self, method: str) -> Worker:
        """Return a fresh worker for ``method``, or with ``reuse_workers`` its one live worker.

        With ``first_call`` a fresh one has been sent its first call (:meth:`_first_call`), which
        its next job waits for.
        """
        w = self._workers.get(method) if self.reuse_workers else None
        if w is not None and w.alive and w.keys == set(DATA):
            return w
        if w is not None:  # gone, or forked before data it may need were loaded (see preload)
            self._await_first_call(w)
            w.close()
        w = Worker()
        if self.reuse_workers:
            self._workers[method] = w
        if self.first_call:
            self._first_call(w, method)
        return w

    def preload(self, sections) -> None:
        """Load the data of every section in ``sections`` now.

        A worker kept for later sections (``reuse_workers``) sees only the data loaded before it was
        forked.
        """
        first = list(self.cfg["datasets"])[:1] if self.first_call else []  # _first_call's rows
        for ds in self.datasets if "main" in sections else first:
            spec = self.cfg["datasets"].get(ds) or {}
            self.data(ds, spec.get("max_train"), spec.get("max_test"))
        if "scaling" in sections:
            sc, ps = self.cfg["scaling"], self.cfg["param_scaling"]
            self.data(sc["dataset"], max(sc["sizes"]), sc.get("n_test"))
            self.data(ps["dataset"], ps.get("max_train"), 200)
        if "small" in sections:
            self.small_data()
        for sec, name in (("inference", "inference"), ("threads", "threading")):
            if sec in sections:
                c = self.cfg[name]
                self.data(c["dataset"], c.get("max_train"), None)

    def release(self, w: Worker) -> None:
        """Close a worker after its section (kept for the next section with ``reuse_workers``)."""
        if not (self.reuse_workers and w.alive):
            w.close()

    def close(self) -> None:
        """Close the workers kept with ``reuse_workers``; kill process sections still running."""
        for w in self._workers.values():
            self._await_first_call(w)
            w.close()
        self._workers.clear()
        if self._aside is not None:
            self._aside.kill()
            self._aside = None

    def start_processes(self, names) -> None:
        """Start the process sections ``names`` (:data:`PROCESS_SECTIONS`) now, in their own worker.

        They run beside the sections run next (their CLI processes and the other sections' jobs
        then share the machine's cores); :meth:`store` and :meth:`startup` collect them.
        """
        self._aside = Worker()
        self._aside.submit(_process_sections, (self.cfg, list(names)))
        self._aside_names = set(names)

    def _collect_processes(self) -> None:
        """Wait for the process sections started by :meth:`start_processes`; take their results.

        Each of their commands has its own timeout; the results are their rows, run records and
        log lines.
        """
        if self._aside is None:
            return
        res = self._aside.result(timeout=None)
        self._aside.close()
        self._aside = None
        if res["status"] != "ok":
            raise RuntimeError(
                f"process sections failed: {res['error']}\n{res.get('traceback', '')}"
            )
        for line in res["log"]:
            self.log(line)
        self.store_rows = res.get("store", self.store_rows)
        self.startup_rows = res.get("startup", self.startup_rows)
        self.aside_runs = res["runs"]

    def _first_call(self, w: Worker, method: str) -> None:
        """Pay lazy imports, numba cache loads and torch's first calls outside timed or traced jobs.

        A fit and a predict on the first :data:`FIRST_CALL_ROWS` rows of the first dataset, not
        recorded. Started, not awaited: the worker's next job waits for it, so the first calls of
        the workers a section starts run side by side (and beside the parent).
        """
        ds = next(iter(self.cfg["datasets"]))
        spec = self.cfg["datasets"].get(ds) or {}
        key = self.data(ds, spec.get("max_train"), spec.get("max_test"))
        n = min(FIRST_CALL_ROWS, len(DATA[key].y_train))
        args = (method, self.params(method, ds), key, self.threads, self.seed)
        w.submit(measure, args, {"n_train": n, "min_predict_s": 0.0})
        self._first_calls[w] = method

    def _await_first_call(self, w: Worker) -> None:
        """Wait for ``w``'s first call (:meth:`_first_call`), if it has one running."""
        method = self._first_calls.pop(w, None)
        if method is None:
            return
        res = w.result(self.timeout)
        if res["status"] != "ok":
            self.log(f"  {method} first call: {res['status']} {res['error']}")

    def data(self, name, max_train=None, max_test=None) -> tuple:
        """Load (once) and return the key of a dataset subset in ``DATA``.

        Before forking workers.
        """
        key = (name, max_train, max_test)
        if key not in DATA:
            DATA[key] = load_bench_data(name, max_train, max_test, self.seed, self.data_dir)
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
        fn=measure,
        args=(),
        **kw,
    ) -> dict:
        threads = self.threads if threads is None else threads
        self._await_first_call(worker)
        job = (method, params, key, threads, self.seed, *args)
        res = worker.call(fn, job, kw, self.timeout)
        data = DATA[key]
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
            data = DATA[key]
            self.log(f"[main] {ds}: train {data.X_train.shape}, test {data.X_test.shape}")
            workers = {m: self.worker(m) for m in self.methods}
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
                            self.params(m, ds),
                            repeat=r,
                            warmup=(r == 0),
                            traced=(r == 0),
                            min_predict_s=min_p,
                        )
                        if row["status"] != "ok":
                            workers[m].kill()
                        else:
                            self.log(
                                f"  {'warm-up' if r == 0 else f'r{r}':7s} {m:16s} fit "
                                f"{row[self.FIT]:8.3f}s  predict "
                                f"{row[self.PRED]:12.0f}/s  "
                                f"acc {row['accuracy']:.3f}"
                            )
            finally:
                for w in workers.values():
                    self.release(w)

    def time_cap(self, method: str, section_cap: float) -> float:
        """Fit seconds after which a scaling series stops growing.

        The method's ``time_cap`` (bench.yaml: a fixed per-fit cost above the section's cap, such as
        a solver's preprocessing, would leave one point) else the section's.
        """
        cap = self.settings[method].get("time_cap")
        return float(section_cap if cap is None else cap)

    def _series(self, section, m, key, points, cap):
        """Time fit-only points (param, value, params, n_train) in one worker after a warm-up fit.

        No warm-up with ``first_call``: the worker paid its first calls when it started. The series
        stops after a failed point or a fit longer than ``cap`` seconds.
        """
        w = self.worker(m)
        try:
            first = points[0]
            if not self.first_call:
                self._run(
                    w, section, m, key, first[2], n_train=first[3], predict=False, record=False
                )
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
            self.release(w)

    # -- small data
    def small_data(self) -> tuple[dict, tuple | None, tuple | None]:
        """Load (once) the small section's data.

        ``{dataset: key}`` of the pooled datasets, the key of the tune job's dataset (fold 0) and of
        the slope's synthetic rows.
        """
        sc = self.cfg["small"]
        keys = {}
        for ds, n in sc["datasets"].items():
            key = (ds, "pooled", int(n))
            if key not in DATA:
                DATA[key] = DATA[self.data(ds)].pooled(int(n), self.seed)
            keys[ds] = key
        tc, sl = sc.get("tune"), sc.get("slope")
        tkey = self.data(tc["dataset"]) if tc else None
        skey = None
        if sl:
            skey = ("synthetic", max(sl["sizes"]), int(sl["n_features"]))
            if skey not in DATA:
                DATA[skey] = synthetic_data(skey[1], skey[2], self.seed)
        return keys, tkey, skey

    def _small_params(self, method: str, dataset: str | None) -> dict:
        """Return the small section's settings of ``method``.

        Its own defaults, or with ``params: bench`` (the quick profile's smoke run) the bench
        profile's.
        """
        if self.cfg["small"].get("params", "defaults") == "bench":
            return self.params(method, dataset)
        return default_params(method, self.cfg, dataset)

    def small(self) -> None:
        """Where benchmark suites live.

        Every method at its own defaults (the method config, not the bench profile), CPU per fit on
        datasets of a few hundred to a few thousand rows, the cost of one tuned job, and fit time vs
        rows of the ``slope`` method's variants.

        One worker per method for the fits and the tune job: a warm-up fit on the first dataset
        (none with ``first_call``), then ``repeats`` timed fits per dataset interleaved over the
        methods; a method whose fit fails or times out is not run further.
        """
        sc = self.cfg["small"]
        keys, tkey, skey = self.small_data()
        reps = int(sc.get("repeats", 3))
        workers = {m: self.worker(m) for m in self.methods}
        try:
            for i, (ds, key) in enumerate(keys.items()):
                n = len(DATA[key].y_train)
                self.log(f"[small] {ds}: {n} rows, {DATA[key].X_train.shape[1]} features")
                params = {m: self._small_params(m, ds) for m in self.methods}
                first = 0 if i == 0 and not self.first_call else 1
                for r in range(first, reps + 1):
                    for m in self.methods:
                        if not workers[m].alive:
                            continue
                        row = self._run(
                            workers[m],
                            "small",
                            m,
                            key,
                            params[m],
                            repeat=r,
                            warmup=(r == 0),
                            param="n_rows",
                            value=n,
                            predict=False,
                        )
                        if row["status"] != "ok":
                            workers[m].kill()
                        elif r:
                            self.log(f"  r{r} {m:16s} fit {row[self.FIT]:8.3f}s")
            tc = sc.get("tune")
            for m in self.methods if tc else []:
                if not workers[m].alive:
                    continue
                tune, metric = tune_job(m, tc["dataset"], tc["tune"])
                row = self._run(
                    workers[m],
                    "small_tune",
                    m,
                    tkey,
                    self._small_params(m, tc["dataset"]),
                    param=f"tune={tc['tune']}",
                    fn=measure_tuned,
                    args=(tune, metric),
                )
                if row["status"] == "ok":
                    self.log(
                        f"  tune={tc['tune']} {m:16s} {row[self.FIT]:8.3f}s ({row['fits']} fits)"
                    )
        finally:
            for w in workers.values():
                self.release(w)
        sl = sc.get("slope")
        if not sl or sl["method"] not in self.methods:
            return
        m = sl["method"]
        base = {**self._small_params(m, None), **(sl.get("params") or {})}
        for label, over in (sl.get("variants") or {"defaults": {}}).items():
            pts = [(label, n, {**base, **(over or {})}, n) for n in sl["sizes"]]
            self._series("small_slope", m, skey, pts, float("inf"))

    # -- scaling
    def scaling(self) -> None:
        """Measure fit time against training rows and against each method's swept parameter."""
        sc = self.cfg["scaling"]
        key = self.data(sc["dataset"], max(sc["sizes"]), sc.get("n_test"))
        n_max = len(DATA[key].y_train)
        ps = self.cfg["param_scaling"]
        pkey = self.data(ps["dataset"], ps.get("max_train"), 200)
        for m in self.methods:
            base = self.params(m, sc["dataset"])
            pts = [("n_samples", n, base, n) for n in sc["sizes"] if n <= n_max]
            self._series("scaling_n", m, key, pts, self.time_cap(m, sc.get("time_cap", 6)))
        for m in self.methods:
            sw = self.settings[m]["sweep"]
            if not sw:
                continue
            pts = [
                (sw["param"], v, {**self.params(m, ps["dataset"]), sw["param"]: v}, None)
                for v in sw["values"][: ps.get("max_values")]
            ]
            self._series("scaling_param", m, pkey, pts, self.time_cap(m, ps.get("time_cap", 6)))

    # -- inference target
    def inference(self) -> None:
        """Measure predict time on the inference dataset."""
        ic = self.cfg["inference"]
        key = self.data(ic["dataset"], ic.get("max_train"), None)
        for m in self.methods:
            inf = self.settings[m]["inference"]
            if inf is None:
                continue
            params = {**self.params(m, ic["dataset"]), **inf}
            w = self.worker(m)
            try:
                yard = (
                    self.ref,
                    {
                        **self.params(self.ref, ic["dataset"]),
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
                    min_predict_s=float(ic.get("predict_min_seconds", 0.5)),
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
                self.release(w)

    # -- result store scale
    def store(self) -> None:
        """Measure the result store at scale (collected from its process when it ran aside)."""
        from treebench.bench.store import run_store_section

        if "store" in self._aside_names:
            self._collect_processes()
            return
        self.store_rows = run_store_section(self.cfg, log=self.log)

    # -- threads
    # -- process start to first useful work
    def startup(self) -> None:
        """Measure process start to first useful work.

        Collected from its process when it ran aside.
        """
        from treebench.bench.startup import run_startup_section

        if "startup" in self._aside_names:
            self._collect_processes()
            return
        self.startup_rows = run_startup_section(self.cfg, log=self.log)

    def threading(self) -> None:
        """Measure fit time against threads for the methods that take ``n_jobs``."""
        tc = self.cfg["threading"]
        key = self.data(tc["dataset"], tc.get("max_train"), None)
        for m in self.methods:
            if not self.settings[m]["threads"]:
                continue
            w = self.worker(m)
            try:
                if not self.first_call:  # warm-up (with first_call, paid when the worker started)
                    self._run(
                        w,
                        "threads",
                        m,
                        key,
                        self.params(m, tc["dataset"]),
                        threads=1,
                        min_predict_s=0.0,
                        record=False,
                    )
                for t in tc["threads"]:
                    row = self._run(
                        w,
                        "threads",
                        m,
                        key,
                        self.params(m, tc["dataset"]),
                        threads=t,
                        min_predict_s=float(tc.get("predict_min_seconds", 0.2)),
                    )
                    if row["status"] == "ok":
                        self.log(
                            f"[threads] {m:16s} {t} threads: fit {row['fit_s']:.3f}s "
                            f"predict {row['predict_samples_per_s']:.0f}/s"
                        )
            finally:
                self.release(w)


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
    """Run the benchmark and write its outputs (see :func:`output_dir`).

    Returns the written files.
    """
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
    partial = bool(methods) and update and set(chosen) != set(allm)
    if partial and "main" in sections:
        raise ValueError(
            "--update --sections main re-measures every method: its ratios are against CART "
            "measured in the same run (drop --methods, or write elsewhere with --out)"
        )
    reps = int(repeats if repeats is not None else cfg.get("repeats", 3))
    cfg["datasets"] = {d: (cfg["datasets"].get(d) or {}) for d in dsets}
    meta = {
        "command": command,
        "repeats": reps,
        "load_start": _load(),
        "started": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        **_machine(),
    }
    aside = [s for s in PROCESS_SECTIONS if s in sections]
    if not cfg.get("overlap_processes") or len(aside) == len(sections):
        aside = []  # nothing to run beside
    bench = Bench(cfg, chosen, dsets, log=log, processes=aside)
    if bench.reuse_workers:
        bench.preload(sections)
    if update:
        _load_previous(bench, Path(out), sections, chosen if partial else None)
    previous_runs = dict(bench.runs)
    t0 = time.perf_counter()
    steps = {
        "main": lambda: bench.main(reps),
        "inference": bench.inference,
        "threads": bench.threading,
        "scaling": bench.scaling,
        "small": bench.small,
        "store": bench.store,
        "startup": bench.startup,
    }
    files = {}
    for name in SECTIONS:
        if name not in sections:
            continue
        started, load0 = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), _load()
        t_section = time.perf_counter()
        try:
            steps[name]()
        except BaseException:
            bench.close()  # workers kept for the next section (reuse_workers) end with the run
            raise
        log(f"section {name} done in {time.perf_counter() - t_section:.0f} s")
        bench.runs[name] = {
            "command": command,
            "started": started,
            "finished": _dt.datetime.now(_dt.UTC).strftime("%H:%M UTC"),
            "load_start": load0,
            "load_end": _load(),
            "repeats": reps,
            "git_sha": meta["git_sha"],
            **bench.aside_runs.get(name, {}),
        }
        if partial and name in previous_runs:  # the other methods' rows are the earlier run's
            bench.runs[name].update(methods=", ".join(chosen), others_from=previous_runs[name])
        meta.update(load_end=_load(), finished=_dt.datetime.now(_dt.UTC).strftime("%H:%M UTC"))
        if cfg.get("partial_writes", True):  # after every section: partial results kept
            files = write_outputs(bench, Path(out), meta)
    bench.close()
    if not files:
        files = write_outputs(bench, Path(out), meta)
    log(f"bench done in {time.perf_counter() - t0:.0f} s; wrote {files['md']}")
    return files


def _raw_section(sec: str) -> str:
    if sec.startswith(("scaling", "small")):
        return sec.split("_")[0]
    return sec.replace("_profile", "")


def _load_previous(
    bench: Bench, out: Path, sections: list[str], methods: list[str] | None = None
) -> None:
    """Keep the rows, run records and profiles of the sections not re-run (``--update``).

    With ``methods`` (a re-run of some methods only), also the other methods' rows of the re-run
    sections (each method's rows there are measured on their own) and those sections' earlier run
    records (the new run says which methods it re-ran, :func:`run`).
    """
    d = out / "docs" / "bench"
    if (d / "bench_raw.csv").exists():
        old = pd.read_csv(d / "bench_raw.csv")
        redone = old["section"].map(_raw_section).isin(sections)
        if methods is not None:
            redone &= old["method"].isin(methods)
        old = old[~redone]
        old = old.astype(object).where(old.notna(), None)
        bench.rows.extend(old.to_dict("records"))
        for m in old["method"].unique():  # their expected slopes and caps, for the tables
            bench.settings.setdefault(m, method_profile(m, bench.cfg))
    if (d / "runs.json").exists():
        prev = json.loads((d / "runs.json").read_text())
        bench.runs.update({k: v for k, v in prev.items() if k not in sections or methods})
    if "store" not in sections and (d / "store.csv").exists():
        old = pd.read_csv(d / "store.csv")
        bench.store_rows = old.astype(object).where(old.notna(), None).to_dict("records")
    if "startup" not in sections and (d / "startup.csv").exists():
        old = pd.read_csv(d / "startup.csv", keep_default_na=False, na_values=[""])
        old["heavy_imports"] = old["heavy_imports"].fillna("")
        bench.startup_rows = old.astype(object).where(old.notna(), None).to_dict("records")
    if "inference" not in sections and (d / "profiles.json").exists():
        bench.profiles.update(json.loads((d / "profiles.json").read_text()))


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


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
