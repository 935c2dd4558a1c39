"""The ``startup`` bench section (issues #24, #26): process start to first useful work.

``treebench --help``, ``treebench list``, ``treebench status`` and ``treebench run method=cart
dataset=iris`` are each run as a separate process (``python -m treebench.cli``, interpreter start-up
and imports included) several times; the section reports the minimum wall seconds (the run least
disturbed by the other users of a shared machine), the minimum CPU seconds of the process (user +
system, from ``os.wait4``) and which heavy libraries the process imported (read from its
``sys.modules`` at exit), against the target of 1 s per command.

Every run gets an empty outputs directory and no ledger (``TREEBENCH_LEDGER=off``), so ``status``
reads an empty store and the CART run fits (a finished run would be skipped).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from treebench.bench.store import run_child

#: columns of ``docs/bench/startup.csv``
STARTUP_COLUMNS = [
    "command",
    "runs",
    "wall_s_min",
    "wall_s_median",
    "cpu_s_min",
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
_CHILD = """
import atexit, os, runpy, sys
def _modules():
    heavy = os.environ["TREEBENCH_BENCH_HEAVY"].split(",")
    with open(os.environ["TREEBENCH_BENCH_MODULES"], "w") as f:
        f.write(",".join(m for m in heavy if m in sys.modules))
atexit.register(_modules)
sys.argv = ["treebench", *sys.argv[1:]]
runpy.run_module("treebench.cli", run_name="__main__")
"""


def time_startup(args: list[str], timeout: float = 120) -> dict:
    """One run of ``python -m treebench.cli *args`` in a fresh outputs directory.

    Parameters
    ----------
    args : list of str
        The command line after ``treebench``.
    timeout : float
        Wall seconds before the process is killed.

    Returns
    -------
    dict
        ``wall_s``, ``cpu_s`` (user + system of the process), ``returncode``, ``heavy_imports``
        (the :data:`HEAVY` modules imported, comma-separated, ``?`` when the child did not say)
        and ``stderr`` (its last 500 characters).
    """
    with tempfile.TemporaryDirectory(prefix="treebench-startup-") as tmp:
        out = Path(tmp)
        mods = out / ".modules"
        env = {
            **os.environ,
            "TREEBENCH_OUTPUTS": str(out),
            "TREEBENCH_LEDGER": "off",
            "TREEBENCH_BENCH_MODULES": str(mods),
            "TREEBENCH_BENCH_HEAVY": ",".join(HEAVY),
        }
        env.setdefault("COLUMNS", "200")
        # polled every 2 ms: small against the ~1 s measured
        wall, status, usage, tail = run_child(_CHILD, args, env, out, timeout, poll=0.002)
        try:
            heavy = mods.read_text()
        except OSError:  # killed before its exit hook ran
            heavy = "?"
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "returncode": os.waitstatus_to_exitcode(status),
        "heavy_imports": heavy,
        "stderr": tail,
    }


def run_startup_section(cfg: dict, log=print) -> list[dict]:
    """Every command of ``cfg['startup']['commands']`` run ``repeats`` times, interleaved (one run
    of each command per round, so that a burst of load hits all commands alike).

    Returns
    -------
    list of dict
        One row per command with :data:`STARTUP_COLUMNS`.
    """
    sc = cfg.get("startup") or {}
    repeats = max(1, int(sc.get("repeats", 5)))
    target = float(sc.get("target_seconds", 1.0))
    timeout = float(sc.get("timeout", 120))
    commands = {c: COMMANDS[c] for c in sc.get("commands") or COMMANDS}
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
        row = {
            "command": f"treebench {name}",
            "runs": len(runs),
            "wall_s_min": best,
            "wall_s_median": walls[len(walls) // 2],
            "cpu_s_min": min(r["cpu_s"] for r in runs),
            "returncode": max(r["returncode"] for r in runs),
            "heavy_imports": runs[-1]["heavy_imports"],
            "target_s": target,
            "meets_target": best <= target,
        }
        rows.append(row)
        log(
            f"startup: {name:14s} wall min {best:.2f} s, CPU min {row['cpu_s_min']:.2f} s; "
            f"imports {row['heavy_imports'] or 'none of ' + ', '.join(HEAVY)}"
        )
    return rows


def startup_frame(rows: list[dict]):
    """The section's rows as a DataFrame with :data:`STARTUP_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(rows, columns=STARTUP_COLUMNS)
