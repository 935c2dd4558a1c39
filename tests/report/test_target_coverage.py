"""Every paper target can be met by a job its own experiment plans (no target stays "not run")."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from treebench.config import CONF_DIR
from treebench.report.checks import Availability
from treebench.report.select import norm, per_block_means, select
from treebench.report.targets import Selector, Target, for_experiment, load_all
from treebench.results.table import to_frame

PAPERS = load_all(CONF_DIR)
#: experiments paper targets refer to (a selector may name another experiment than its target's)
EXPERIMENTS = sorted(
    {t.experiment for p in PAPERS for t in p.targets}
    | {s.experiment for p in PAPERS for t in p.targets for s in (t.select, t.lhs, t.rhs) if s}
)
#: keys of a job's overrides that cannot change its method node (method configs know no dataset)
_NOT_METHOD = ("seed", "seeds", "dataset", "split")
#: blocks (``per``) a stat test needs before the report computes it (treebench.report.checks)
_MIN_BLOCKS = {"friedman": 2, "nemenyi": 2, "wilcoxon": 2, "spearman": 3}


def _key(override: str) -> str:
    """Return the key an override sets (``+a.b=1`` and ``~a.b`` set ``a.b``)."""
    return override.split("=", 1)[0].lstrip("+~")


def _shaping(job) -> tuple:
    """Return the overrides of a job that shape its method node other than a ``method.*`` value.

    ``experiment=``, ``method=`` and root keys (``profile=``, ``paper_defaults.*``).
    """
    return tuple(
        o
        for o in job
        if _key(o).split(".")[0] not in _NOT_METHOD and not _key(o).startswith("method.")
    )


def _planned_jobs(experiment: str) -> tuple[list[list[str]], dict]:
    """Return the override lists of the experiment's full-profile jobs, and their method nodes.

    The lists as ``treebench run -m experiment=<name>`` plans them (by the experiment's own
    sweeper, nothing launched or composed per job), and the composed method node of each distinct
    :func:`_shaping` of a job.

    Returns
    -------
    (jobs, bases)
        ``jobs``: one override list per planned job; ``bases``: :func:`_shaping` tuple →
        ``{"method": the method node (plain, interpolations resolved), "experiment":
        experiment_name, "profile": profile, "dataset": the default dataset's name}``.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.plugins import Plugins
    from hydra.types import HydraContext

    from treebench.schema import register_schema

    register_schema()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            master = compose("config", [f"experiment={experiment}"], return_hydra_config=True)
            sweeper = Plugins.instance().instantiate_sweeper(
                hydra_context=HydraContext(GlobalHydra.instance().config_loader(), None),
                task_function=lambda cfg: None,
                config=master,
            )
            # the sweeper's own plan (rows x params), before it composes any job
            jobs = sweeper._jobs([f"experiment={experiment}"])
            bases = {}
            for shaping in dict.fromkeys(_shaping(job) for job in jobs):
                cfg = compose("config", list(shaping))
                bases[shaping] = {
                    "method": OmegaConf.to_container(cfg.method, resolve=True),
                    "experiment": cfg.experiment_name,
                    "profile": str(getattr(cfg.profile, "value", cfg.profile)),
                    "dataset": cfg.dataset.name,
                }
    finally:
        GlobalHydra.instance().clear()
    return jobs, bases


@functools.cache
def planned_frame(experiment: str) -> pd.DataFrame:
    """Return the experiment's full plan as result rows of the shape targets select from.

    One ``ok`` row per planned job, its seeds folded together: ``experiment``, ``profile``,
    ``method`` (the method config's ``name``: ``e2edf`` for ``method=e2edf_letter``), ``dataset``,
    the ``param.*`` columns (the method config's params with the job's ``method.*`` overrides
    applied as Hydra applies them, flattened as the results table flattens a record) and ``job``
    (the job's overrides). No metric column: the rows are for selection only.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    jobs, bases = _planned_jobs(experiment)
    parser = OverridesParser.create()
    records = []
    for job in dict.fromkeys(tuple(o for o in j if _key(o) not in ("seed", "seeds")) for j in jobs):
        base = bases[_shaping(job)]
        node = OmegaConf.create({"method": base["method"]})
        OmegaConf.set_struct(node, True)  # a new key needs ``+``, as in the composed config
        values = [o for o in job if _key(o).startswith("method.")]
        ConfigLoaderImpl._apply_overrides_to_config(parser.parse_overrides(values), node)
        method = OmegaConf.to_container(node.method, resolve=True)
        dataset = next((o.split("=", 1)[1] for o in job if _key(o) == "dataset"), None)
        records.append(
            {
                "experiment": base["experiment"],
                "profile": base["profile"],
                "method": method["name"],
                "dataset": dataset or base["dataset"],
                "status": "ok",
                "params": method.get("params") or {},
                "job": " ".join(job),
            }
        )
    return to_frame(records)


def availability(experiment: str) -> Availability:
    """Return what ``treebench check`` knows exists, plus the papers' ``unavailable`` datasets.

    Dataset configs and registered methods; the unavailable datasets of the experiment are the
    report's reasons for a target without data.
    """
    avail = Availability.local()
    avail.unavailable.update(for_experiment(PAPERS, experiment)[2])
    return avail


def _sides(t: Target) -> list[Selector]:
    """Return the selectors whose rows ``t`` reads, each once."""
    out: list[Selector] = []
    for s in (t.select, t.lhs, t.rhs, *t.groups):
        if s is not None and s not in out:
            out.append(s)
    return out


def _on(sel: Selector) -> str:
    """Return a selector as the gap message names it.

    ``rf[max_depth=10, n_estimators=100] on letter``.
    """
    return f"{sel.label()}{f' on {sel.dataset}' if sel.dataset else ''}"


def _sorted(values: pd.Series) -> list[str]:
    """Return the distinct values as the matcher compares them (:func:`norm`).

    Numbers in numeric order.
    """

    def key(v: str):
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return sorted(set(values.map(norm)), key=key)


def _planned(sel: Selector, frame: pd.DataFrame, experiment: str) -> str:
    """Return what the plan has of the selector's method, where the selector matches none of it."""
    exp = sel.experiment or experiment
    mine = frame[frame["experiment"] == exp] if len(frame) else frame
    rows = mine[mine["method"] == sel.method] if len(mine) else mine
    if rows.empty:
        methods = ", ".join(sorted(set(mine["method"]))) if len(mine) else "nothing"
        return f"the plan has no {sel.method} job; it plans {methods}"
    if sel.dataset is not None:
        if not (rows["dataset"] == sel.dataset).any():
            return f"the plan has {sel.method} on {', '.join(sorted(set(rows['dataset'])))} only"
        rows = rows[rows["dataset"] == sel.dataset]
    where = [
        f"{col.split('.', 1)[-1]} in {{{', '.join(_sorted(rows[col]))}}}"
        if col in rows
        else f"no {col.split('.', 1)[-1]} param"
        for col in sorted(sel.where)
    ]
    return f"planned {sel.method}{f' on {sel.dataset}' if sel.dataset else ''}: " + (
        "; ".join(where) or f"{len(rows)} jobs"
    )


def plan_gaps(
    targets: list[Target], frame: pd.DataFrame, avail: Availability, experiment: str
) -> list[str]:
    """One line per target for which no row of ``frame`` (the planned jobs) can ever give data.

    Exempt, as the report words them: a target that says ``why`` it is not run, and one with a
    selection the report skips for a reason other than "not run" (:meth:`Availability.reason`:
    dataset not in the mirror, no dataset config, method not implemented). Planned jobs on an
    unavailable dataset count for nothing. Rows are picked by the report's own matcher
    (:func:`~treebench.report.select.select` for a value target,
    :func:`~treebench.report.select.per_block_means` per block for each side of a relation or stat,
    with the blocks every side needs in common), with a dummy value in the metric columns read.

    Parameters
    ----------
    targets : list of Target
        The targets of one experiment (:func:`~treebench.report.targets.for_experiment`).
    frame : DataFrame
        Planned rows (:func:`planned_frame`), of every experiment a selector names.
    avail : Availability
        What exists (:func:`availability`): the report's reasons for a target without data.
    experiment : str
        The experiment whose config a missing row goes into (named in the message).

    Returns
    -------
    list of str
        ``<target id> (<kind>, experiment <name>): <selection> selects no planned job (<what the
        plan has>); add a row to treebench/conf/experiment/<name>.yaml or correct the target ...``
        per uncovered target, in the order of ``targets``.
    """
    if len(frame):
        frame = frame[~frame["dataset"].isin(avail.unavailable)]
    gaps = []
    for t in targets:
        sides = _sides(t)
        if t.why or any(not avail.reason(s, t.experiment).startswith("not run") for s in sides):
            continue
        metrics = {t.metric, *(s.best_by for s in sides if s.best_by)}
        rows = frame.assign(**dict.fromkeys(metrics, 0.0))
        rows = rows.assign(**dict.fromkeys([c for c in t.per if c not in rows], None))
        problem = ""
        if t.kind == "value":
            if select(rows, t.select, t.experiment).empty:
                has = _planned(t.select, rows, t.experiment)
                problem = f"{_on(t.select)} selects no planned job ({has})"
        else:
            blocks = [per_block_means(rows, s, t.metric, t.per, t.experiment) for s in sides]
            empty = [s for s, b in zip(sides, blocks, strict=True) if b.empty]
            need = _MIN_BLOCKS.get(t.test, 1)
            have = len(pd.concat(blocks, axis=1).dropna())  # blocks every side has
            if empty:
                has = _planned(empty[0], rows, t.experiment)
                problem = f"{_on(empty[0])} selects no planned job ({has})"
            elif have < need:
                per = "/".join(t.per) or "block"
                problem = (
                    f"{' and '.join(map(_on, sides))} share {have} planned {per} "
                    f"(the report needs {need})"
                )
        if problem:
            gaps.append(
                f"{t.id} ({t.kind}, experiment {t.experiment}): {problem}; add a row to "
                f"treebench/conf/experiment/{experiment}.yaml or correct the target in "
                f"treebench/conf/papers/{t.paper}.yaml"
            )
    return gaps


def _targets(experiment: str) -> list[Target]:
    return for_experiment(PAPERS, experiment)[0]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_target_selects_a_planned_job(experiment):
    targets = _targets(experiment)
    names = sorted({experiment, *(s.experiment for t in targets for s in _sides(t))})
    for x in names:
        path = Path(CONF_DIR) / "experiment" / f"{x}.yaml"
        assert path.is_file(), f"targets name experiment {x}, but there is no {path}"
    frame = pd.concat([planned_frame(x) for x in names], ignore_index=True)
    assert set(frame["experiment"]) == set(names)  # each file's experiment_name is its name
    gaps = plan_gaps(targets, frame, availability(experiment), experiment)
    assert not gaps, f"{len(gaps)} of {len(targets)} targets can never be run:\n" + "\n".join(gaps)


def test_plan_rows_carry_the_method_family_and_overridden_params():
    frame = planned_frame("e2edf_fig6")
    assert (
        len(frame) == 47
    )  # 3 rows x 3 methods x 5 sizes + RF(100) on letter and mnist; seeds folded
    assert set(frame["method"]) == {"e2edf", "rf", "gbdt"}  # e2edf_letter etc. record as e2edf
    e2edf = frame[(frame["method"] == "e2edf") & (frame["dataset"] == "letter")]
    assert sorted(e2edf["param.n_estimators"]) == [1, 3, 5, 10, 70]
    assert set(e2edf["param.max_depth"]) == {10} and set(e2edf["param.max_features"]) == {8}
    rf = frame[(frame["method"] == "rf") & (frame["param.n_estimators"] == 100)]
    assert sorted(rf["dataset"]) == ["letter", "mnist", "usps"]
    assert set(rf["param.max_depth"]) == {10} and set(rf["profile"]) == {"full"}


def test_plan_rows_follow_deletions_additions_and_paper_defaults():
    ci = planned_frame("ci")
    hinge = ci[ci["method"] == "hinge_forest"]
    # ``~method.params +method.params={...}``: the four stated params only, the others gone
    assert len(hinge) == 5 and set(hinge["param.n_estimators"]) == {20}
    assert hinge["param.learning_rate"].isna().all() and set(ci["profile"]) == {"reduced"}
    rhf = planned_frame("rhf_table2")
    forest = rhf[(rhf["method"] == "hinge_forest") & (rhf["dataset"] == "madelon")]
    assert len(forest) == 20 and set(forest["param.weight_init"]) == {"bleak"}
    assert set(forest["param.learning_rate"]) == {0.01}
    assert "param.conv_bn" not in rhf  # ``~method.params.conv_bn`` on every hinge row
    assert set(forest["param.n_iterations"]) == {40000}  # the experiment's paper_defaults


def test_the_rf100_gap_of_e2edf_fig6_is_reported():
    """Without its RF(100) row, e2edf_fig6 plans no RF of 100 trees on Letter and MNIST.

    The two relation targets comparing E2EDF with it there are named, with what the plan has
    instead.
    """
    frame = planned_frame("e2edf_fig6")
    row = frame["job"].str.contains(
        r"dataset=(?:letter|mnist) method=rf method.params.n_estimators=100 "
    )
    assert row.sum() == 2
    gaps = plan_gaps(_targets("e2edf_fig6"), frame[~row], availability("e2edf_fig6"), "e2edf_fig6")
    assert [g.split(" ", 1)[0] for g in gaps] == [
        "f6/e2edf_beats_rf/letter",
        "f6/e2edf_beats_rf/mnist",
    ]
    assert gaps[0].startswith(
        "f6/e2edf_beats_rf/letter (relation, experiment e2edf_fig6): "
        "rf[max_depth=10, n_estimators=100] on letter selects no planned job "
        "(planned rf on letter: max_depth in {10}; n_estimators in {1, 3, 5, 10, 70}); "
        "add a row to treebench/conf/experiment/e2edf_fig6.yaml or correct the target"
    )


def test_sides_planned_on_different_datasets_are_a_gap():
    """A relation compares per dataset: each side planned, but never on one dataset, is a gap."""
    frame = to_frame(
        [
            {"experiment": "x", "method": m, "dataset": d, "status": "ok", "params": {}}
            for m, d in (("cart", "iris"), ("rf", "wine"))
        ]
    )
    t = Target(
        id="r",
        paper="p",
        experiment="x",
        kind="relation",
        source="",
        metric="test_accuracy",
        lhs=Selector("cart", experiment="x"),
        rhs=Selector("rf", experiment="x"),
    )
    avail = Availability()
    (gap,) = plan_gaps([t], frame, avail, "x")
    assert "cart and rf share 0 planned dataset (the report needs 1)" in gap
    assert plan_gaps([replace(t, per=())], frame, avail, "x") == []  # one block: the mean
    assert plan_gaps([replace(t, why="not a method here")], frame, avail, "x") == []


def test_exempt_targets_are_the_ones_the_report_skips_with_a_reason():
    """adf/sndf (published only, not methods here) and datasets not in the mirror are never gaps.

    Even with nothing planned; a method we run is.
    """
    targets = _targets("rhf_table3")
    empty = planned_frame("rhf_table3").iloc[0:0]
    gaps = plan_gaps(targets, empty, availability("rhf_table3"), "rhf_table3")
    ids = {g.split(" ", 1)[0] for g in gaps}
    assert {"t3/hinge_forest/letter", "t3/hinge_fern/mnist"} <= ids
    assert not {"t3/adf/letter", "t3/sndf/mnist"} & ids
    assert "the plan has no hinge_forest job; it plans nothing" in next(iter(gaps))
    har = replace(targets[0], select=replace(targets[0].select, dataset="har"))
    assert plan_gaps([har], empty, availability("rhf_table2"), "rhf_table3") == []
