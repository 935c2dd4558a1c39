"""A sweeper that skips finished jobs before launching and crosses explicit rows with params.

It also plans: the dry run, the cost estimate and the data check before any job starts.
"""

import itertools
import json
import logging
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional  # noqa: UP035 - plugin modules load without __future__

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

log = logging.getLogger(__name__)
_ABSENT = object()  # a key a job's override adds (removed again after the job is planned)

# launchers that list every job (and their joblib settings) at INFO; shown only at -v
_LISTING_LOGGERS = (
    "hydra_plugins.hydra_joblib_launcher._core",
    "hydra_plugins.treebench_sweeper.slurm_launcher",
)
_LISTING_PREFIXES = ("\t#", "Joblib.Parallel(", "Launching jobs, sweep output dir")


class _JobListingFilter(logging.Filter):
    """Drop a launcher's per-job listing unless its logger is verbose (``treebench run -v``).

    The sweeper prints one summary line (jobs, done, to launch, sweep dir) instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return True
        return not str(record.msg).startswith(_LISTING_PREFIXES)


def _quiet_job_listing() -> None:
    for name in _LISTING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _JobListingFilter) for f in logger.filters):
            logger.addFilter(_JobListingFilter())


@dataclass
class TreebenchSweeperConf:
    """Config of the ``treebench`` sweeper: Hydra's basic sweeper settings plus its plan options."""

    _target_: str = "hydra_plugins.treebench_sweeper.sweeper.TreebenchSweeper"
    max_batch_size: Optional[int] = None  # noqa: UP045
    params: Optional[Dict[str, str]] = None  # noqa: UP006, UP045
    dry_run: bool = False  # list the jobs and whether each is done; launch nothing
    # the jobs a dry run lists (a larger plan: a summary per method and its first jobs); null: all
    plan_rows: Optional[int] = 20  # noqa: UP045
    # explicit jobs, each a string of overrides (``a,b`` values expand to one job each), crossed
    # with ``params``; or named lists of rows ({datasets: [...], methods: [...]}), crossed
    rows: Optional[Any] = None  # noqa: UP045
    # the plan of ``profile=reduced``: {params: ..., rows: ...} replacing the two above
    reduced: Optional[Dict[str, Any]] = None  # noqa: UP006, UP045
    # keys whose values change slowest, e.g. [seed, dataset]: jobs run in that order (each value in
    # the order it first appears), so a sweep stopped part-way has whole cells; default: as planned
    order: Optional[List[str]] = None  # noqa: UP006, UP045


ConfigStore.instance().store(
    group="hydra/sweeper", name="treebench", node=TreebenchSweeperConf, provider="treebench"
)


def _planning(jobs: list):
    """Yield the jobs one by one, showing the progress of planning them on stderr.

    A bar with an ETA on a terminal, else a line every 10 s once it takes longer: a sweep of
    thousands of jobs plans for a minute.
    """
    from treebench.progress import FitProgress

    with FitProgress("sweep", every=10.0) as bar:
        for i, job in enumerate(jobs):
            bar("planning jobs", i, len(jobs))
            yield job
        bar("planning jobs", len(jobs), len(jobs))


def _shown(overrides: list[str]) -> str:
    """Return a job's overrides as typed.

    ``treebench run`` forces ``method.params.*`` with ``++``.
    """
    return " ".join(o[2:] if o.startswith("++method.params.") else o for o in overrides)


def _fail(messages) -> None:
    """Print planning errors (no job launched) on stderr and exit with status 2."""
    for msg in messages:
        print(f"error: {msg}", file=sys.stderr)
    print("no job launched", file=sys.stderr)
    sys.exit(2)


