"""check: pass / FAIL / skipped / info on synthetic records with the runner's schema."""

from __future__ import annotations

import pytest

from tests.report.records import frame, make_record
from treebench.report.checks import (
    FAIL,
    INFO,
    PASS,
    SKIP,
    Availability,
    display_frame,
    n_failed,
    run_checks,
)
from treebench.report.targets import TargetError, load_paper


@pytest.fixture
def paper(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("""
paper: toy
units: percent
defaults: {metric: test_accuracy, tolerance: 2.0, size_rtol: 0.5}
unavailable: {protein: "not in the mirror"}
targets:
  - {id: acc, experiment: exp, source: T1, dataset: digits, method: cart, value: 90.0, sd: 1.0, n_splits: 100}
  - {id: ge, experiment: exp, source: T1, dataset: digits, method: rf, value: 95.0, op: ">="}
  - {id: variant, experiment: exp, source: T1, dataset: digits, method: redt, where: {teacher: rf}, value: 80.0}
  - {id: best, experiment: exp, source: T2, dataset: iris, method: hinge_forest, best_over: [n_estimators], best: min, metric: test_error, value: 5.0}
  - {id: mirror, experiment: exp, source: T1, dataset: protein, method: cart, value: 50.0}
  - {id: nomethod, experiment: exp, source: T1, dataset: digits, method: tnt, value: 50.0}
  - {id: noconf, experiment: exp, source: T1, dataset: letter, method: cart, value: 50.0}
  - {id: ref, experiment: exp, source: T1, dataset: digits, method: adf, value: 50.0, check: false}
  - {id: rel, kind: relation, experiment: exp, lhs: rf, rhs: cart, op: ">=", require: all}
  - {id: fr, kind: stat, experiment: exp, test: friedman, groups: [cart, rf, gbdt], expect: significant}
""")
    return load_paper(p)


AVAIL = dict(
    datasets={"digits", "iris", "wine", "protein"},
    methods={"cart", "rf", "redt", "hinge_forest", "gbdt"},
)


def _by_id(res):
    return {r["id"]: r for _, r in res.iterrows()}


def _toy_paper(tmp_path, targets: str, metric: str = "test_accuracy", name: str = "p.yaml"):
    """Return a paper file of the given ``targets:`` YAML lines, loaded (raises on a bad target)."""
    path = tmp_path / name
    path.write_text(
        f"paper: toy\nunits: percent\ndefaults: {{metric: {metric}}}\ntargets:\n{targets}"
    )
    return load_paper(path)


def _cart(acc, n=3, **kw):
    return [
        make_record("cart", "digits", seed=s, acc=acc, n_splits=100, experiment="exp", **kw)
        for s in range(n)
    ]


def test_pass_fail_and_skip_reasons(paper):
    recs = _cart(0.895) + [
        make_record("rf", "digits", seed=s, acc=0.92, experiment="exp") for s in range(3)
    ]
    res = run_checks(
        paper.targets, frame(recs), Availability(**AVAIL, unavailable=paper.unavailable)
    )
    r = _by_id(res)
    assert r["acc"]["status"] == PASS and r["acc"]["n"] == 3
    assert r["acc"]["delta"] == pytest.approx(-0.005)
    assert r["acc/n_splits"]["status"] == PASS
    # rf 92 < 95 - 2 → FAIL (one-sided target)
    assert r["ge"]["status"] == FAIL
    assert "not in mirror" in r["mirror"]["note"] and r["mirror"]["status"] == SKIP
    assert "method 'tnt' not implemented" in r["nomethod"]["note"]
    assert "no dataset config 'letter'" in r["noconf"]["note"]
    assert r["variant"]["status"] == SKIP and "not run" in r["variant"]["note"]
    assert r["ref"]["status"] == SKIP
    assert r["rel"]["status"] == PASS
    assert "not run" in r["fr"]["note"]  # gbdt missing
    assert n_failed(res) == 1


def test_worsened_result_fails_readably(paper):
    res = run_checks(paper.targets[:1], frame(_cart(0.19)), Availability(**AVAIL))
    r = res.iloc[0]
    assert r["status"] == FAIL and r["delta"] == pytest.approx(-0.71)
    row = display_frame(res).iloc[0]
    assert row["paper"] == "90.00 ± 1.00" and row["ours"].startswith("19.00")
    assert row["Δ"] == "-71.00" and row["tolerance"] == "± 2.00" and row["status"] == FAIL


def test_reduced_profile_never_passes_and_full_is_preferred(paper):
    t = paper.targets[:1]
    reduced = _cart(0.895, profile="reduced")  # within tolerance, but not the paper's protocol
    res = run_checks(t, frame(reduced))
    r = res.iloc[0]
    assert r["status"] == INFO and r["profile"] == "reduced"
    assert r["note"].startswith("reduced: reduced profile")
    assert r["tol"] == pytest.approx(0.02)  # the same tolerance: never widened
    res = run_checks(t, frame(reduced + _cart(0.80, profile="full")))
    assert res.iloc[0]["profile"] == "full" and res.iloc[0]["status"] == FAIL


def test_fewer_runs_than_the_paper_is_info_with_the_count(tmp_path):
    p = _toy_paper(
        tmp_path,
        "  - {id: a, experiment: exp, dataset: digits, method: cart, value: 90.0, runs: 10}\n",
    )
    runs = _cart(0.90, n=3)
    for rec, wall in zip(runs, (600.0, 900.0, 1200.0), strict=True):
        rec["wall_seconds"] = wall
    r = run_checks(p.targets, frame(runs)).iloc[0]  # a run took 15 core-minutes on average
    assert r["status"] == INFO and r["n"] == 3
    assert r["note"] == "reduced: 3 of 10 runs (15 core-minutes a run)"
    runs[0]["threads"] = 2  # 1,200 core-seconds: 18.3 core-minutes a run
    r = run_checks(p.targets, frame(runs)).iloc[0]
    assert r["note"] == "reduced: 3 of 10 runs (18 core-minutes a run)"
    for rec in runs:
        rec["wall_seconds"] *= 10  # an hour and more: in core-hours
    r = run_checks(p.targets, frame(runs)).iloc[0]
    assert r["note"] == "reduced: 3 of 10 runs (3.1 core-hours a run)"
    r = run_checks(p.targets, frame(_cart(0.90, n=10))).iloc[0]
    assert r["status"] == PASS and r["note"] == ""


def test_fail_and_skip_carry_the_paper_files_reason(tmp_path):
    p = _toy_paper(
        tmp_path,
        "  - {id: a, experiment: exp, dataset: digits, method: cart, value: 90.0,"
        " deviation: 'USPS scaling differs'}\n"
        "  - {id: b, experiment: exp, dataset: digits, method: cart, value: 50.0}\n"
        "  - {id: c, experiment: exp, dataset: wine, method: cart, value: 90.0,"
        " why: 'costs 40 CPU-hours'}\n",
    )
    r = _by_id(run_checks(p.targets, frame(_cart(0.80))))
    assert r["a"]["status"] == FAIL and r["a"]["note"] == "USPS scaling differs"
    assert r["b"]["status"] == FAIL and r["b"]["note"] == "unexplained"
    assert r["c"]["status"] == SKIP and r["c"]["note"] == "costs 40 CPU-hours"


def test_value_set_by_config_is_info_not_pass(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, size_rtol: 0.1}\n"
        "experiments:\n  exp:\n    fixed: {n_splits: 'max_leaf_nodes = #S + 1'}\n"
        "targets:\n  - {id: a, experiment: exp, dataset: digits, method: cart, value: 90.0,"
        " n_splits: 100}\n"
    )
    r = _by_id(run_checks(load_paper(path).targets, frame(_cart(0.90))))
    assert r["a"]["status"] == PASS
    assert r["a/n_splits"]["status"] == INFO
    assert r["a/n_splits"]["note"] == "set by config: max_leaf_nodes = #S + 1"


