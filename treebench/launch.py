"""``treebench run`` once its arguments are checked.

The Hydra task under a stop handler, so that a Ctrl-C or a stopped sweep ends in one line saying how
many records were kept.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from treebench.term import make_console

err = make_console(stderr=True)


def store_dir(args: list[str]) -> Path:
    """Return the store a ``run`` writes to: its ``paths.*`` overrides or ``$TREEBENCH_OUTPUTS``."""
    opts = dict(a.lstrip("+").split("=", 1) for a in args if "=" in a)
    if "paths.store" in opts:
        return Path(opts["paths.store"])
    return Path(opts.get("paths.outputs") or os.environ["TREEBENCH_OUTPUTS"]) / "store"


def launch(args: list[str]) -> int:
    """Run the Hydra task with ``args`` (Hydra's own argument list).

    Return the exit status (0, or that of an interrupt or a stopped sweep, after its one line on
    stderr).
    """
    from treebench.results.status import records_since

    os.environ.setdefault("TREEBENCH_OUTPUTS", str(Path("outputs").resolve()))
    started = time.time()
    sys.argv = ["treebench run", *args]
    from treebench import faults

    faults.terminate_on_sigterm()  # SIGTERM stops the sweep as Ctrl-C does
    try:  # from the imports on: a Ctrl-C while they load gets the same one line
        from treebench import app as task
        from treebench.lifeline import mark_driver

        mark_driver()  # sweep workers die with this process
        task.main()
    except (KeyboardInterrupt, faults.SweepStopped) as exc:
        store = store_dir(args)
        faults.clean_stale_temps(store)  # what the stopped workers left
        n = records_since(store, started)
        kept = f"{n} record" + ("" if n == 1 else "s")
        what = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
        err.print(f"{what}; {kept} kept, rerun to resume", highlight=False, soft_wrap=True)
        return getattr(exc, "exit_code", 130)
    finally:  # a run that ended before its work began (--cfg, an error) leaves no paused collector
        from treebench import gcpause

        gcpause.resume()
    return 0
