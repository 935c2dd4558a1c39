"""Reports (tables, layouts, figures, stats) and the `check`/`report` CLI."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.report.records import frame, make_record
from treebench.cli import app
from treebench.report.checks import Availability
from treebench.report.figures import figure_points
from treebench.report.paper import report_experiment, to_latex
from treebench.report.targets import load_paper

PAPER = """
paper: toy
title: Toy paper
units: percent
defaults: {metric: test_accuracy, tolerance: 2.0, size_rtol: 0.5}
unavailable: {protein: "not in the mirror"}
experiments:
  exp:
    title: Toy Table 1
    tables:
      - {name: table1, table: "Table 1", cols: dataset, metrics: [test_accuracy, n_splits]}
    figures:
      - {name: acc_vs_depth, x: param.max_depth, y: test_accuracy, series: [method], facet: dataset}
      - {name: acc_vs_splits, x: n_splits, y: test_accuracy, series: [method], xscale: log}
    stats:
      - {name: fr, test: friedman, metric: test_accuracy}
      - {name: wx, test: wilcoxon, metric: test_accuracy, lhs: rf, rhs: cart}
targets:
  - {id: c/d1, experiment: exp, table: "Table 1", source: T1, dataset: d1, method: cart, where: {max_depth: 4}, value: 80.0, sd: 1.0, n_splits: 15}
  - {id: r/d1, experiment: exp, table: "Table 1", source: T1, dataset: d1, method: rf, value: 90.0, n_splits: 1000}
  - {id: c/protein, experiment: exp, table: "Table 1", source: T1, dataset: protein, method: cart, value: 55.0}