def test_relation_states_n_and_most_means_a_strict_majority(tmp_path):
    p = _toy_paper(
        tmp_path,
        "  - {id: r, kind: relation, experiment: exp, lhs: rf, rhs: cart, op: '>=',"
        " require: most}\n",
    )
    recs = []
    for d, rf in (("digits", 0.95), ("iris", 0.80)):  # rf wins on 1 of 2: not a majority
        recs += [make_record("rf", d, seed=0, acc=rf, experiment="exp")]
        recs += [make_record("cart", d, seed=0, acc=0.90, experiment="exp")]
    r = run_checks(p.targets, frame(recs)).iloc[0]
    assert r["status"] == FAIL and r["n"] == 2
    assert r["note"].startswith("1/2 dataset hold (need most (> 50%))")


def test_relation_over_fewer_blocks_than_the_papers_claim_is_info(tmp_path):
    p = _toy_paper(
        tmp_path,
        "  - {id: r, kind: relation, experiment: exp, lhs: rf, rhs: cart, op: '>=', blocks: 3}\n",
    )
    recs = []
    for d in ("digits", "iris"):  # rf wins on both measured datasets, the claim spans 3
        recs += [make_record("rf", d, seed=0, acc=0.95, experiment="exp")]
        recs += [make_record("cart", d, seed=0, acc=0.90, experiment="exp")]
    r = run_checks(p.targets, frame(recs)).iloc[0]
    assert r["status"] == INFO and r["n"] == 2
    assert r["note"].startswith("2/2 dataset hold (need all); reduced: 2 of 3 dataset")
    recs += [make_record(m, "wine", seed=0, acc=0.9, experiment="exp") for m in ("rf", "cart")]
    r = run_checks(p.targets, frame(recs)).iloc[0]
    assert r["status"] == PASS and r["n"] == 3


def test_spearman_trend_of_the_best_value_against_a_block_column(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, runs: 2}\ntargets:\n"
        "  - {id: t, kind: stat, test: spearman, experiment: exp, lhs: onestage, x: n_features,"
        " best_of: param.validation_fraction, sign: negative, expect: any, blocks: 3}\n"
    )
    p = load_paper(path)

    def recs(best: dict, seeds=(0, 1)) -> list:
        out = []
        for d, (n_feat, best_vf) in best.items():
            for vf in (0.1, 0.3, 0.5):
                for s in seeds:
                    r = make_record(
                        "onestage",
                        d,
                        seed=s,
                        acc=0.9 if vf == best_vf else 0.8,
                        params={"validation_fraction": vf},
                        experiment="exp",
                    )
                    out.append({**r, "n_features": n_feat})
        return out

    # the best share falls as the feature count grows: rho = -1
    r = run_checks(p.targets, frame(recs({"a": (4, 0.5), "b": (20, 0.3), "c": (60, 0.1)}))).iloc[0]
    assert r["status"] == PASS and r["ours"] == pytest.approx(-1.0) and r["n"] == 3
    # the opposite trend fails
    r = run_checks(p.targets, frame(recs({"a": (4, 0.1), "b": (20, 0.3), "c": (60, 0.5)}))).iloc[0]
    assert r["status"] == FAIL and r["ours"] == pytest.approx(1.0)
    # one run per cell where the paper has two: info, saying so
    few = recs({"a": (4, 0.5), "b": (20, 0.3), "c": (60, 0.1)}, seeds=(0,))
    r = run_checks(p.targets, frame(few)).iloc[0]
    assert r["status"] == INFO and r["note"].startswith("reduced: 1 of 2 runs")
    # ... and each (dataset, share) mean the picks read is a cell short of its runs
    cells = sorted((c["cell"], c["runs"], c["of"]) for c in r["short_cells"])
    assert len(cells) == 9 and cells[0] == ("onestage[validation_fraction=0.1] · a", 1, 2)
    assert r["gaps"] == []  # nothing short but runs
    # the plan sweeps a fourth share: a best chosen among 3 of its 4 values is info, saying so
    plan = {
        "params": {"method": "onestage", "dataset": "a,b,c"},
        "rows": ["method.params.validation_fraction=0.1,0.3,0.5,0.7"],
    }
    full = frame(recs({"a": (4, 0.5), "b": (20, 0.3), "c": (60, 0.1)}))
    r = run_checks(p.targets, full, Availability(plans={"exp": plan})).iloc[0]
    assert r["status"] == INFO and r["ours"] == pytest.approx(-1.0)
    assert r["note"].startswith(
        "reduced: 3 dataset chose among fewer validation_fraction values than planned (fewest 3 of "
        "4)"
    )
    assert r["gaps"] == [
        "3 dataset chose among fewer validation_fraction values than planned (fewest 3 of 4)"
    ]
    # with the whole grid measured the verdict stands
    plan["rows"] = ["method.params.validation_fraction=0.1,0.3,0.5"]
    r = run_checks(p.targets, full, Availability(plans={"exp": plan})).iloc[0]
    assert r["status"] == PASS


