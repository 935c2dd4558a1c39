"""The ``startup`` bench section: process start to first useful work.

``treebench --help``, ``treebench list``, ``treebench status`` and ``treebench run method=cart
dataset=iris`` are each run as a separate process (``python -m treebench.cli``, interpreter start-up
and imports included) several times; the section reports the minimum wall seconds (the run least
disturbed by the other users of a shared machine), the minimum CPU seconds of the process (user +
system, from ``os.wait4``) and which heavy libraries the process imported (read from its
``sys.modules`` at exit), against the target of 1 s per command. For ``run`` the first useful work
is the fit: the seconds (wall and the process's CPU) from the process's start to the moment the
job's estimator's ``fit`` is called are reported too, and the target applies to them. A yardstick,
``python -c "import sklearn.tree"`` (the import CART cannot do without), is timed in the same
rounds: the floor of a CART run on this machine.

Every run gets an empty outputs directory and no ledger (``TREEBENCH_LEDGER=off``), so ``status``
reads an empty store and the CART run fits (a finished run would be skipped).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from treebench.bench.store import run_child

#: columns of ``docs/bench/startup.csv``
STARTUP_COLUMNS = [
    "command",
    "runs",
    "wall_s_min",
    "wall_s_median",
    "cpu_s_min",
    "first_work_wall_s_min",
    "first_work_cpu_s_min",
    "returncode",
    "heavy_imports",
    "target_s",
    "meets_target",
]

#: the timed commands (arguments after ``treebench``)
COMMANDS = {
    "--help": ["--help"],
    "list": ["list"],
    "status": ["status"],
    "run cart iris": ["run", "method=cart", "dataset=iris"],
}

#: the yardstick: scikit-learn's import alone (a CART run cannot start its fit before it)
FLOOR = "python -c 'import sklearn.tree'"

#: libraries whose import the section reports (seconds each at startup on the shared machine)
HEAVY = (
    "torch",
    "numba",
    "matplotlib",
    "openml",
    "scipy.stats",
    "sklearn",
    "pandas",
    "pyarrow",
    "hydra",
)

#: runs the CLI in the child and writes the heavy modules it imported to $TREEBENCH_BENCH_MODULES
#: and, once ``treebench.runner`` is loaded, stamps the first ``fit`` of an estimator the runner
#: builds (``time.monotonic()`` and the process's CPU seconds) in $TREEBENCH_BENCH_FIRST
_CHILD = """
import atexit, importlib.abc, importlib.util, os, runpy, sys, time
def _modules():
    heavy = os.environ["TREEBENCH_BENCH_HEAVY"].split(",")
    with open(os.environ["TREEBENCH_BENCH_MODULES"], "w") as f:
        f.write(",".join(m for m in heavy if m in sys.modules))
atexit.register(_modules)
def _stamp():
    mono, cpu = time.monotonic(), time.process_time()
    path = os.environ["TREEBENCH_BENCH_FIRST"]
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(f"{mono!r} {cpu!r}")
def _wrap_fit(est):
    fit = est.fit
    def first_fit(*args, **kwargs):
        _stamp()
        return fit(*args, **kwargs)
    est.fit = first_fit
    return est