def _missing_note(
    nodata: dict[str, int], absent: dict[str, list[str]], fixes: dict[str, str]
) -> str:
    """Return the note on the jobs left out because their data is missing, per dataset.

    It gives the commands that fetch the data (the config names in one ``treebench fetch``, a
    loader's own command such as OpenML's apart).
    """
    if not nodata:
        return ""
    sets = "; ".join(
        f"{name}, {n} job{'s' if n > 1 else ''}: {', '.join(absent[name])}"
        for name, n in sorted(nodata.items())
    )
    by_name = [name for name in sorted(nodata) if fixes[name] == f"treebench fetch dataset={name}"]
    commands = [f"treebench fetch dataset={','.join(by_name)}"] if by_name else []
    commands += sorted({fixes[name] for name in nodata if name not in by_name})
    n = sum(nodata.values())
    return (
        f"{n} job{'s need' if n > 1 else ' needs'} data files that are in neither the cache nor "
        "the "
        f"mirror ({sets}); {' and '.join(f'`{c}`' for c in commands)} "
        f"download{'s' if len(commands) == 1 else ''} them"
    )


def _unseeded(overrides) -> tuple:
    """Return a job's overrides without its seeds: the jobs that differ only in seeds share this."""
    return tuple(o for o in overrides if not o.startswith(("seed=", "seeds=")))


def _undatasetted(overrides) -> tuple:
    """Return a job's overrides without those choosing its data.

    ``dataset``, ``dataset.*``, ``suite``.
    """
    return tuple(
        o
        for o in overrides
        if o.lstrip("+").split("=", 1)[0].split(".")[0] not in ("dataset", "suite")
    )


def _core_seconds(store, keys) -> list[float]:
    """Core-seconds of the done runs among ``keys``.

    :func:`treebench.results.table.core_seconds`.
    """
    import pandas as pd

    from treebench.results.table import core_seconds

    done = [
        r
        for r in map(store.get, keys)
        if r is not None and r.get("status") == "ok" and r.get("wall_seconds") is not None
    ]
    if not done:
        return []
    return core_seconds(pd.DataFrame(done)).tolist()


def _estimate(costs: dict, job, modelled: dict) -> float | None:
    """Core-seconds a job's runs still to do will take.

    The mean of the done runs of the jobs that differ from it only in seeds (itself included), times
    its runs not done; without any, the cost model's estimate of one run (``modelled``, from other
    datasets' runs) times them.
    """
    overrides, n, n_done, *_ = job
    done = costs.get(_unseeded(overrides))
    if n_done >= n:
        return None
    if done:
        return sum(done) / len(done) * (n - n_done)
    one = modelled.get(tuple(overrides))
    return None if one is None else one * (n - n_done)


def _train_rows(cfg) -> tuple[float | None, float | None]:
    """Return the (training rows, features) a job's dataset will give; None where unknown.

    From its declared shape and split: the rows left after the split's test and validation
    fractions.
    """
    shape = cfg.dataset.get("shape") or {}
    rows, feats = shape.get("n_samples"), shape.get("n_features")
    if not rows:
        return None, feats
    split = cfg.get("split") or cfg.dataset.get("split") or {}
    held = 0.0
    for key in ("test_size", "val_size"):
        v = split.get(key)
        held += v if isinstance(v, float) else (v or 0) / rows
    return rows * (1.0 - (held or 0.2)), feats


def _cost_model():
    """Return the cost model of the committed ledger's records (None with the ledger off)."""
    from treebench.results.cost import CostModel
    from treebench.results.ledger import open_ledger

    led = open_ledger()
    return None if led is None else CostModel.from_ledger(led)


def _expand_suites(jobs: list[list[str]]) -> list[list[str]]:
    """Expand each job with a ``suite=<name>`` override into one job per dataset the suite runs.

    The dataset's overrides come right after ``suite=``, in the suite's order; ``suite.subset=<n>``
    takes its first n. A job that also sets the dataset is an error (say which in one place).
    """
    from treebench.config import search_dirs
    from treebench.suites import SuiteError, load

    out = []
    for job in jobs:
        at = [i for i, o in enumerate(job) if o.lstrip("+").startswith("suite=")]
        if not at:
            out.append(job)
            continue
        i = at[0]
        clash = [o for o in job if o.lstrip("+").split("=", 1)[0] in ("dataset", "dataset.name")]
        if clash:
            raise SuiteError(
                f"{job[i]} and {' '.join(clash)} both choose datasets; give a suite or datasets"
            )
        suite = load(job[i].split("=", 1)[1], search_dirs(job))
        for o in job:  # ``suite.subset=3``: the suite's first 3 datasets (a slice to try it on)
            key, _, value = o.lstrip("+").partition("=")
            if key == "suite.subset":
                suite = suite.sliced(None if value in ("null", "None", "") else int(value))
        out += [job[: i + 1] + suite.overrides(n) + job[i + 1 :] for n in suite.members]
    return out