def test_where_selects_param_variant(paper):
    recs = [
        make_record(
            "redt",
            "digits",
            seed=s,
            acc=0.81,
            params={"teacher": "rf", "alpha": 0.2},
            experiment="exp",
        )
        for s in range(2)
    ]
    recs += [
        make_record(
            "redt",
            "digits",
            seed=s,
            acc=0.30,
            params={"teacher": "gbdt", "alpha": 0.2},
            experiment="exp",
        )
        for s in range(2)
    ]
    t = [t for t in paper.targets if t.id == "variant"]
    r = run_checks(t, frame(recs)).iloc[0]
    assert (
        r["status"] == PASS
        and r["ours"] == pytest.approx(0.81)
        and r["method"] == "redt[teacher=rf]"
    )


def _forests(grid, seeds=2):
    """hinge_forest records on iris, ``seeds`` per (n_estimators, accuracy) of ``grid``."""
    return [
        make_record(
            "hinge_forest", "iris", seed=s, acc=acc, params={"n_estimators": n}, experiment="exp"
        )
        for n, acc in grid
        for s in range(seeds)
    ]


def test_best_over_picks_best_config(paper):
    recs = _forests([(1, 0.80), (10, 0.96), (50, 0.93)])
    t = [t for t in paper.targets if t.id == "best"]
    r = run_checks(t, frame(recs)).iloc[0]
    assert r["ours"] == pytest.approx(0.04)  # test_error derived from test_accuracy
    assert r["status"] == PASS and "n_estimators=10" in r["note"]


def test_a_best_of_configs_over_part_of_the_plans_grid_is_reduced(paper):
    """The paper picks the best of its whole grid.

    A best over fewer configs than the experiment's full plan sweeps is info ("2 of 3 configs"),
    however close, until the grid is complete.
    """
    plan = {
        "params": {},
        "rows": ["dataset=iris method=hinge_forest method.params.n_estimators=1,10,50"],
    }
    avail = Availability(**AVAIL, plans={"exp": plan})
    t = [t for t in paper.targets if t.id == "best"]
    recs = _forests
    part = run_checks(t, frame(recs([(1, 0.80), (10, 0.96)])), avail).iloc[0]
    assert part["status"] == INFO and part["note"].startswith("reduced: 2 of 3 configs")
    assert "best of 2 configs" in part["note"] and part["gaps"] == ["2 of 3 configs"]
    whole = run_checks(t, frame(recs([(1, 0.80), (10, 0.96), (50, 0.93)])), avail).iloc[0]
    assert whole["status"] == PASS and not whole["note"].startswith("reduced")
    assert whole["gaps"] == []
    # without the plan nothing is known about the grid: the verdict stands as before
    assert run_checks(t, frame(recs([(1, 0.80), (10, 0.96)]))).iloc[0]["status"] == PASS


def test_a_relation_side_best_of_part_of_the_grid_is_reduced(tmp_path):
    spec = _toy_paper(
        tmp_path,
        """  - id: best
    kind: relation
    experiment: exp
    dataset: a
    lhs: {method: m, best_over: [n_estimators], best: max}
    rhs: rf
    op: ">="
""",
    )
    plan = {
        "params": {"dataset": "a"},
        "rows": ["method=m method.params.n_estimators=1,10", "method=rf"],
    }
    avail = Availability(plans={"exp": plan})
    recs = [make_record("rf", "a", seed=s, acc=0.80, experiment="exp") for s in range(2)]
    recs += [
        make_record("m", "a", seed=s, acc=0.90, params={"n_estimators": 1}, experiment="exp")
        for s in range(2)
    ]
    r = run_checks(spec.targets, frame(recs), avail).iloc[0]
    assert r["status"] == INFO and "reduced: 1 of 2 configs" in r["note"]
    assert r["gaps"] == ["1 of 2 configs"]
    recs += [
        make_record("m", "a", seed=s, acc=0.70, params={"n_estimators": 10}, experiment="exp")
        for s in range(2)
    ]
    assert run_checks(spec.targets, frame(recs), avail).iloc[0]["status"] == PASS


def test_a_relation_block_that_chose_among_part_of_the_grid_is_reduced(tmp_path):
    """Per block (here per depth), a best-of side must have had the plan's whole grid.

    A depth whose epochs ran in part is named, though the union over depths has every epoch value; a
    ``null`` in the paper file's ``where`` matches the plan's ``null``.
    """
    spec = _toy_paper(
        tmp_path,
        """  - id: best
    kind: relation
    experiment: exp
    dataset: a
    lhs: {method: m, where: {finetune: null}, best_over: [epochs], best: max}
    rhs: cart
    op: ">="
    per: [dataset, param.max_depth]
""",
    )
    plan = {
        "params": {"dataset": "a", "method.params.max_depth": "2,4"},
        "rows": [
            "method=m method.params.epochs=20,35 method.params.finetune=0,null",
            "method=cart",
        ],
    }
    avail = Availability(plans={"exp": plan})

    def m(depth, epochs):
        params = {"max_depth": depth, "epochs": epochs, "finetune": None}
        return make_record("m", "a", acc=0.9, params=params, experiment="exp")

    recs = [
        make_record("cart", "a", acc=0.8, params={"max_depth": d}, experiment="exp") for d in (2, 4)
    ]
    recs += [m(2, 20), m(2, 35), m(4, 20)]
    r = run_checks(spec.targets, frame(recs), avail).iloc[0]
    assert r["status"] == INFO
    assert "reduced: 1 dataset/param.max_depth chose among fewer epochs (a/4)" in r["note"]
    assert r["gaps"] == ["1 dataset/param.max_depth chose among fewer epochs (a/4)"]
    r = run_checks(spec.targets, frame([*recs, m(4, 35)]), avail).iloc[0]
    assert r["status"] == PASS and "reduced" not in r["note"] and r["gaps"] == []


def test_failed_runs_fail_and_skipped_runs_skip(paper):
    t = paper.targets[:1]
    r = run_checks(
        t, frame([make_record("cart", "digits", status="failed", experiment="exp")])
    ).iloc[0]
    assert r["status"] == FAIL and "RuntimeError: boom" in r["note"]
    r = run_checks(
        t, frame([make_record("cart", "digits", status="skipped", reason="task", experiment="exp")])
    ).iloc[0]
    assert r["status"] == SKIP and "runs skipped: task" in r["note"]