"""


@pytest.fixture
def toy(tmp_path):
    p = tmp_path / "toy.yaml"
    p.write_text(PAPER)
    return load_paper(p)


def _records():
    recs = []
    for i, ds in enumerate(["d1", "d2", "d3", "d4", "d5"]):
        for s in range(2):
            for depth in (1, 2, 4):
                recs.append(
                    make_record(
                        "cart",
                        ds,
                        seed=s,
                        acc=0.5 + 0.07 * depth + 0.01 * i,
                        n_splits=2**depth - 1,
                        params={"max_depth": depth},
                        experiment="exp",
                    )
                )
            recs.append(
                make_record(
                    "rf",
                    ds,
                    seed=s,
                    acc=0.9 + 0.01 * i,
                    n_splits=1000,
                    n_trees=100,
                    params={"n_estimators": 100},
                    experiment="exp",
                )
            )
            recs.append(
                make_record(
                    "gbdt",
                    ds,
                    seed=s,
                    acc=0.85 + 0.005 * i,
                    n_splits=700,
                    n_trees=100,
                    experiment="exp",
                    profile="reduced",
                )
            )
    return recs


def test_report_experiment_writes_tables_figures_and_stats(toy, tmp_path):
    res = report_experiment(frame(_records()), [toy], "exp", tmp_path / "reports", Availability())
    out = tmp_path / "reports" / "exp"
    for name in (
        "README.md",
        "comparison.md",
        "comparison.tex",
        "table1.md",
        "table1.tex",
        "summary.md",
        "figures/acc_vs_depth.png",
        "figures/acc_vs_depth.pdf",
        "figures/acc_vs_splits.png",
        "figures/acc_vs_splits.pdf",
        "fr_cd.png",
        "fr_cd.pdf",
    ):
        assert (out / name).exists(), name
    comp = (out / "comparison.md").read_text()
    assert "80.00 ± 1.00" in comp and "c/d1" in comp and "not in mirror: not in the mirror" in comp
    table1 = (out / "table1.md").read_text()
    assert "cart[max_depth=4]" in table1 and "(80.00)" in table1 and "(1,000)" in table1
    readme = (out / "README.md").read_text()
    assert "Friedman test on test_accuracy over N = 5 datasets" in readme and "α = 0.05" in readme
    assert "Wilcoxon signed-rank test on test_accuracy over N = 5" in readme
    assert "![acc_vs_depth](figures/acc_vs_depth.png)" in readme
    assert r"\pm" in (out / "comparison.tex").read_text()
    v = res["verdicts"].set_index("id")
    assert v.loc["c/d1", "status"] == "pass" and v.loc["r/d1", "status"] == "pass"


def test_figure_points_group_by_param_or_measured_x():
    df = frame(_records())
    pts = figure_points(
        df,
        {
            "name": "f",
            "x": "param.max_depth",
            "y": "test_accuracy",
            "series": ["method"],
            "facet": "dataset",
        },
    )
    d1 = pts[(pts["facet"] == "d1") & (pts["series"] == "cart")]
    assert d1["x"].tolist() == [1.0, 2.0, 4.0] and d1["n"].tolist() == [2, 2, 2]
    assert d1["y"].tolist() == pytest.approx([0.57, 0.64, 0.78])
    pts = figure_points(df, {"name": "f", "x": "n_splits", "y": "test_accuracy", "facet": None})
    cart = pts[pts["series"] == "cart"]
    assert sorted(cart["x"]) == [
        1.0,
        3.0,
        15.0,
    ]  # one point per max_depth, averaged over datasets/seeds


def _fig2_records():
    """Oblique trees at depth 2 and 4: two epoch budgets per variant and seed, CART beside them."""
    recs = []
    for seed in (0, 1):
        for depth in (2, 4):
            recs.append(make_record("cart", "d1", seed=seed, acc=0.6, params={"max_depth": depth}))
            for ft in (0, None):
                for epochs, val in ((20, 0.80), (50, 0.85 if depth == 2 else 0.75)):
                    rec = make_record(
                        "e2edt",
                        "d1",
                        seed=seed,
                        acc=val + (0.05 if ft is None else 0) + 0.01 * seed,
                        params={"max_depth": depth, "epochs": epochs, "finetune_epochs": ft},
                    )
                    rec["info"] = {"val_accuracy": val}
                    recs.append(rec)
    return recs


def test_figure_points_pick_the_validated_config_and_never_pool_distinct_configs():
    df = frame(_fig2_records())
    spec = {"name": "f", "x": "param.max_depth", "y": "test_accuracy", "facet": "dataset"}
    # per point, the epochs with the best validation score; the baseline has none and stays whole
    picked = figure_points(
        df,
        {
            **spec,
            "series": ["method", "param.finetune_epochs"],
            "best_over": ["epochs"],
            "best_by": "info.val_accuracy",
        },
    ).set_index(["series", "x"])
    assert picked.loc[("e2edt[finetune_epochs=0]", 2.0), "y"] == pytest.approx(0.855)
    assert picked.loc[("e2edt[finetune_epochs=0]", 4.0), "y"] == pytest.approx(0.805)
    assert picked.loc[("e2edt", 4.0), "y"] == pytest.approx(0.855)  # finetuned: null is unlabelled
    assert picked["n"].tolist() == [2] * 6 and picked.loc[("cart", 2.0), "y"] == 0.6
    # without a choice the two epoch budgets (and variants) of one seed are separate points
    split = figure_points(df, {**spec, "series": ["method"]}).set_index(["series", "x"])
    assert split.loc[("e2edt[epochs=50, finetune_epochs=0]", 2.0), "y"] == pytest.approx(0.855)
    assert split.loc[("e2edt[epochs=20, finetune_epochs=null]", 4.0), "y"] == pytest.approx(0.855)
    assert set(split["n"]) == {2} and len(split) == 10


def test_a_figure_draws_an_info_value_labelled_without_its_prefix(monkeypatch, tmp_path):
    from matplotlib.figure import Figure

    from treebench.report.figures import make_figure

    drawn = {}

    def savefig(fig, *args, **kwargs):
        ax = fig.axes[0]
        drawn["labels"] = (ax.get_xlabel(), ax.get_ylabel())
        drawn["y"] = sorted(y for c in ax.containers for y in c.lines[0].get_ydata())

    monkeypatch.setattr(Figure, "savefig", savefig)
    spec = {"name": "v", "x": "param.max_depth", "y": "info.val_accuracy", "facet": None}
    spec["where"] = {"method": ["e2edt"], "param.epochs": [20], "param.finetune_epochs": [0]}
    make_figure(frame(_fig2_records()), spec, tmp_path, formats=("png",), points_csv=False)
    # the claim's own metric, in percent like any accuracy: 0.80 at both depths, both seeds
    assert drawn == {"labels": ("max_depth", "val_accuracy (%)"), "y": [80.0, 80.0]}


def test_figure_points_pool_a_setting_that_differs_only_between_seeds():
    recs = [
        make_record("tnt", "d1", seed=s, acc=0.8 + 0.02 * s, params={"max_depth": 3, **extra})
        for s, extra in ((0, {}), (1, {"search_step": "secant"}), (2, {"search_step": "secant"}))
    ]
    pts = figure_points(
        frame(recs), {"name": "f", "x": "param.max_depth", "y": "test_accuracy", "facet": None}
    )
    assert pts["series"].tolist() == ["tnt"] and pts["n"].tolist() == [3]
    assert pts["y"].tolist() == pytest.approx([0.82])


def test_latex_escapes():
    tex = to_latex(pd.DataFrame({"a_b": ["90 ± 1 %"], "n": [3]}), caption="x & y")
    assert r"a\_b" in tex and r"$\pm$" in tex and r"\%" in tex and r"x \& y" in tex


# ----------------------------------------------------------------------------- CLI (real conf)


def load_papers_yaml_targets(paper):
    """Return the raw target entries of treebench/conf/papers/<paper>.yaml."""
    import yaml

    from treebench.config import CONF_DIR

    return yaml.safe_load((Path(CONF_DIR) / "papers" / f"{paper}.yaml").read_text())["targets"]


def test_check_cli_fails_on_worsened_cart(store_with):
    out = store_with(
        [
            make_record(
                "cart",
                "digits",
                seed=s,
                acc=0.19,
                n_splits=1,
                experiment="ci",
                profile="reduced",
                params={"max_depth": 1},
            )
            for s in range(3)
        ]
    )
    r = CliRunner().invoke(app, ["check", "--experiment", "ci", "--outputs", str(out)])
    assert r.exit_code == 1, r.output
    line = next(
        ln for ln in r.output.splitlines() if "ci/cart/digits " in ln or "ci/cart/digits │" in ln
    )
    guard = next(t for t in load_papers_yaml_targets("ci") if t["id"] == "ci/cart/digits")
    assert "FAIL" in line and "0.1900" in line and f"{guard['value']:.4f}" in line
    assert "REGRESSION" in r.output and "skipped" in r.output


def test_check_cli_passes_and_strict_fails_on_missing(store_with):
    out = store_with(
        [
            make_record(
                "cart", "digits", seed=s, acc=0.83, n_splits=122, experiment="ci", profile="reduced"
            )
            for s in range(3)
        ]
    )
    r = CliRunner().invoke(app, ["check", "--experiment", "ci", "--outputs", str(out)])
    assert r.exit_code == 0, r.output
    assert "not run (experiment ci)" in r.output
    r = CliRunner().invoke(app, ["check", "--experiment", "ci", "--outputs", str(out), "--strict"])
    assert r.exit_code == 1


def test_check_cli_unknown_experiment(tmp_path):
    r = CliRunner().invoke(app, ["check", "--experiment", "cii", "--outputs", str(tmp_path)])
    assert r.exit_code == 2


def test_report_cli_writes_experiment_dir_and_reproduction(store_with, tmp_path, monkeypatch):
    from treebench.results import Ledger

    recs = [
        make_record(
            "cart", "digits", seed=s, acc=0.83, n_splits=122, experiment="ci", profile="reduced"
        )
        for s in range(3)
    ]
    out = store_with(recs)
    monkeypatch.setenv("TREEBENCH_LEDGER", str(tmp_path / "ledger"))
    r = CliRunner().invoke(app, ["report", "--experiment", "ci", "--outputs", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "reports" / "ci" / "README.md").exists()
    dest = tmp_path / "site" / "REPRODUCTION.md"
    dest.parent.mkdir()
    args = ["report", "--reproduction", "--outputs", str(out), "--out", str(dest)]
    r = CliRunner().invoke(app, args)  # the committed file reads the ledger only: empty here
    assert r.exit_code == 0, r.output
    text = dest.read_text()
    pages = dest.parent / "docs" / "reproduction"
    tnt = (pages / "tnt.md").read_text()
    assert "## Overview" in text and "](docs/reproduction/tnt.md#table-1)" in text
    assert "tnt_table1" in tnt and "not in mirror" in tnt
    assert "(0 records)" in text and "on 20" not in text  # stamped by content, no clock
    Ledger(tmp_path / "ledger").add(recs)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    again = dest.read_text()
    assert f"{Ledger(tmp_path / 'ledger').content_hash()} (3 records)" in again
    assert "](ci/" in (pages / "ci.md").read_text()  # the ci accuracy-vs-size figure, linked
    assert list((pages / "ci").glob("*.png"))
    assert CliRunner().invoke(app, args).exit_code == 0 and dest.read_text() == again
    r = CliRunner().invoke(app, [*args, "--with-store"])
    assert "+ the local store (not committed)" in dest.read_text()


def test_check_cli_reports_failed_runs(store_with):
    recs = [
        make_record("cart", "digits", seed=s, acc=0.83, n_splits=122, experiment="ci")
        for s in range(3)
    ]
    # a dataset without a guard: the failure is listed, the check itself passes
    recs.append(
        make_record(
            "cart", "housing", status="failed", error="ValueError: criterion", experiment="ci"
        )
    )
    out = store_with(recs)
    r = CliRunner().invoke(app, ["check", "--experiment", "ci", "--outputs", str(out)])
    assert r.exit_code == 0 and "1 failed runs" in r.output
    r = CliRunner().invoke(
        app, ["check", "--experiment", "ci", "--outputs", str(out), "--fail-on-errors"]
    )
    assert r.exit_code == 1 and "cart on housing" in r.output


def test_an_item_is_reproduced_when_every_number_of_it_passes_at_the_full_protocol():
    from types import SimpleNamespace

    from treebench.report.paper import paper_items, paper_overview

    rows = [  # (item, status, note)
        ("Table A", "pass", ""),
        ("Table A", "pass", ""),
        ("Table B", "pass", ""),  # ... and a competitor's quoted number: not B's to reproduce
        ("Table B", "skipped", "reference only: Table B (Other 2015), quoted beside the paper's"),
        ("Table C", "pass", ""),
        ("Table C", "skipped", "not in mirror: the test file is missing"),
        ("Table D", "pass", ""),
        ("Table D", "info", "reduced: 3 of 10 runs (20 core-minutes a run)"),
        ("Table E", "pass", ""),
        ("Table E", "FAIL", "unexplained"),
        ("Table F", "info", "set by config"),
        ("Table G", "pass", ""),  # a relation says its reduced protocol after its count
        ("Table G", "info", "8/8 sizes hold (need >= 80%); reduced: 1 of 5 runs (mnist/20)"),
    ]
    res = pd.DataFrame(
        [
            {"id": f"t{i}", "table": t, "source": t, "experiment": "x", "status": s, "note": n}
            for i, (t, s, n) in enumerate(rows)
        ]
    )
    toy = SimpleNamespace(paper="toy", targets=[], items={}, runs=5)
    row, _ = paper_overview(toy, res, n_records=0)
    assert row["items reproduced"] == "2 / 7"  # A and B
    items = paper_items(res).set_index("item")
    assert items["verdict"].to_dict() == {
        "Table A": "reproduced",
        "Table B": "reproduced",
        "Table C": "missing data",
        "Table D": "short",
        "Table E": "FAIL",
        "Table F": "not checked",
        "Table G": "short",
    }
    why = items["what keeps it from reproduced"]
    assert why["Table A"] == why["Table B"] == ""
    assert why["Table C"] == "missing data: t5 (not in mirror)"
    assert why["Table D"] == "short: t7 (3 of 10 runs (20 core-minutes a run))"
    assert why["Table E"] == "FAIL: t9"
    assert why["Table F"] == "info only: no number of it is checked"
    assert why["Table G"] == "short: t12 (1 of 5 runs (mnist/20))"
    assert items.loc["Table D", ["pass", "info"]].tolist() == [1, 1]
    assert set(items["experiments"]) == {"x"}


def test_cells_short_of_the_papers_runs_are_listed_once_with_their_cost_to_finish(tmp_path):
    from treebench.report.checks import run_checks
    from treebench.report.paper import short_of_runs
    from treebench.report.targets import load_paper

    recs = []
    for seed in range(2):  # 2 of the paper's 5 runs, 0.5 core-hours each
        for m in ("cart", "rf"):
            r = make_record(m, "digits", seed=seed, acc=0.8 + 0.1 * (m == "rf"))
            r.update(cpu_seconds=1800.0 if m == "rf" else 36.0)
            recs.append(r)
    recs.append(make_record("cart", "iris", seed=0, acc=0.9))  # no rf on iris: not compared
    paper = tmp_path / "p.yaml"
    paper.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, runs: 5}\ntargets:\n"
        "  - {id: rf, experiment: exp, source: T, dataset: digits, method: rf, value: 90.0}\n"
        "  - {id: rf_ge_cart, kind: relation, experiment: exp, source: T, lhs: rf, rhs: cart,"
        ' op: ">=", require: all}\n'
        "  - {id: full, experiment: exp, source: T, dataset: digits, method: cart, value: 80.0,"
        " runs: 2}\n"
    )
    res = run_checks(load_paper(paper).targets, frame(recs))
    short = short_of_runs(res.assign(paper="toy"))
    # rf on digits is read by two targets but is one cell; the relation's cart side is one more;
    # `full` has its 2 runs; iris is in no comparison
    assert short[["cell", "targets", "runs", "a run", "to finish"]].to_dict("records") == [
        {
            "cell": "cart · digits",
            "targets": "rf_ge_cart",
            "runs": "2 of 5",
            "a run": "1 core-minute",
            "to finish": "2 core-minutes",
        },
        {
            "cell": "rf · digits",
            "targets": "rf (+1)",
            "runs": "2 of 5",
            "a run": "30 core-minutes",
            "to finish": "1.5 core-hours",
        },
    ]


def test_targets_short_of_the_protocol_other_than_runs_are_listed_with_what_they_lack(tmp_path):
    from treebench.report.checks import Availability, run_checks
    from treebench.report.paper import short_of_runs, short_otherwise
    from treebench.report.targets import load_paper

    recs = [
        make_record("hinge_forest", "iris", seed=s, acc=0.9, params={"n_estimators": n})
        for n in (1, 10)
        for s in range(2)
    ]
    recs += [make_record("cart", "iris", seed=s, acc=0.8, profile="reduced") for s in range(2)]
    paper = tmp_path / "p.yaml"
    paper.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, runs: 2}\ntargets:\n"
        "  - {id: best, experiment: exp, source: T, dataset: iris, method: hinge_forest,"
        " best_over: [param.n_estimators], best: max, value: 90.0}\n"
        "  - {id: cart, experiment: exp, source: T, dataset: iris, method: cart, value: 80.0}\n"
    )
    plan = {
        "params": {},
        "rows": ["dataset=iris method=hinge_forest method.params.n_estimators=1,10,50"],
    }
    res = run_checks(load_paper(paper).targets, frame(recs), Availability(plans={"exp": plan}))
    res = res.assign(paper="toy")
    # both have their runs: neither is a cell short of runs, both are short otherwise
    assert short_of_runs(res).empty
    assert short_otherwise(res).to_dict("records") == [
        {"paper": "toy", "target": "best", "lacks": "2 of 3 configs"},
        {"paper": "toy", "target": "cart", "lacks": "reduced profile"},
    ]


def test_local_runs_never_move_a_committed_verdict(store_with, tmp_path, monkeypatch):
    """`check` and `report --experiment` compare the ledger's records unless --with-store.

    A worse local run of the same experiment is named, not silently pooled into the verdict.
    """
    from treebench.results import Ledger

    monkeypatch.setenv("TREEBENCH_LEDGER", str(tmp_path / "ledger"))
    good = [
        make_record(
            "cart", "digits", seed=s, acc=0.83, n_splits=122, experiment="ci", profile="reduced"
        )
        for s in range(3)
    ]
    Ledger(tmp_path / "ledger").add(good)
    bad = [
        make_record(
            "cart", "digits", seed=s, acc=0.20, n_splits=122, experiment="ci", profile="reduced"
        )
        for s in range(3, 6)
    ]
    out = store_with(bad)
    args = ["check", "--experiment", "ci", "--outputs", str(out)]
    r = CliRunner().invoke(app, args)
    said = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "3 records (ledger)" in said and "OK: 2 pass, 0 FAIL" in said
    assert "3 local record(s) of the store not compared" in said and "--with-store" in said
    r = CliRunner().invoke(app, [*args, "--with-store"])
    said = " ".join(r.output.split())
    assert (
        r.exit_code == 1
        and "6 records (ledger + store)" in said
        and "REGRESSION: 1 pass, 1 FAIL" in said
    )
    r = CliRunner().invoke(app, [*args, "--no-ledger"])  # the store alone, as CI's guard
    assert r.exit_code == 1 and "3 records (store)" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["report", "--experiment", "ci", "--outputs", str(out)])
    said = " ".join(r.output.split())
    assert r.exit_code == 0 and "ours (ledger) vs the paper" in said
    assert "3 local record(s) of the store not compared" in said


def _index_md(tmp_path, df, papers) -> str:
    """REPRODUCTION.md as the report writes it for these records and papers (no figures)."""
    from treebench.report.documents.evaluation import evaluate
    from treebench.report.documents.markdown import write_reproduction

    dest = tmp_path / "index" / "REPRODUCTION.md"
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_reproduction(evaluate(df, papers), dest, draw=False)
    return dest.read_text()


def _paper_file(tmp_path, body: str, head: str = "defaults: {metric: test_accuracy, runs: 5}\n"):
    paper = tmp_path / "p.yaml"
    paper.write_text("paper: toy\nunits: percent\n" + head + body)
    return load_paper(paper)


def test_an_item_with_only_structural_checks_is_not_reproduced(tmp_path):
    from treebench.report.checks import run_checks
    from treebench.report.paper import paper_items, paper_overview

    recs = [make_record(m, "digits", seed=s, acc=0.9) for m in ("cart", "rf") for s in range(5)]
    p = _paper_file(
        tmp_path,
        "targets:\n"
        "  - {id: built, kind: relation, experiment: exp, source: Fig. 1, lhs: rf, rhs: cart,"
        ' op: ">=", require: all, structural: "rf and cart share the splits here"}\n'
        "  - {id: real, experiment: exp, source: Table 1, dataset: digits, method: rf, value: "
        "90.0}\n"
        "  - {id: built_too, experiment: exp, source: Table 1, dataset: digits, method: cart,"
        ' value: 90.0, structural: "set by the split"}\n',
    )
    res = run_checks(p.targets, frame(recs))
    by = res.set_index("id")
    # the relation holds, the value is within tolerance: both structural, so info, never a pass
    assert by.loc["built", "status"] == by.loc["built_too", "status"] == "info"
    assert by.loc["built", "note"].startswith("1/1 dataset hold")
    assert "structural (holds): rf and cart share the splits here" in by.loc["built", "note"]
    assert by.loc["real", "status"] == "pass"
    items = paper_items(res, p.items).set_index("item")
    assert items.loc["Fig. 1", "verdict"] == "structural only"
    assert items.loc["Fig. 1", "what keeps it from reproduced"] == (
        "structural only: built could not have failed"
    )
    # an item with a real pass beside a structural row is reproduced by the pass alone
    assert items.loc["Table 1", "verdict"] == "reproduced"
    row, _ = paper_overview(p, res.assign(paper="toy"), n_records=0)
    assert row["items reproduced"] == "1 / 2"


def test_items_partly_checked_or_not_the_papers_are_declared_and_counted_apart(tmp_path):
    from treebench.report.checks import run_checks
    from treebench.report.paper import paper_items, paper_overview
    from treebench.report.targets import TargetError

    recs = [make_record("rf", "digits", seed=s, acc=0.9) for s in range(5)]
    body = (
        "targets:\n"
        "  - {id: a, experiment: exp, source: Fig. 2, dataset: digits, method: rf, value: 90.0}\n"
        "  - {id: b, experiment: exp, source: demo (printed), dataset: digits, method: rf,"
        " value: 90.0}\n"
        "  - {id: c, experiment: exp, source: Table 1, dataset: digits, method: rf, value: 90.0}\n"
    )
    head = (
        "defaults: {metric: test_accuracy, runs: 5}\n"
        "items:\n  Fig. 2: {partly: the CART curve only}\n"
        "  demo: {outside_paper: the authors' demo notebook}\n"
    )
    p = _paper_file(tmp_path, body, head)
    res = run_checks(p.targets, frame(recs))
    items = paper_items(res, p.items).set_index("item")
    assert items["verdict"].to_dict() == {
        "Fig. 2": "partly",
        "demo": "reproduced",
        "Table 1": "reproduced",
    }
    assert items.loc["Fig. 2", "what keeps it from reproduced"] == "partly: the CART curve only"
    assert items.loc["demo", "outside the paper"] == "the authors' demo notebook"
    row, _ = paper_overview(p, res, n_records=0)
    assert row["items reproduced"] == "1 / 2 (+1 partly)"  # the demo is not the paper's
    md = _index_md(tmp_path, frame(recs), [p])
    outside = md.split("not the papers' own items")[1]
    assert "[demo](" in outside and "the authors' demo notebook" in outside
    assert "[demo](" not in md.split("not the papers' own items")[0]
    with pytest.raises(TargetError, match=r"items.Fig. 9: no target belongs to it"):
        _paper_file(tmp_path, body, head + "  Fig. 9: {partly: x}\n")


def test_a_size_20_percent_off_fails_and_an_unmatchable_one_says_why(tmp_path):
    from treebench.report.checks import run_checks

    recs = [make_record("cart", "digits", seed=s, acc=0.9, n_splits=12) for s in range(5)]
    p = _paper_file(
        tmp_path,
        "targets:\n"
        "  - {id: over, experiment: exp, source: T, dataset: digits, method: cart, n_splits: 10}\n"
        "  - {id: near, experiment: exp, source: T, dataset: digits, method: cart, n_splits: 11}\n"
        "  - {id: unstated, experiment: exp, source: T, dataset: digits, method: cart,"
        " n_splits: {value: 10, unmatched: the paper gives no split}}\n",
    )
    by = run_checks(p.targets, frame(recs)).set_index("id")
    assert by.loc["over/n_splits", "status"] == "FAIL"  # +20 %: sizes are checked within 10 %
    assert by.loc["over/n_splits", "tol"] == pytest.approx(1.0)
    assert by.loc["near/n_splits", "status"] == "pass"  # +9 %
    assert by.loc["unstated/n_splits", "status"] == "info"
    assert by.loc["unstated/n_splits", "note"].startswith(
        "size not matchable: the paper gives no split"
    )


def test_a_paper_without_runs_is_reported_as_such(tmp_path):
    from treebench.report.checks import run_checks
    from treebench.report.paper import paper_overview

    recs = [make_record("rf", "digits", seed=0, acc=0.9)]
    body = (
        "targets:\n  - {id: a, experiment: exp, source: T, dataset: digits, method: rf, value: "
        "90.0}\n"
    )
    silent = _paper_file(tmp_path, body, "defaults: {metric: test_accuracy}\n")
    stated = _paper_file(
        tmp_path,
        body,
        "runs_unstated: Sect. 3 gives no run count\ndefaults: {metric: test_accuracy}\n",
    )
    five = _paper_file(tmp_path, body)
    assert silent.runs_text() == "not stated (the paper file says nothing of its runs)"
    assert stated.runs_text() == "not stated: Sect. 3 gives no run count"
    assert five.runs_text() == "5 runs per number"
    rows = {
        p.runs_text(): paper_overview(p, run_checks(p.targets, frame(recs)), 0)[0]["runs"]
        for p in (silent, stated, five)
    }
    assert list(rows.values()) == ["not stated", "not stated", 5]
    md = _index_md(tmp_path, frame(recs), [stated])
    assert "**Runs:** not stated: Sect. 3 gives no run count." in md
    assert "| runs" in md.split("## Overview")[1].split("\n\n")[2]
