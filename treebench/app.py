"""The Hydra task behind ``treebench run``.

Resolve the job, skip stored folds, run, store, summarise.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from treebench import gcpause
from treebench.config import CONF_DIR
from treebench.schema import TreebenchConf, register_schema

register_schema()


def _abspath(p: str) -> Path:
    path = Path(p).expanduser()
    if not path.is_absolute():
        try:
            path = Path(HydraConfig.get().runtime.cwd) / path
        except ValueError:  # outside a Hydra run
            path = Path.cwd() / path
    return path


def open_store(cfg: DictConfig):
    """Return the job store of ``cfg``, over the committed ledger when its keys count as done.

    ``ledger=null`` (the default): for an experiment's jobs, whose paper runs are committed; an
    ad-hoc run (the default ``experiment_name``) fits here. ``true`` / ``false`` force it.
    """
    from treebench.results.ledger import open_ledger
    from treebench.results.store import Store

    use = cfg.get("ledger")
    if use is None:
        use = cfg.get("experiment_name") != TreebenchConf.experiment_name
    return Store(_abspath(cfg.paths.store), open_ledger() if use else None)


def _launcher_parallelism() -> int:
    try:
        hc = HydraConfig.get()
    except ValueError:
        return 1
    if hc.mode is None or str(hc.mode) != "RunMode.MULTIRUN":
        return 1
    n = hc.launcher.get("n_jobs")
    if n is None:
        return 1
    return os.cpu_count() or 1 if int(n) < 0 else int(n)


def _job_log(msg: str) -> None:
    """Write a job's status line.

    On the console and, through Hydra's logging, in the job's log file.
    """
    sys.stdout.write(msg + "\n")  # one write: parallel workers' lines never run together
    sys.stdout.flush()
    logging.getLogger("treebench").info(msg)


def run_task(cfg: DictConfig) -> list[dict[str, Any]]:
    """Run one Hydra job; return the records written (empty when every fold was already done)."""
    from treebench.data import DataContext
    from treebench.faults import clean_stale_temps, terminate_on_sigterm
    from treebench.files import check_outputs
    from treebench.lifeline import watch_parent
    from treebench.params import check_params
    from treebench.results.console import print_records
    from treebench.runner import job_keys, run_job

    watch_parent()  # in a joblib worker: die with the sweep's driver
    terminate_on_sigterm()  # a worker told to stop unwinds: no write is left half done
    check_params(cfg)  # before any data loads or record is written
    check_outputs(_abspath(cfg.paths.store), "store")
    store = open_store(cfg)
    ctx = DataContext(
        data_dir=_abspath(cfg.paths.data), mirror=cfg.data.mirror, allow_fetch=bool(cfg.data.fetch)
    )
    try:
        single = str(HydraConfig.get().mode) != "RunMode.MULTIRUN"
    except ValueError:
        single = True
    if single:
        clean_stale_temps(store.root)  # what a killed process left (a sweep's driver does it)
    if single and not all(store.is_done(k) for k in job_keys(cfg)):
        from treebench.data.fetch import require_files

        require_files(cfg.dataset, ctx)  # a run without its data would only write a failed record
    gcpause.resume()  # the job's work begins: the collector paused for ``run``'s startup runs again
    with _fit_progress(cfg, single):
        records = run_job(cfg, store, ctx, log=_job_log, parallel=_launcher_parallelism())
    keys = job_keys(cfg)
    try:  # the sweep summary reads the keys of every job from its output dir
        out = Path(HydraConfig.get().runtime.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / ".keys.json.tmp"  # written then renamed: the progress thread reads it meanwhile
        tmp.write_text(json.dumps(keys))
        os.replace(tmp, out / "keys.json")
    except ValueError:
        pass
    if single and records:
        print_records(records)
        if cfg.get("experiment_name", "adhoc") == "adhoc" and records[0].get("status") == "ok":
            _print_paper_setting(records[0])  # not a paper's protocol: say where it is
    return records


@contextmanager
def _fit_progress(cfg: DictConfig, single: bool):
    """Show the progress a single run's method reports (a sweep has its own bar)."""
    if not single:
        yield
        return
    from treebench.methods.progress import reporting
    from treebench.progress import FitProgress

    with FitProgress(f"[{cfg.method.name} | {cfg.dataset.name}]") as bar, reporting(bar):
        yield


def _print_paper_setting(rec: dict) -> None:
    from treebench.report.mentions import papers_naming

    try:  # only the paper files naming both (validating all of them costs ~0.1 s of every run)
        paths = papers_naming(rec["method"], rec["dataset"], exclude=("ci",))
        if not paths:
            return
        from treebench.report.targets import TargetError, load_paper, paper_setting

        try:
            line = paper_setting(rec["method"], rec["dataset"], [load_paper(p) for p in paths])
        except TargetError:
            return
    except OSError:  # a broken paper file must not hide the run's result
        return
    if line:
        print(line, flush=True)


def sweep_failures(sweep_dir: Path, store) -> int:
    """Count the sweep's runs (the keys its jobs wrote to ``keys.json``) with a failed record."""
    keys: dict[str, None] = {}
    for p in sorted(sweep_dir.glob("*/keys.json")):
        try:
            keys.update(dict.fromkeys(json.loads(p.read_text())))
        except (OSError, ValueError):
            continue
    return sum(1 for k in keys if (store.get(k) or {}).get("status") == "failed")


class SweepSummary(Callback):
    """At the end of a multirun.

    A table of every job's records, printed and written to the sweep dir.

    A sweep with failed runs then exits with status 1 (the other jobs have finished), so that CI
    and cluster scripts see it.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before the sweep is planned (configs composed for every job).

        The collector paused for ``run``'s startup runs again (:mod:`treebench.gcpause`).
        """
        gcpause.resume()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Print the sweep's summary once every job has ended (not for a dry run)."""
        from treebench.report.console import summarize_sweep

        if config.hydra.sweeper.get("dry_run"):
            return
        store = open_store(config)
        sweep_dir = _abspath(config.hydra.sweep.dir)
        summarize_sweep(sweep_dir, store.root, store.ledger)
        n_failed = sweep_failures(sweep_dir, store)
        if n_failed:
            print(
                f"{n_failed} run(s) of this sweep failed; `treebench status` shows why",
                file=sys.stderr,
            )
            sys.exit(1)


@hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Hydra entry point (``treebench run`` hands its arguments here)."""
    from treebench.data.base import DatasetUnavailableError
    from treebench.files import OutputsError
    from treebench.params import ParamError

    if cfg.get("suite") is not None and str(HydraConfig.get().mode) != "RunMode.MULTIRUN":
        print(
            f"error: suite={cfg.suite.name} is a list of datasets, run as a sweep: "
            f"treebench run -m suite={cfg.suite.name} ...",
            file=sys.stderr,
        )
        sys.exit(2)
    try:
        records = run_task(cfg)
    except (ParamError, OutputsError, DatasetUnavailableError) as exc:  # one message, no record
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if (
        any(r["status"] == "failed" for r in records)
        and str(HydraConfig.get().mode) != "RunMode.MULTIRUN"
    ):
        sys.exit(1)


if __name__ == "__main__":
    from treebench.lifeline import mark_driver

    mark_driver()
    main()