def test_other_experiments_are_ignored(paper):
    r = run_checks(
        paper.targets[:1],
        frame(_cart(0.2)[:0] + [make_record("cart", "digits", acc=0.2, experiment="other")]),
    ).iloc[0]
    assert r["status"] == SKIP


def test_relation_fails_with_the_offending_blocks(paper):
    recs = []
    for ds, (a_rf, a_cart) in {
        "digits": (0.97, 0.83),
        "iris": (0.90, 0.94),
        "wine": (0.97, 0.90),
    }.items():
        recs += [make_record("rf", ds, seed=s, acc=a_rf, experiment="exp") for s in range(2)]
        recs += [make_record("cart", ds, seed=s, acc=a_cart, experiment="exp") for s in range(2)]
    rel = [t for t in paper.targets if t.id == "rel"]
    r = run_checks(rel, frame(recs)).iloc[0]
    assert (
        r["status"] == FAIL and r["ours"] == pytest.approx(2 / 3) and "fails on: iris" in r["note"]
    )


def test_stat_target_friedman(paper):
    recs = []
    for i, ds in enumerate(["a", "b", "c", "d", "e", "f"]):
        for m, base in (("cart", 0.7), ("rf", 0.8), ("gbdt", 0.9)):
            recs.append(make_record(m, ds, acc=base + 0.01 * i, experiment="exp"))
    fr = [t for t in paper.targets if t.id == "fr"]
    r = run_checks(fr, frame(recs)).iloc[0]
    # perfectly consistent ranking over 6 datasets: chi2 = 12, p = exp(-6)
    assert r["status"] == PASS and r["ours"] == pytest.approx(0.00247875, rel=1e-4) and r["n"] == 6


def test_info_targets_never_fail(paper):
    ref = [t for t in paper.targets if t.id == "ref"]
    r = run_checks(ref, frame([make_record("adf", "digits", acc=0.1, experiment="exp")])).iloc[0]
    assert r["status"] == INFO


def test_where_mismatch_is_explained(paper):
    recs = [
        make_record("redt", "digits", acc=0.8, params={"teacher_model": "rf"}, experiment="exp")
    ]
    t = [t for t in paper.targets if t.id == "variant"]
    r = run_checks(t, frame(recs)).iloc[0]
    assert r["status"] == SKIP and "1 record of redt but none match" in r["note"]
    assert "param.teacher" in r["note"] and "not recorded" in r["note"]
    recs = [make_record("redt", "digits", acc=0.8, params={"teacher": "gbdt"}, experiment="exp")]
    r = run_checks(t, frame(recs)).iloc[0]  # the parameter is recorded: that setting has not run
    assert r["status"] == SKIP and r["note"].startswith(
        "not run (experiment exp): 1 record of redt"
    )
    assert "at other settings (param.teacher has ['gbdt'])" in r["note"]


def test_nearest_picks_the_config_closest_to_a_size(tmp_path):
    p = tmp_path / "n.yaml"
    p.write_text(
        "units: percent\ntargets:\n  - {id: n, experiment: exp, dataset: digits, method: cart, "
        "nearest: {n_splits: 100}, metric: test_accuracy, value: 85.0, tolerance: 1.0}\n"
    )
    t = load_paper(p).targets
    recs = []
    for leaves, acc in ((11, 0.60), (101, 0.85), (1001, 0.95)):
        recs += [
            make_record(
                "cart",
                "digits",
                seed=s,
                acc=acc,
                n_splits=leaves - 1 + s,
                params={"max_leaf_nodes": leaves},
                experiment="exp",
            )
            for s in range(2)
        ]
    r = run_checks(t, frame(recs)).iloc[0]
    assert (
        r["status"] == PASS
        and r["ours"] == pytest.approx(0.85)
        and "max_leaf_nodes=101" in r["note"]
    )


def test_relation_on_one_block_and_against_a_constant(tmp_path):
    """``per: []`` compares the means over all selected rows; a numeric ``rhs`` is a constant."""
    targets = _toy_paper(
        tmp_path,
        """\
  - {id: avg, kind: relation, experiment: exp, per: [], margin: 0.01, op: ">=",
     lhs: {method: m, where: {max_depth: 9}}, rhs: {method: m, where: {max_depth: 6}}}
  - {id: const, kind: relation, experiment: exp, per: [], op: ">=", rhs: 0.75,
     lhs: {method: m, where: {max_depth: 9}}}
  - {id: const_per_ds, kind: relation, experiment: exp, op: ">=", rhs: 0.75, require: 0.5,
     lhs: {method: m, where: {max_depth: 9}}}
""",
    ).targets
    assert targets[1].rhs is None and targets[1].rhs_value == 0.75 and targets[1].per == ()
    recs = []
    for ds, (a9, a6) in {"a": (0.70, 0.75), "b": (0.90, 0.86)}.items():
        for s in range(2):
            recs.append(make_record("m", ds, seed=s, acc=a9, params={"max_depth": 9}))
            recs.append(make_record("m", ds, seed=s, acc=a6, params={"max_depth": 6}))
    r = _by_id(run_checks(targets, frame(recs)))
    # means 0.80 vs 0.805: within the 1 pp margin, although depth 9 loses on dataset a
    assert r["avg"]["status"] == PASS and r["avg"]["n"] == 1
    assert r["const"]["status"] == PASS and "lhs 0.8" in r["const"]["note"]
    assert r["const"]["method"] == "m[max_depth=9] >= 0.75"
    assert r["const_per_ds"]["status"] == PASS and "fails on: a" in r["const_per_ds"]["note"]
    tight = [t for t in targets if t.id == "avg"][0]
    from dataclasses import replace

    assert run_checks([replace(tight, margin=0.0)], frame(recs)).iloc[0]["status"] == FAIL


