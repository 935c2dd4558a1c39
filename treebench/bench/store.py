"""The ``store`` bench section.

``treebench status``, ``collect`` and ``check`` against synthetic result stores of growing size,
each command a separate process, cold (no row cache ``<store>/.rows.parquet``) and warm (cache
present): wall seconds and peak RSS. In the largest store, ``plan``: a sweep of ``plan_jobs`` jobs
whose records are all there, planned and skipped (nothing to launch), the sweep-scale target.

A synthetic store clones the committed ledger's records with fresh keys (a few ``failed`` records
and ``also_experiments`` labels, so those paths run too), written as
:meth:`treebench.results.store.Store.write` writes them; without a ledger, synthetic records.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: columns of ``docs/bench/store.csv``
STORE_COLUMNS = [
    "records",
    "command",
    "cache",
    "wall_s",
    "peak_rss_mb",
    "returncode",
    "target_s",
    "meets_target",
]

#: the timed commands (arguments after ``treebench``)
COMMANDS = {
    "status": ["status"],
    "collect": ["collect"],
    "check": ["check", "--experiment", "ci"],
}


def _ledger_records() -> list[dict]:
    """Return the committed ledger's records (none when there is no ledger)."""
    from treebench.results.ledger import open_ledger

    try:
        led = open_ledger()
        return list(led.records()) if led is not None else []
    except (OSError, ValueError):  # pragma: no cover - depends on the checkout
        return []


#: the sweep timed by ``plan``: CART on iris over max_depth x seed (``plan_jobs`` = depths x seeds)
PLAN_SWEEP = ["method=cart", "dataset=iris"]


def _plan_grid(n_jobs: int) -> tuple[int, int]:
    depths = max(1, int(round(n_jobs**0.5)))
    return depths, max(1, n_jobs // depths)


def plan_args(n_jobs: int) -> list[str]:
    """``treebench run`` arguments of the ``plan`` sweep (``n_jobs`` jobs, rounded to a grid)."""
    depths, seeds = _plan_grid(n_jobs)
    return [
        "run",
        "-m",
        *PLAN_SWEEP,
        f"method.params.max_depth=range(1,{depths + 1})",
        f"seed=range(0,{seeds})",
    ]


def add_sweep_records(root: str | Path, n_jobs: int) -> int:
    """Write a done record for every run of the ``plan`` sweep under ``root``; return their count.

    The records are keyed as the sweep plans them (one composition, each job's ``max_depth`` and
    ``seed`` set).
    """
    from treebench.config import compose
    from treebench.runner import job_keys

    depths, seeds = _plan_grid(n_jobs)
    cfg = compose(PLAN_SWEEP)
    n = 0
    for depth in range(1, depths + 1):
        for seed in range(seeds):
            cfg.method.params.max_depth = depth
            cfg.seed = seed
            for key in job_keys(cfg):
                rec = {**_synthetic_record(0), "dataset": "iris", "method": "cart"}
                rec.update(key=key, seed=seed, fold=0, experiment="adhoc")
                d = Path(root) / key[:2]
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{key}.json").write_text(json.dumps(rec, sort_keys=True))
                n += 1
    return n


def _synthetic_record(i: int) -> dict:
    """Return a plausible ``ci`` record when no ledger exists."""
    return {
        "dataset": ("iris", "wine", "breast_cancer")[i % 3],
        "experiment": "ci",
        "fold": i % 5,
        "method": ("cart", "rf")[i % 2],
        "metrics": {"test_accuracy": 0.9 + 0.01 * (i % 7), "train_accuracy": 1.0},
        "seed": i % 10,
        "status": "ok",
        "task": "classification",
        "fit_seconds": 0.01,
    }


def make_store(root: str | Path, n: int, base: list[dict] | None = None, seed: int = 0) -> Path:
    """Write ``n`` records under ``root`` (``<key[:2]>/<key>.json``).

    Clones of ``base`` (default: the ledger's records) with fresh keys; every 50th record
    ``failed``, every 20th with an ``also_experiments`` label.
    """
    root = Path(root)
    base = _ledger_records() if base is None else base
    rng = np.random.default_rng(seed)
    for i in range(n):
        rec = dict(base[i % len(base)]) if base else _synthetic_record(i)
        rec["seed"] = 1000 + i // max(len(base), 1)
        key = hashlib.sha256(f"{seed}-{i}".encode()).hexdigest()[:24]
        rec["key"] = key
        if i % 50 == 7:
            rec["status"] = "failed"
            rec["error"] = "RuntimeError: synthetic failure (bench)"
            rec.pop("metrics", None)
        if i % 20 == 3:
            extra = ["store_bench", str(rng.choice(["ci", "onestage_table2", "tnt_table1"]))]
            rec["also_experiments"] = sorted(
                set(rec.get("also_experiments") or []) | set(extra) - {rec.get("experiment")}
            )
        d = root / key[:2]
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"{key}.json", "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True, default=str)
    return root


#: runs the CLI in the child and writes its own peak RSS (``VmHWM``, kB) to $TREEBENCH_BENCH_RSS at
#: exit: the child's ``ru_maxrss`` would include the parent's RSS at the fork (Linux keeps the
#: high-water mark across ``exec``), while ``VmHWM`` belongs to the new process image alone
_CHILD = """
import atexit, os, runpy, sys
def _hwm():
    try:
        with open("/proc/self/status") as f:
            kb = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
        with open(os.environ["TREEBENCH_BENCH_RSS"], "w") as f:
            f.write(str(kb))
    except (OSError, StopIteration, KeyError):
        pass
atexit.register(_hwm)
sys.argv = ["treebench", *sys.argv[1:]]
runpy.run_module("treebench.cli", run_name="__main__")
"""


def run_child(code: str, args: list[str], env: dict, cwd, timeout: float, poll: float = 0.01):
    """Run ``python -c code *args`` (stdout discarded) until it exits or ``timeout`` wall s pass.

    Killed at the timeout; reaped with ``os.wait4`` for its own resource usage.

    Returns
    -------
    tuple
        (wall seconds, wait status, ``rusage`` of the child, the last 500 characters of stderr)
    """
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
        )
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(poll)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        err.seek(0)
        return wall, status, usage, err.read().decode(errors="replace")[-500:]