class _Runner(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "treebench.runner":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module
        def run(module):
            exec_module(module)
            build = module.build_estimator
            module.build_estimator = lambda *a, **k: _wrap_fit(build(*a, **k))
        spec.loader.exec_module = run
        return spec
sys.meta_path.insert(0, _Runner())
sys.argv = ["treebench", *sys.argv[1:]]
runpy.run_module("treebench.cli", run_name="__main__")
"""

#: the yardstick's child: the same report of heavy modules, then the one import
_FLOOR_CHILD = _CHILD.split("sys.meta_path.insert")[0] + "import sklearn.tree\n"


def time_startup(args: list[str] | None, timeout: float = 120) -> dict:
    """One run of ``python -m treebench.cli *args`` in a fresh outputs directory.

    Parameters
    ----------
    args : list of str or None
        The command line after ``treebench``; None runs the yardstick :data:`FLOOR` instead.
    timeout : float
        Wall seconds before the process is killed.

    Returns
    -------
    dict
        ``wall_s``, ``cpu_s`` (user + system of the process), ``first_work_wall_s`` and
        ``first_work_cpu_s`` (from the process's start to the first ``fit`` of an estimator the
        runner built; None when nothing was fitted), ``returncode``, ``heavy_imports`` (the
        :data:`HEAVY` modules imported, comma-separated, ``?`` when the child did not say) and
        ``stderr`` (its last 500 characters).
    """
    with tempfile.TemporaryDirectory(prefix="treebench-startup-") as tmp:
        out = Path(tmp)
        mods, first = out / ".modules", out / ".first_work"
        env = {
            **os.environ,
            "TREEBENCH_OUTPUTS": str(out),
            "TREEBENCH_LEDGER": "off",
            "TREEBENCH_BENCH_MODULES": str(mods),
            "TREEBENCH_BENCH_HEAVY": ",".join(HEAVY),
            "TREEBENCH_BENCH_FIRST": str(first),
        }
        env.setdefault("COLUMNS", "200")
        code = _FLOOR_CHILD if args is None else _CHILD
        t0 = time.monotonic()  # the child's stamp is on the same (system-wide) clock
        # polled every 2 ms: small against the ~1 s measured
        wall, status, usage, tail = run_child(code, args or [], env, out, timeout, poll=0.002)
        try:
            heavy = mods.read_text()
        except OSError:  # killed before its exit hook ran
            heavy = "?"
        try:
            mono, cpu = (float(v) for v in first.read_text().split())
            first_wall, first_cpu = mono - t0, cpu
        except (OSError, ValueError):  # nothing fitted
            first_wall = first_cpu = None
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "first_work_wall_s": first_wall,
        "first_work_cpu_s": first_cpu,
        "returncode": os.waitstatus_to_exitcode(status),
        "heavy_imports": heavy,
        "stderr": tail,
    }


def run_startup_section(cfg: dict, log=print) -> list[dict]:
    """Run every command of ``cfg['startup']['commands']`` ``repeats`` times, interleaved.

    One run of each command per round, so that a burst of load hits all commands alike, with the
    yardstick :data:`FLOOR` in every round unless ``floor: false``.

    Returns
    -------
    list of dict
        One row per command (the yardstick last) with :data:`STARTUP_COLUMNS`; ``meets_target``
        judges the seconds to the first fit where there is one, else the whole process.
    """
    sc = cfg.get("startup") or {}
    repeats = max(1, int(sc.get("repeats", 5)))
    target = float(sc.get("target_seconds", 1.0))
    timeout = float(sc.get("timeout", 120))
    commands: dict[str, list[str] | None] = {c: COMMANDS[c] for c in sc.get("commands") or COMMANDS}
    if sc.get("floor", True):
        commands[FLOOR] = None
    results: dict[str, list[dict]] = {c: [] for c in commands}
    for _ in range(repeats):
        for name, args in commands.items():
            res = time_startup(args, timeout)
            if res["returncode"] != 0:
                log(f"  {name} exited {res['returncode']}: {res['stderr']}")
            results[name].append(res)
    rows = []
    for name, runs in results.items():
        walls = sorted(r["wall_s"] for r in runs)
        best = min(walls)
        first_wall = [r["first_work_wall_s"] for r in runs if r["first_work_wall_s"] is not None]
        first_cpu = [r["first_work_cpu_s"] for r in runs if r["first_work_cpu_s"] is not None]
        row = {
            "command": name if commands[name] is None else f"treebench {name}",
            "runs": len(runs),
            "wall_s_min": best,
            "wall_s_median": walls[len(walls) // 2],
            "cpu_s_min": min(r["cpu_s"] for r in runs),
            "first_work_wall_s_min": min(first_wall) if first_wall else None,
            "first_work_cpu_s_min": min(first_cpu) if first_cpu else None,
            "returncode": max(r["returncode"] for r in runs),
            "heavy_imports": runs[-1]["heavy_imports"],
            "target_s": target,
            "meets_target": (min(first_wall) if first_wall else best) <= target,
        }
        rows.append(row)
        fit = (
            f", first fit at {min(first_wall):.2f} s (CPU {min(first_cpu):.2f} s)"
            if first_wall
            else ""
        )
        log(
            f"startup: {name:14s} wall min {best:.2f} s, CPU min {row['cpu_s_min']:.2f} s{fit}; "
            f"imports {row['heavy_imports'] or 'none of ' + ', '.join(HEAVY)}"
        )
    return rows


def startup_frame(rows: list[dict]):
    """Return the section's rows as a DataFrame with :data:`STARTUP_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(rows, columns=STARTUP_COLUMNS)