def test_relation_against_a_published_number_of_another_target(tmp_path):
    """``rhs: {value_of: id}`` compares with the number a value target of the same file prints.

    In record units, labelled with where it comes from; the metrics must agree.
    """
    head = """\
  - {id: ref/sndf, experiment: exp, dataset: digits, method: sndf, metric: test_error,
     value: 2.92, check: false}
"""
    spec = _toy_paper(
        tmp_path,
        head
        + """\
  - {id: worse, kind: relation, experiment: exp, dataset: digits, lhs: m, metric: test_error,
     op: ">", rhs: {value_of: ref/sndf}}
""",
    )
    t = next(t for t in spec.targets if t.id == "worse")
    assert t.rhs is None and t.rhs_value == pytest.approx(0.0292) and t.rhs_of == "ref/sndf"
    recs = [
        make_record("m", "digits", seed=s, acc=0.95 + 0.01 * s, experiment="exp") for s in range(2)
    ]
    r = _by_id(run_checks(spec.targets, frame(recs)))["worse"]
    # error 0.045 > 0.0292: holds, and the row names the published number it compared with
    assert r["status"] == PASS and r["method"] == "m > sndf 2.92 % (ref/sndf)"
    assert "lhs 0.045, rhs 0.0292" in r["note"]
    recs = [make_record("m", "digits", seed=s, acc=0.98, experiment="exp") for s in range(2)]
    assert _by_id(run_checks(spec.targets, frame(recs)))["worse"]["status"] == FAIL
    bad = head + "  - {id: r, kind: relation, experiment: exp, lhs: m, rhs: {value_of: %s}}\n"
    with pytest.raises(TargetError, match="is a test_error: give the relation metric: test_error"):
        _toy_paper(tmp_path, bad % "ref/sndf")
    with pytest.raises(TargetError, match="value_of 'nope' is not a value target here"):
        _toy_paper(tmp_path, bad % "nope")


def test_a_diagnostic_relation_reads_another_experiments_runs_and_says_why_it_is_not_counted(
    tmp_path,
):
    """A relation's lhs may come from another experiment (a diagnostic re-run of the baselines).

    ``check: false`` makes it info with its deviation as the reason, and its note is shown.
    """
    spec = _toy_paper(
        tmp_path,
        """\
  - {id: raw, kind: relation, experiment: diag, lhs: {method: m, experiment: exp}, rhs: b,
     check: false, deviation: "a diagnostic: b on raw inputs", note: "same splits as exp"}
""",
    )
    recs = [make_record("m", "digits", seed=s, acc=0.9, experiment="exp") for s in range(2)]
    recs += [make_record("b", "digits", seed=s, acc=0.8, experiment="diag") for s in range(2)]
    recs += [make_record("b", "digits", seed=s, acc=0.95, experiment="exp") for s in range(2)]
    r = _by_id(run_checks(spec.targets, frame(recs)))["raw"]
    # m (exp) 0.90 >= b (diag) 0.80 holds; exp's own b (0.95) is not read
    assert r["status"] == INFO and r["ours"] == 1.0
    assert r["note"].startswith("1/1 dataset hold")
    assert "a diagnostic: b on raw inputs" in r["note"] and "same splits as exp" in r["note"]


def test_largest_compares_the_largest_runs_of_each_block(tmp_path):
    """``largest: n_estimators`` keeps, per dataset.

    Only the runs with the most trees (forests of different sizes are not averaged together); a
    failed larger run does not count.
    """
    spec = _toy_paper(
        tmp_path,
        """\
  - {id: plain, kind: relation, experiment: exp, lhs: e2edf, rhs: rf}
  - id: big
    kind: relation
    experiment: exp
    lhs: {method: e2edf, largest: n_estimators}
    rhs: {method: rf, largest: n_estimators}
""",
    )
    big = next(t for t in spec.targets if t.id == "big")
    assert big.lhs.largest == "param.n_estimators"
    assert big.lhs.label() == "e2edf[largest n_estimators]"
    recs = []
    for ds, sizes in {"usps": {1: 0.80, 10: 0.94}, "mnist": {1: 0.90, 3: 0.96}}.items():
        recs += [
            make_record("e2edf", ds, seed=s, acc=a, params={"n_estimators": n}, experiment="exp")
            for n, a in sizes.items()
            for s in range(2)
        ]
        recs += [
            make_record("rf", ds, seed=0, acc=0.93, params={"n_estimators": n}, experiment="exp")
            for n in (10, 100)
        ]
    recs.append(
        make_record(
            "e2edf",
            "usps",
            acc=0.1,
            params={"n_estimators": 100},
            status="failed",
            experiment="exp",
        )
    )
    res = _by_id(run_checks(spec.targets, frame(recs)))
    # averaged over sizes, USPS e2edf is (0.80 + 0.94) / 2 = 0.87 < 0.93: fails
    assert res["plain"]["status"] == FAIL and "usps" in res["plain"]["note"]
    # the 10-tree USPS and 3-tree MNIST forests against the 100-tree RF: both hold
    assert res["big"]["status"] == PASS and res["big"]["ours"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="largest"):
        _toy_paper(
            tmp_path,
            "  - {id: x, kind: relation, experiment: exp, lhs: {method: a, largest: 3}, rhs: b}\n",
            name="bad.yaml",
        )