def _plain(node):
    """Return a config node as plain lists and dicts.

    The sweeper gets its settings as OmegaConf nodes.
    """
    return OmegaConf.to_container(node) if OmegaConf.is_config(node) else node


class TreebenchSweeper(BasicSweeper):
    """Cartesian-product sweeper (like Hydra's basic one) that never launches a finished job.

    Each job's config is composed before launch (so a typo fails before anything is submitted),
    its run keys are looked up in the store, and only jobs with unfinished keys are launched. The
    keys of skipped jobs are written to ``<sweep dir>/_done/keys.json`` for the sweep summary.
    A job whose runs a SLURM job of an earlier sweep still holds (queued or running, by its pending
    marker, see :mod:`treebench.slurm`) is not launched again; the SLURM launcher waits for it.
    With a submitit launcher, jobs are launched in groups that share the resources hinted by their
    method and dataset configs (``resources:``); a ``hydra.launcher.<key>=`` override wins over
    hints.
    """

    def __init__(
        self,
        max_batch_size: int | None = None,
        params: dict | None = None,
        dry_run: bool = False,
        plan_rows: int | None = TreebenchSweeperConf.plan_rows,
        rows: list | dict | None = None,
        reduced: dict | None = None,
        order: list | None = None,
    ) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.dry_run = dry_run
        self.plan_rows = plan_rows
        self.rows = _plain(rows) or []
        self.reduced = _plain(reduced)
        self.order = [str(k) for k in (_plain(order) or [])]

    def _use_profile(self) -> None:
        """Under ``profile=reduced``, take the ``reduced`` plan's params and rows, not the full."""
        from treebench.config import sweep_plan

        profile = self.config.get("profile") if self.config is not None else None
        if self.reduced is None:
            return
        plan = sweep_plan(
            {"params": self.params, "rows": self.rows, "reduced": self.reduced}, profile
        )
        self.params, self.rows, self.reduced = plan["params"], plan["rows"], None

    def _row_jobs(self, parser) -> list[tuple[str, list[str]]]:
        """(row text, overrides) of every job the rows give.

        A list of rows, each expanded; named lists of rows are crossed (one row of each list per
        job).
        """
        if isinstance(self.rows, dict):
            lists = [self._rows_of(list(rows), parser) for rows in self.rows.values()]
            return [
                (" ".join(r for r, _ in combo), [o for _, job in combo for o in job])
                for combo in itertools.product(*lists)
            ]
        return self._rows_of(list(self.rows), parser)

    def _rows_of(self, rows: list, parser) -> list[tuple[str, list[str]]]:
        out = []
        for row in rows:
            row_overrides = row.split() if isinstance(row, str) else [str(o) for o in row]
            parsed = parser.parse_overrides(row_overrides)
            out += [(str(row), job) for job in self._expand_row(row_overrides, parsed)]
        return out

    @staticmethod
    def _expand_row(row_overrides: list[str], parsed) -> list[list[str]]:
        """Return a row's jobs.

        One per combination of its swept values (``method=cart,rf``), in order.
        """
        choices = []
        for line, o in zip(row_overrides, parsed, strict=True):
            if o.is_sweep_override():
                key = o.get_key_element()
                choices.append([f"{key}={v}" for v in o.sweep_string_iterator()])
            else:
                choices.append([line])
        return [list(c) for c in itertools.product(*choices)]

    def _jobs(self, arguments: list[str]) -> list[list[str]]:
        """Every job's overrides.

        The cartesian product of ``params`` (and the command line), crossed with ``rows`` when the
        experiment lists explicit rows. A command-line override of a key the rows set selects the
        rows with that value (``dataset=madelon``: madelon's rows).
        """
        self._use_profile()
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        row_jobs = self._row_jobs(parser) if self.rows else []
        row_keys = {o.split("=", 1)[0] for _, job in row_jobs for o in job}
        select: dict[str, set[str]] = {}
        rest = []
        for a in parser.parse_overrides(list(arguments)):
            key = a.get_key_element().lstrip("+")  # `treebench run` forces method.params.* with ++
            if key not in row_keys:
                rest.append(a.input_line)
            elif a.is_sweep_override():
                select[key] = {f"{key}={v}" for v in a.sweep_string_iterator()}
            else:
                select[key] = {f"{key}={a.get_value_element_as_str()}"}
        # a command-line value of a key the experiment sweeps replaces the experiment's values (as
        # in Hydra's basic sweeper), also when `treebench run` forced it with ``++``
        given = {parser.parse_override(a).get_key_element().lstrip("+") for a in rest}
        own = [
            o
            for o in self._parse_config()
            if parser.parse_override(o).get_key_element().lstrip("+") not in given
        ]
        params_conf = own + rest
        batches = self.split_arguments(parser.parse_overrides(params_conf), None)
        grid = [list(j) for j in batches[0]] if batches else [[]]
        if not self.rows:
            return grid
        chosen = [(r, j) for r, j in row_jobs if all(set(j) & want for want in select.values())]
        if not chosen:
            wanted = " ".join(sorted(v for vs in select.values() for v in vs))
            raise ConfigCompositionException(f"no row of the sweep has {wanted}")
        jobs = []
        for row, job in chosen:
            keys = {o.split("=", 1)[0] for o in job}
            for combo in grid:
                clash = keys & {c.split("=", 1)[0] for c in combo}
                if clash:
                    raise ConfigCompositionException(
                        f"sweeper row {row!r} and the sweep both set {sorted(clash)}; "
                        "set each key in one place"
                    )
                jobs.append(job + combo)
        return jobs

    @staticmethod
    def _ordered(jobs: list[list[str]], order: list[str]) -> list[list[str]]:
        """``jobs`` sorted by the values of the ``order`` keys, the first key slowest.

        Each key's values rank in the order they first appear; stable, so ties keep the planned
        order.
        """
        if not order:
            return jobs
        ranks: dict[str, dict[str, int]] = {k: {} for k in order}

        def value(job: list[str], key: str) -> str | None:
            for o in job:
                k, _, v = o.lstrip("+").partition("=")
                if k == key:
                    return v
            return None

        for job in jobs:
            for k in order:
                ranks[k].setdefault(value(job, k), len(ranks[k]))
        return sorted(jobs, key=lambda job: tuple(ranks[k][value(job, k)] for k in order))

    def sweep(self, arguments: list[str]) -> Any:
        """Plan the sweep, skip the jobs that are done or lack data, and launch the rest."""
        from treebench import slurm
        from treebench.app import _abspath, open_store
        from treebench.data.fetch import fetch_command, missing_files
        from treebench.faults import clean_stale_temps, raise_env_fault
        from treebench.files import OutputsError, check_outputs
        from treebench.params import (
            ParamError,
            check_dataset,
            check_method,
            check_run_settings,
        )
        from treebench.progress import SweepProgress
        from treebench.report.console import print_plan
        from treebench.resources import explicit_launcher_keys, group_by_resources, job_resources
        from treebench.runner import data_context, job_keys, plan_profile

        try:
            jobs = self._ordered(_expand_suites(self._jobs(arguments)), self.order)
        except ValueError as exc:  # SuiteError: an unknown suite
            _fail([str(exc)])
        if not self.dry_run:
            try:
                check_outputs(_abspath(self.config.paths.store), "store")
            except OutputsError as exc:
                _fail([str(exc)])
        store = open_store(self.config)
        if not self.dry_run:
            clean_stale_temps(store.root)  # what a killed process left
        # runs still held by SLURM jobs of an earlier sweep (its driver may have died) are not
        # resubmitted
        held = slurm.reconcile(store, record=not self.dry_run)
        tracking = hasattr(self.launcher, "job_runs")
        todo, done_keys, plan, labels = [], [], [], []
        adopted: dict[str, tuple] = {}  # SLURM job id -> (pending marker, state)
        composed: dict = {}
        checked: dict[tuple, str | None] = {}  # overrides without seeds -> parameter error or None
        method_checked: dict[tuple, str | None] = {}  # (overrides but data, task) -> the same
        costs: dict[tuple, list[float]] = {}  # overrides without seeds -> done runs' core-seconds
        modelled: dict[tuple, float | None] = {}  # a job's overrides -> the cost model's seconds
        model = _ABSENT  # the ledger's cost model, read at the first job that needs it
        bad: dict[str, list[list[str]]] = {}  # parameter error -> the jobs it concerns
        absent: dict[str, list[str]] = {}  # dataset -> its files a run could not get
        fixes: dict[str, str] = {}  # dataset -> the ``treebench fetch`` that gets them
        nodata: dict[str, int] = {}  # dataset -> its jobs left out for missing files
        for overrides in _planning(jobs):
            cfg = self._job_config(overrides, composed)
            # every job's parameters are checked before any launches or reads data (once for the
            # jobs that differ only in their seeds)
            unseeded = _unseeded(overrides)
            try:  # seeds differ among the jobs that share the checks below
                check_run_settings(cfg, max_threads=0 if self._hints_used() else None)
            except ParamError as exc:
                bad.setdefault(str(exc), []).append(overrides)
                continue
            if unseeded not in checked:
                try:
                    check_dataset(cfg)
                    # the method half once per method setting and task (a suite's datasets share it)
                    mkey = (_undatasetted(unseeded), str(cfg.dataset.get("task")))
                    if mkey not in method_checked:
                        try:
                            check_method(cfg)
                            method_checked[mkey] = None
                        except ParamError as exc:
                            method_checked[mkey] = str(exc)
                    checked[unseeded] = method_checked[mkey]
                except ParamError as exc:
                    checked[unseeded] = str(exc)
            if checked[unseeded] is not None:
                bad.setdefault(checked[unseeded], []).append(overrides)
                continue
            keys = job_keys(cfg)
            n_done = sum(store.is_done(k) for k in keys)
            if n_done < len(keys):
                name = str(cfg.dataset.name)
                if name not in absent:  # a job whose data files are missing would only fail
                    absent[name] = missing_files(cfg.dataset, data_context(cfg))
                    fixes[name] = fetch_command(cfg.dataset)
                if absent[name]:
                    nodata[name] = nodata.get(name, 0) + 1
                    plan.append((overrides, len(keys), n_done, {}, "no data"))
                    continue
            res = job_resources(cfg, n_runs=len(keys) - n_done) if self._hints_used() else {}
            plan.append((overrides, len(keys), n_done, res))
            if self.dry_run and n_done:
                costs.setdefault(unseeded, []).extend(_core_seconds(store, keys))
            if self.dry_run and n_done < len(keys):
                if model is _ABSENT:
                    model = _cost_model()
                if model is not None:
                    n_train, n_feat = _train_rows(cfg)
                    choice = next(
                        (o.split("=", 1)[1] for o in overrides if o.startswith("method=")),
                        str(cfg.method.name),
                    )
                    tuned = bool(cfg.get("tune") and cfg.tune.get("strategy"))
                    modelled[tuple(overrides)] = model.predict(
                        choice, str(cfg.dataset.task), tuned, n_train, n_feat
                    )
            holders = {held[k][0]["job_id"]: held[k] for k in keys if k in held}
            if n_done == len(keys):
                done_keys += keys
                exp, profile = cfg.get("experiment_name") or "adhoc", plan_profile(cfg)
                labels += [(k, exp, profile) for k in keys]
            elif holders:
                adopted.update(holders)
            else:
                todo.append((list(overrides), res))
                if tracking:  # the SLURM launcher's pending markers list each job's runs
                    self.launcher.job_runs[tuple(overrides)] = slurm.job_runs(cfg)
        if bad:
            _fail(
                f"{msg}\n  in {len(js)} of {len(jobs)} jobs, e.g. {_shown(js[0]) or '(defaults)'}"
                for msg, js in bad.items()
            )
        sweep_dir = Path(_abspath(self.config.hydra.sweep.dir))
        missing = _missing_note(nodata, absent, fixes)
        if self.dry_run:
            estimates = [_estimate(costs, job, modelled) for job in plan]
            print_plan(plan, estimates, missing, limit=self.plan_rows)
            return []
        if nodata and sum(nodata.values()) == len(plan):
            _fail([missing])  # no job of the sweep could run: say so before anything starts
        # a fit shared with another experiment or profile counts in each plan that holds it
        for k, experiment, profile in labels:
            store.add_experiment(k, experiment, profile)
        n_held = sum(1 for _, n, d, *_ in plan if d < n) - len(todo) - sum(nodata.values())
        n_finished = len(jobs) - len(todo) - n_held - sum(nodata.values())
        log.debug(f"{n_finished} of {len(jobs)} jobs already done, {len(todo)} to launch")
        held_note = ""
        if n_held:
            states = ", ".join(f"{j} {adopted[j][1].state}" for j in sorted(adopted))
            held_note = f", {n_held} still queued or running on SLURM ({states}; not resubmitted)"
        _quiet_job_listing()
        print(
            f"sweep: {len(jobs)} jobs, {n_finished} done already{held_note}, {len(todo)} to launch"
            f" ({type(self.launcher).__name__}, output {sweep_dir})",
            flush=True,
        )
        if missing:
            print(f"not launched: {missing}", flush=True)
        for path, why in store.invalid.items():  # read as absent while planning: run again
            print(f"invalid record {path} ({why}): not done, rerun here", flush=True)
        if done_keys:
            (sweep_dir / "_done").mkdir(parents=True, exist_ok=True)
            (sweep_dir / "_done" / "keys.json").write_text(json.dumps(done_keys))
        explicit = explicit_launcher_keys(self.config.hydra.overrides.hydra)
        groups = group_by_resources(todo, explicit) if todo else []
        returns = []
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        queue = getattr(self.launcher, "queue_counts", None)
        bar = SweepProgress(sweep_dir, store, len(todo), queue=queue) if todo else None
        if bar is not None:
            bar.start()
        # a launcher with submit/collect (SLURM) gets every group queued before waiting for any
        two_phase = hasattr(self.launcher, "submit") and hasattr(self.launcher, "collect")
        submitted = []
        try:
            self._launch_all(groups, two_phase, submitted, returns, adopted)
        except OSError as exc:  # a job's outputs or the sweep dir refused (full disk, ...)
            raise_env_fault(exc, exc.filename or sweep_dir)
            raise
        finally:
            if bar is not None:
                bar.stop()
        return returns

    def _launch_all(self, groups, two_phase, submitted, returns, adopted) -> None:
        """Launch (or, with a two-phase launcher, submit then collect) every group of jobs."""
        initial_job_idx = 0
        for request, overrides in groups:
            if request:
                log.info(f"launching {len(overrides)} job(s) with resources {request}")
            self.overrides = list(self.split_overrides_to_chunks(overrides, self.max_batch_size))
            self.batch_index = 0
            with self._launcher_resources(request):
                while not self.is_done():
                    batch = self.get_job_batch()
                    if two_phase:
                        submitted.append(self.launcher.submit(batch, initial_job_idx))
                        initial_job_idx += len(batch)
                        continue
                    results = self.launcher.launch(batch, initial_job_idx=initial_job_idx)
                    for r in results:
                        _ = r.return_value
                    initial_job_idx += len(batch)
                    returns.append(results)
        for handles in submitted:
            results = self.launcher.collect(handles)
            for r in results:
                _ = r.return_value
            returns.append(results)
        if adopted:
            if hasattr(self.launcher, "wait_adopted"):
                print(f"waiting for {len(adopted)} SLURM job(s) of an earlier sweep")
                self.launcher.wait_adopted([m for m, _ in adopted.values()])
            else:
                print(f"{len(adopted)} job(s) left to SLURM: {', '.join(sorted(adopted))}")

    def _job_config(self, overrides: list[str], composed: dict):
        """Return the job's composed config, valid until the next call.

        It is read within the planning loop only.

        Composing costs 0.1-0.2 s a job, so the jobs of a sweep share one composition per choice of
        config groups (``method=``, ``dataset=``, ``experiment=`` ...): a job's value overrides
        (``seed=3``, ``method.params.max_depth=5``) are applied to it the way Hydra applies them
        after composing, and undone at the next call (a copy would cost more than the rest of the
        job's planning). The launched job composes its own config. Hydra overrides, deletions and
        keys that do not exist yet take the full path.
        """
        undo = composed.pop("_undo", None)
        if undo is not None:
            undo()
        parsed = composed.setdefault("_parsed", {})
        groups, values = [], []
        for line in overrides:
            o = parsed.get(line)
            if o is None:
                o = parsed[line] = OverridesParser.create().parse_override(line)
            if o.is_hydra_override() or o.is_delete():
                return self._full_config(overrides)
            (groups if self._is_group(o, composed) else values).append(o)
        base_key = tuple(o.input_line for o in groups)
        base = composed.get(base_key)
        if base is None:
            base = self.hydra_context.config_loader.load_sweep_config(
                self.config, [o.input_line for o in groups]
            )
            OmegaConf.set_readonly(base, False)
            composed[base_key] = base
        saved = []
        for o in values:
            parent_key, _, leaf = o.key_or_group.rpartition(".")
            parent = OmegaConf.select(base, parent_key) if parent_key else base
            if not isinstance(parent, DictConfig):
                self._restore(saved)
                return self._full_config(overrides)
            try:
                node = parent._get_node(leaf, throw_on_missing_key=False)
            except (ConfigAttributeError, ConfigKeyError):  # not in a struct node: added by ``++``
                node = None
            if node is None:
                old = _ABSENT
            elif isinstance(node, DictConfig | ListConfig):
                old = OmegaConf.to_container(node, resolve=False)
            else:
                old = node._value()  # as written: an interpolation stays one
            saved.append((parent, leaf, old))
        try:
            ConfigLoaderImpl._apply_overrides_to_config(values, base)
        except Exception:
            self._restore(saved)
            raise
        composed["_undo"] = lambda: self._restore(saved)
        return base

    def _full_config(self, overrides: list[str]):
        return self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))

    @staticmethod
    def _restore(saved: list) -> None:
        """Put back the values a job's overrides replaced (last first), removing added keys."""
        for parent, leaf, old in reversed(saved):
            with open_dict(parent):
                if old is _ABSENT:
                    parent.pop(leaf, None)
                else:
                    parent[leaf] = old

    def _is_group(self, override, composed: dict) -> bool:
        """Whether an override selects a config group option (``method=tnt``), not a value."""
        if override.package is not None:
            return True
        known = composed.setdefault("_groups", {})
        key = override.key_or_group
        if key not in known:
            known[key] = bool(self.hydra_context.config_loader.get_group_options(key))
        return known[key]

    def _hints_used(self) -> bool:
        """Whether the launcher takes resource requests.

        The submitit ones keep them in ``params``.
        """
        return isinstance(getattr(self.launcher, "params", None), dict)

    @contextmanager
    def _launcher_resources(self, request: dict):
        """Set the launcher's resource parameters for one group of jobs, then restore them."""
        if not request or not self._hints_used():
            yield
            return
        saved = dict(self.launcher.params)
        self.launcher.params.update(request)
        try:
            yield
        finally:
            self.launcher.params = saved