def time_command(args: list[str], outputs: Path, timeout: float) -> dict:
    """Run ``python -m treebench.cli *args`` with ``TREEBENCH_OUTPUTS=outputs`` and no ledger.

    Wall seconds, peak RSS (MB, of that process alone: its ``VmHWM``, else ``os.wait4``'s
    ``ru_maxrss``) and the exit code.
    """
    rss_file = Path(outputs) / ".peak_rss_kb"
    rss_file.unlink(missing_ok=True)
    env = {
        **os.environ,
        "TREEBENCH_OUTPUTS": str(outputs),
        "TREEBENCH_LEDGER": "off",
        "TREEBENCH_BENCH_RSS": str(rss_file),
    }
    env.setdefault("COLUMNS", "200")
    wall, status, usage, tail = run_child(_CHILD, args, env, outputs, timeout)
    returncode = os.waitstatus_to_exitcode(status)
    try:
        rss = int(rss_file.read_text()) / 2**10
    except (OSError, ValueError):  # no /proc (macOS) or killed: ru_maxrss (kB on Linux, B on macOS)
        rss = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    return {"wall_s": wall, "peak_rss_mb": rss, "returncode": returncode, "stderr": tail}


def run_store_section(cfg: dict, log=print) -> list[dict]:
    """For every size of ``cfg['store']['sizes']``.

    A synthetic store in a temp dir, each command timed cold then warm. Returns rows with
    :data:`STORE_COLUMNS`.
    """
    sc = cfg.get("store") or {}
    sizes = [int(s) for s in sc.get("sizes", [1000, 10000, 100000])]
    target = float(sc.get("target_seconds", 10))
    target_n = int(sc.get("target_records", 100000))
    timeout = float(sc.get("timeout", cfg.get("timeout", 900)))
    commands = {c: COMMANDS[c] for c in sc.get("commands") or COMMANDS}
    base = _ledger_records()
    log(f"[store] {len(base)} ledger records as templates" if base else "[store] no ledger")
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="treebench-store-") as tmp:
            out = Path(tmp)
            t0 = time.perf_counter()
            make_store(out / "store", n, base, int(cfg.get("seed", 0)))
            log(f"[store] {n} records written in {time.perf_counter() - t0:.1f} s")
            timed = dict(commands)
            plan_jobs = int(sc.get("plan_jobs", 10000)) if n == max(sizes) else 0
            if plan_jobs:
                add_sweep_records(out / "store", plan_jobs)
                timed["plan"] = plan_args(plan_jobs)
            cache = out / "store" / ".rows.parquet"
            for cache_state in ("cold", "warm"):
                for name, args in timed.items():
                    goal = float(sc.get("plan_target_seconds", 30)) if name == "plan" else target
                    if name == "plan" and cache_state == "warm":
                        continue  # the sweep reads no row cache: timed once
                    if cache_state == "cold":
                        cache.unlink(missing_ok=True)
                    elif not cache.exists():  # warm: the cache a first run leaves
                        time_command(COMMANDS["status"], out, timeout)
                    res = time_command(args, out, timeout)
                    ok = res["returncode"] == 0
                    if not ok and res["returncode"] != 1:  # 1: the command's own verdict
                        log(f"  {name} exited {res['returncode']}: {res['stderr']}")
                    rows.append(
                        {
                            "records": n,
                            "command": name,
                            "cache": cache_state,
                            "wall_s": res["wall_s"],
                            "peak_rss_mb": res["peak_rss_mb"],
                            "returncode": res["returncode"],
                            "target_s": goal if n >= target_n or name == "plan" else None,
                            "meets_target": (
                                (res["wall_s"] <= goal) if n >= target_n or name == "plan" else None
                            ),
                        }
                    )
                    log(
                        f"[store] {n:>7d} {name:8s} {cache_state}: {res['wall_s']:.2f} s, "
                        f"{res['peak_rss_mb']:.0f} MB (exit {res['returncode']})"
                    )
    return rows


def store_frame(rows: list[dict]) -> pd.DataFrame:
    """Return the store section's rows as a DataFrame with :data:`STORE_COLUMNS`."""
    return pd.DataFrame(rows, columns=STORE_COLUMNS)