def test_best_over_selector_compares_the_best_config_of_each_block(tmp_path):
    """``best_over: [n_estimators, max_depth]`` in a selector keeps, per dataset.

    Only the runs of the configuration with the best mean ``best_by`` (default: the relation's
    metric), as a paper that reports the best of a grid does; failed runs do not count towards a
    config's mean.
    """
    spec = _toy_paper(
        tmp_path,
        """\
  - {id: pooled, kind: relation, experiment: exp, lhs: m, rhs: rf, op: "<="}
  - id: best
    kind: relation
    experiment: exp
    lhs: {method: m, best_over: [n_estimators, max_depth], best: min}
    rhs: rf
    op: "<="
  - id: best_acc
    kind: relation
    experiment: exp
    metric: test_error
    lhs: {method: m, best_over: [n_estimators, max_depth], best: max, best_by: test_accuracy}
    rhs: rf
    op: "<="
""",
        metric="test_error",
    )
    best = next(t for t in spec.targets if t.id == "best")
    assert best.lhs.best_over == ("param.n_estimators", "param.max_depth")
    assert best.lhs.best_by == "test_error" and best.lhs.best == "min"
    assert best.lhs.label() == "m[best n_estimators/max_depth by min test_error]"
    grid = {  # dataset -> (trees, depth) -> accuracy per seed
        "a": {(1, 1): [0.60, 0.62], (10, 3): [0.86, 0.88], (10, 5): [0.84, 0.80]},
        "b": {(1, 1): [0.70, 0.70], (10, 3): [0.75, 0.77], (10, 5): [0.90, 0.92]},
    }
    recs = [
        make_record("m", ds, seed=s, acc=acc, params={"n_estimators": t, "max_depth": d})
        for ds, cfgs in grid.items()
        for (t, d), accs in cfgs.items()
        for s, acc in enumerate(accs)
    ]
    recs += [make_record("rf", ds, acc=0.85) for ds in grid]
    # a failed run of a config that would otherwise look best is not counted
    recs.append(
        make_record(
            "m", "a", seed=9, acc=0.99, status="failed", params={"n_estimators": 1, "max_depth": 7}
        )
    )
    df = frame(recs)
    res = _by_id(run_checks(spec.targets, df))
    # pooled over the grid, m is worse than RF (0.85) on both datasets
    assert res["pooled"]["status"] == FAIL
    # the best config per dataset: a -> 10/3 (error 0.13), b -> 10/5 (0.09); both <= RF's 0.15
    assert res["best"]["status"] == PASS and res["best"]["ours"] == pytest.approx(1.0)
    assert res["best_acc"]["status"] == PASS
    from treebench.report.select import add_derived, per_block_means

    means = per_block_means(add_derived(df), best.lhs, "test_error", ("dataset",), "exp")
    assert means["a"] == pytest.approx(0.13) and means["b"] == pytest.approx(0.09)
    for sel, msg in [
        ("{method: m, best_over: [n_estimators]}", "best: min or max"),
        ("{method: m, best: min}", "only go with"),
        ("{method: m, best_over: 3, best: min}", "best_over"),
    ]:
        with pytest.raises(ValueError, match=msg):
            _toy_paper(
                tmp_path,
                f"  - {{id: x, kind: relation, experiment: exp, lhs: {sel}, rhs: b}}\n",
                metric="test_error",
                name="bad.yaml",
            )


def test_test_score_compares_accuracy_and_r2_in_one_relation(tmp_path):
    """``test_score`` is accuracy on classification rows and R² on regression rows."""
    (t,) = _toy_paper(
        tmp_path,
        """\
  - {id: mixed, kind: relation, experiment: exp, lhs: m, rhs: cart, op: ">=", require: 1.0}
""",
        metric="test_score",
    ).targets
    recs = []
    for s in range(2):
        recs.append(make_record("m", "clf", seed=s, acc=0.80))
        recs.append(make_record("cart", "clf", seed=s, acc=0.75))
        recs.append(make_record("m", "reg", seed=s, r2=0.50))
        recs.append(make_record("cart", "reg", seed=s, r2=0.60))
    r = run_checks([t], frame(recs)).iloc[0]
    assert r["status"] == FAIL and r["n"] == 2 and "fails on: reg" in r["note"]
    recs += [make_record("m", "reg", seed=s, r2=0.70) for s in (2, 3)]  # mean 0.60: holds
    assert run_checks([t], frame(recs)).iloc[0]["status"] == PASS


def test_nemenyi_claim_holds_only_when_lhs_differs_from_every_group(tmp_path):
    p = _toy_paper(
        tmp_path,
        "  - {id: n, kind: stat, experiment: exp, test: nemenyi, lhs: rf,"
        " groups: [cart, gbdt, rf], expect: significant}\n",
    )
    recs = []
    for i in range(12):  # rf best everywhere, cart and gbdt tie around each other
        d = f"d{i}"
        recs += [make_record("rf", d, acc=0.95, experiment="exp")]
        recs += [make_record("cart", d, acc=0.80 + 0.01 * (i % 2), experiment="exp")]
        recs += [make_record("gbdt", d, acc=0.81 - 0.01 * (i % 2), experiment="exp")]
    r = run_checks(p.targets, frame(recs)).iloc[0]
    assert r["status"] == PASS and r["n"] == 12 and r["ours"] < 0.05
    assert "mean rank 1, N=12" in r["note"]
    p2 = _toy_paper(
        tmp_path,
        "  - {id: n, kind: stat, experiment: exp, test: nemenyi, lhs: cart,"
        " groups: [cart, gbdt, rf], expect: significant}\n",
        name="q.yaml",
    )
    r = run_checks(p2.targets, frame(recs)).iloc[0]  # cart vs gbdt do not differ
    assert r["status"] == FAIL and r["ours"] > 0.05


def test_best_config_can_be_picked_on_validation_and_says_so(tmp_path):
    p = _toy_paper(
        tmp_path,
        "  - {id: t, experiment: exp, dataset: digits, method: rf, best_over: [n_estimators],"
        " best: max, value: 90.0, tolerance: 50}\n"
        "  - {id: v, experiment: exp, dataset: digits, method: rf, best_over: [n_estimators],"
        " best: min, best_by: info.val_loss, value: 90.0, tolerance: 50}\n"
        "  - {id: m, experiment: exp, dataset: digits, method: rf, best_over: [n_estimators],"
        " best: min, best_by: info.missing, value: 90.0, tolerance: 50}\n",
    )
    recs = []
    for n, acc, val in ((10, 0.95, 0.9), (50, 0.90, 0.1)):  # test and validation disagree
        for s in range(2):
            r = make_record("rf", "digits", seed=s, acc=acc, params={"n_estimators": n})
            r["info"] = {"val_loss": val}
            recs.append(r)
    r = _by_id(run_checks(p.targets, frame(recs)))
    assert r["t"]["ours"] == pytest.approx(0.95) and "selected on test" in r["t"]["note"]
    assert r["v"]["ours"] == pytest.approx(0.90)
    assert "selected on info.val_loss): n_estimators=50" in r["v"]["note"]
    assert r["m"]["status"] == SKIP and "best_by column info.missing not recorded" in r["m"]["note"]


def test_equal_runs_tie_in_any_row_order(tmp_path):
    """Means do not depend on the rows' order.

    Two methods with the same accuracies in another order tie exactly (a float sum in row order
    gives 0.6000000000000001 for one of them), so a ``>=`` relation holds and a rank test sees the
    tie.
    """
    from treebench.report.select import exact_mean, per_block_means
    from treebench.report.targets import Selector

    accs = [0.1, 0.2, 0.3]
    assert sum(accs) != sum(accs[::-1])  # the order effect this guards against
    recs = [make_record("a", "d", seed=s, acc=v) for s, v in enumerate(accs)]
    recs += [make_record("b", "d", seed=s, acc=v) for s, v in enumerate(accs[::-1])]
    df = frame(recs)
    a, b = (
        per_block_means(df, Selector(m), "test_accuracy", ("dataset",), "exp")["d"] for m in "ab"
    )
    assert a == b == exact_mean(accs) == 0.6 / 3
    spec = _toy_paper(
        tmp_path,
        "  - {id: ge, kind: relation, experiment: exp, lhs: a, rhs: b, op: '>=', require: all}\n"
        "  - {id: le, kind: relation, experiment: exp, lhs: b, rhs: a, op: '>=', require: all}\n",
    )
    res = _by_id(run_checks(spec.targets, df))
    assert res["ge"]["status"] == PASS and res["le"]["status"] == PASS


def test_comparison_over_fewer_runs_than_the_paper_is_info(tmp_path):
    """A relation or rank test short of the paper's runs in some block is info, never a verdict.

    Its means rest on fewer runs than the paper's (``runs``): shown as info naming those blocks,
    never as a pass or FAIL; with every run it is judged.
    """
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, runs: 3}\ntargets:\n"
        "  - {id: ge, kind: relation, experiment: exp, lhs: a, rhs: b, op: '>=', require: all}\n"
        "  - {id: w, kind: stat, test: wilcoxon, experiment: exp, lhs: a, rhs: b,"
        " expect: significant}\n"
    )
    spec = load_paper(path)
    seeds = {"d1": 3, "d2": 1, "d3": 3}
    recs = [
        make_record(m, ds, seed=s, acc=acc)
        for ds, n in seeds.items()
        for s in range(n)
        for m, acc in (("a", 0.9), ("b", 0.8))
    ]
    res = _by_id(run_checks(spec.targets, frame(recs)))
    for tid in ("ge", "w"):
        assert res[tid]["status"] == INFO
        assert "reduced: 1 of 3 runs (d2)" in res[tid]["note"]
    recs += [
        make_record(m, "d2", seed=s, acc=acc) for s in (1, 2) for m, acc in (("a", 0.9), ("b", 0.8))
    ]
    res = _by_id(run_checks(spec.targets, frame(recs)))
    assert res["ge"]["status"] == PASS and "reduced" not in res["ge"]["note"]
    assert res["w"]["status"] == FAIL  # three pairs: no Wilcoxon p below 0.05


def test_configs_pooled_in_one_mean_are_one_run_not_several(tmp_path):
    """A value over several configs of one seed (forest sizes, say) has one run.

    With the paper's runs: 3 it is info "reduced: 1 of 3 runs", however many records the mean pools.
    """
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, runs: 3, tolerance: 5}\n"
        "targets:\n  - {id: v, experiment: exp, dataset: d, method: a, value: 90}\n"
    )
    spec = load_paper(path)
    sizes = [make_record("a", "d", params={"n_estimators": e}, acc=0.9) for e in (1, 3, 5, 10)]
    for rec in sizes:
        rec["wall_seconds"] = 60.0  # the run is the 4 fits: 4 core-minutes
    res = _by_id(run_checks(spec.targets, frame(sizes)))["v"]
    assert (res["status"], res["n"]) == (INFO, 4)
    assert res["note"] == (
        "reduced: 1 of 3 runs (4 core-minutes a run); pools n_estimators in {1, 10, 3, 5}"
    )
    # a setting one record leaves at the method's default is named too
    mixed = [make_record("a", "d", seed=0, acc=0.9)]
    mixed += [make_record("a", "d", seed=s, params={"step": "secant"}, acc=0.9) for s in (1, 2)]
    res = _by_id(run_checks(spec.targets, frame(mixed)))["v"]
    assert (res["status"], res["note"]) == (PASS, "pools step in {secant, unset}")
    folds = [make_record("a", "d", fold=f, acc=0.9) for f in range(3)]  # 3 folds of a seed: 3 runs
    res = _by_id(run_checks(spec.targets, frame(folds)))["v"]
    assert (res["status"], res["n"], res["note"]) == (PASS, 3, "")


def test_a_relation_states_its_own_runs(tmp_path):
    """``runs`` on a relation (the paper's runs behind its claim) works as the file default does."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy}\ntargets:\n"
        "  - {id: ge, kind: relation, experiment: exp, lhs: a, rhs: b, op: '>=', require: all,"
        " runs: 3}\n"
    )
    recs = [make_record(m, "d1", acc=acc) for m, acc in (("a", 0.9), ("b", 0.8))]
    res = _by_id(run_checks(load_paper(path).targets, frame(recs)))["ge"]
    assert res["status"] == INFO and "reduced: 1 of 3 runs (d1)" in res["note"]


def test_a_quoted_competitor_number_is_reference_not_a_missing_method(tmp_path):
    """A paper quotes another method's number beside its own (``check: false``).

    The report says it is a reference number, not that a method is "not implemented yet" or a run is
    missing.
    """
    spec = _toy_paper(
        tmp_path,
        "  - {id: quoted, experiment: exp, source: 'Table 3 (Schulter 2013)', dataset: iris,"
        " method: adf, value: 0.97, check: false}\n"
        "  - {id: ours, experiment: exp, dataset: iris, method: sndf, value: 0.97}\n",
    )
    res = _by_id(run_checks(spec.targets, frame([]), Availability(**AVAIL)))
    assert res["quoted"]["status"] == SKIP
    assert res["quoted"]["note"] == (
        "reference only: Table 3 (Schulter 2013), quoted beside the paper's (adf is not a method "
        "here)"
    )
    # a checked target of a method the registry lacks still says so
    assert res["ours"]["note"] == "method 'sndf' not implemented yet"


def test_a_claim_at_a_size_not_run_yet_is_checked_at_the_largest_run_labelled(tmp_path):
    """``short_of``: the paper's forest size has not run (too costly so far).

    So the claim is checked at the largest smaller size run, on both sides that set it, and labelled
    reduced.
    """
    spec = _toy_paper(
        tmp_path,
        """  - id: beats
    kind: relation
    experiment: exp
    dataset: iris
    lhs: {method: hinge_forest, where: {n_estimators: 80}}
    rhs: {method: gbdt, where: {n_estimators: 80}}
    short_of: n_estimators
""",
    )

    def recs(method, sizes, acc):
        return [
            make_record(
                method, "iris", seed=s, acc=acc, params={"n_estimators": n}, experiment="exp"
            )
            for n in sizes
            for s in range(2)
        ]

    df = frame(recs("hinge_forest", (1, 10), 0.95) + recs("gbdt", (1, 10, 80), 0.90))
    r = run_checks(spec.targets, df).iloc[0]
    assert r["status"] == INFO and r["ours"] == 1.0
    assert r["method"] == "hinge_forest[n_estimators=10] >= gbdt[n_estimators=10]"
    assert "reduced: at 10 of the paper's 80 n_estimators (the largest run)" in r["note"]
    # once the paper's size has run, it is checked there
    df = frame(recs("hinge_forest", (1, 10, 80), 0.95) + recs("gbdt", (1, 10, 80), 0.90))
    r = run_checks(spec.targets, df).iloc[0]
    assert r["status"] == PASS and "n_estimators=80" in r["method"]
    # nothing smaller has run either: not run
    r = run_checks(spec.targets, frame(recs("gbdt", (80,), 0.9)), Availability(**AVAIL)).iloc[0]
    assert r["status"] == SKIP and r["note"].startswith("not run")


def test_curves_are_compared_at_equal_size_read_off_the_lhs_curve(tmp_path):
    """``at: n_splits``.

    Each CART size is compared with TnT's curve read at that size (linear in log size between TnT's
    neighbouring configs); a size beyond TnT's range is not compared.
    """
    spec = _toy_paper(
        tmp_path,
        """  - id: above
    kind: relation
    experiment: exp
    lhs: tnt
    rhs: cart
    at: n_splits
    runs: 2
    require: 0.5
""",
    )

    def curve(method, param, points, seeds=(0, 1)):
        return [
            make_record(
                method,
                "digits",
                seed=s,
                acc=acc,
                n_splits=size,
                params={param: v},
                experiment="exp",
            )
            for v, (size, acc) in enumerate(points)
            for s in seeds
        ]

    # two C values give the same 100-split graph: one point at their mean, 0.90
    tnt = curve("tnt", "ccp_alpha", [(10, 0.70), (100, 0.88), (100, 0.92), (1000, 0.94)])
    # at 31.6 splits TnT reads 0.80 (half way in log size); at 300: 0.90 + 0.04 * log10(3) = 0.919
    # two CART sizes capped at 300 splits (the data's full tree, say): one point, at their mean 0.93
    cart = curve(
        "cart", "max_leaf_nodes", [(31.6227766, 0.79), (300, 0.92), (300, 0.94), (5000, 0.99)]
    )
    r = run_checks(spec.targets, frame(tnt + cart)).iloc[0]
    assert r["method"] == "tnt >= cart at equal n_splits"
    assert (r["status"], r["n"], r["ours"]) == (PASS, 2, 0.5)
    assert r["note"] == (
        "1/2 cart sizes hold (need >= 50%); 1 outside tnt's n_splits range, not compared; "
        "fails on: digits at 300"
    )
    # fewer runs than the paper's: info, with the count
    r = run_checks(
        spec.targets, frame(curve("tnt", "ccp_alpha", [(10, 0.7), (1000, 0.9)], (0,)) + cart)
    ).iloc[0]
    assert r["status"] == INFO  # TnT reads 0.75 at 31.6 splits now: both CART sizes win
    assert r["note"].startswith("0/2 cart sizes hold (need >= 50%); 1 outside")
    assert "reduced: 1 of 2 runs (digits)" in r["note"]
    # one C value of one seed only: the curve has as many runs as its least-run point
    extra = curve("tnt", "ccp_alpha", [(3000, 0.95)], seeds=(0,))
    extra[0]["params"]["ccp_alpha"] = 9
    r = run_checks(spec.targets, frame(tnt + extra + cart)).iloc[0]
    assert r["status"] == INFO and "reduced: 1 of 2 runs (digits)" in r["note"]
    assert [(c["cell"], c["runs"], c["of"]) for c in r["short_cells"]] == [
        ("tnt at ccp_alpha=9 · digits", 1, 2)
    ]
    # TnT ran 4 of the 5 C values the experiment's full plan sweeps: the curve is partial
    plan = {
        "params": {"dataset": "digits"},
        "rows": ["method=tnt method.params.ccp_alpha=0,1,2,3,4", "method=cart"],
    }
    r = run_checks(spec.targets, frame(tnt + cart), Availability(plans={"exp": plan})).iloc[0]
    assert r["status"] == INFO and "reduced: digits tnt 4 of 5 configs" in r["note"]
    assert r["gaps"] == ["digits tnt 4 of 5 configs"] and r["short_cells"] == []
    # no CART size inside TnT's range: nothing compared, said
    r = run_checks(spec.targets, frame(curve("tnt", "ccp_alpha", [(40, 0.8), (50, 0.8)]) + cart))
    assert r.iloc[0]["status"] == SKIP
    assert r.iloc[0]["note"] == "no cart n_splits within the range of tnt's"


def test_a_curve_relation_needs_two_curves(tmp_path):
    with pytest.raises(Exception, match="'at' compares two curves"):
        _toy_paper(
            tmp_path,
            "  - {id: c, kind: relation, experiment: exp, lhs: tnt, rhs: 0.5, at: n_splits}\n",
        )


def test_check_table_prints_selectors_as_text_not_markup(tmp_path, capsys):
    """``treebench check`` prints ``tnt[finetune_passes=3]`` whole.

    Rich would otherwise read the brackets as a style tag and print ``tnt >= tnt``.
    """
    from treebench.report.console import print_checks

    spec = _toy_paper(
        tmp_path,
        "  - {id: r, kind: relation, experiment: exp, lhs: {method: tnt, where: {finetune_passes: "
        "3}},"
        " rhs: {method: tnt, where: {finetune_passes: 0}}}\n",
    )
    print_checks(run_checks(spec.targets, frame(_cart(0.9))), "toy")
    out = capsys.readouterr().out
    assert "tnt[finetune_passes=3] >= tnt[finetune_passes=0]" in out


def test_block_names_read_as_written():
    """A block's numeric key reads as in a config (pandas makes an int column with gaps float)."""
    from treebench.report.checks import _block_name

    assert _block_name(("connect4", 5.0)) == "connect4/5"
    assert _block_name(("mnist", 0.0001)) == "mnist/0.0001"
    assert _block_name(12.0) == "12" and _block_name("usps") == "usps"
