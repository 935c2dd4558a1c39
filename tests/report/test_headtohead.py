"""The head-to-head report (docs/headtohead.md) from synthetic records.

W/T/L, coverage, tuned vs defaults.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from tests.report.records import frame, make_record
from treebench.config import CONF_DIR
from treebench.report.headtohead import (
    LOSS,
    TIE,
    UNTESTED,
    WIN,
    coverage,
    experiment_plan,
    headtohead_markdown,
    outcomes,
    paired_outcome,
    pareto_front,
    score_rows,
    tuned_vs_defaults,
    wtl_counts,
)
from treebench.results.ledger import records_hash

PLAN = {
    "methods": ["alpha", "beta", "gamma"],
    "datasets": ["d1", "d2", "d3", "r1"],
    "seeds": [0, 1, 2],
}
#: small per-seed offsets: differences with variance, none of them zero
JITTER = (0.004, -0.003, 0.001)


def rec(method, dataset, seed, score, ref, *, tuned=True, leaves=10, profile="full", **kw):
    """Return a headtohead record with its same-size reference.

    And a tuning field when ``tuned``.
    """
    reg = dataset.startswith("r")
    r = make_record(
        method,
        dataset,
        seed=seed,
        experiment="headtohead",
        profile=profile,
        acc=score,
        r2=score if reg else None,
        n_leaves=leaves,
        **kw,
    )
    if r["status"] != "ok":
        return r
    metric = "test_r2" if reg else "test_accuracy"
    r["reference"] = {
        "method": "cart",
        "match": {"max_leaf_nodes": "n_leaves"},
        "params": {"max_leaf_nodes": leaves},
        "metrics": {metric: ref},
        "size": {"n_leaves": leaves, "n_splits": leaves - 1},
        "fit_seconds": 0.001,
    }
    if tuned:
        r["tuning"] = {
            "strategy": "halving_random",
            "n_candidates": 8,
            "cv": {"n_splits": 3},
            "seconds": 2.0,
            "best_params": {},
        }
    return r


def _records():
    """Alpha beats its reference everywhere, beta loses, gamma is noise around it.

    Beta lacks seed 2 on d3; gamma cannot do the regression set r1 (skipped).
    """
    recs = []
    for i, ds in enumerate(["d1", "d2", "d3", "r1"]):
        for s in range(3):
            base = 0.7 + 0.05 * i
            j = JITTER[s]
            recs.append(rec("alpha", ds, s, base + 0.05 + j, base, leaves=8))
            if not (ds == "d3" and s == 2):
                recs.append(rec("beta", ds, s, base - 0.06 + j, base, leaves=50))
            if ds == "r1":
                recs.append(
                    rec("gamma", ds, s, 0, 0, status="skipped", reason="classification only")
                )
            else:
                noise = (0.03, -0.02, -0.01)[s]
                recs.append(rec("gamma", ds, s, base + noise, base, leaves=20))
    return recs


# ------------------------------------------------------------------------------------- the rule


def test_paired_outcome_is_a_paired_t_test_with_the_stated_rule():
    a, b = [0.80, 0.82, 0.81], [0.75, 0.76, 0.77]
    res = paired_outcome(a, b)
    assert res["outcome"] == WIN and res["n"] == 3
    assert res["p"] == pytest.approx(sps.ttest_rel(a, b).pvalue)
    assert res["mean"] == pytest.approx(np.mean(np.subtract(a, b)))
    assert paired_outcome(b, a)["outcome"] == LOSS
    noisy = paired_outcome([0.80, 0.70, 0.78], [0.75, 0.76, 0.77])  # p > 0.05
    assert noisy["outcome"] == TIE and noisy["p"] > 0.05
    # identical differences: the sign decides; none at all is a tie
    assert paired_outcome([0.6, 0.7, 0.8], [0.5, 0.6, 0.7])["outcome"] == WIN
    assert paired_outcome([0.5, 0.6], [0.6, 0.7])["outcome"] == LOSS
    same = paired_outcome([0.5, 0.6], [0.5, 0.6])
    assert same["outcome"] == TIE and np.isnan(same["p"])
    # one pair is not tested; a missing reference drops its seed
    assert paired_outcome([0.9], [0.1])["outcome"] == UNTESTED
    assert paired_outcome([0.9, 0.8], [0.1, np.nan])["n"] == 1


def test_pareto_front_keeps_the_non_dominated_points():
    # (leaves, score): (10, .8) and (100, .9) are on it; (50, .7) and (10, .75) are dominated
    mask = pareto_front([10, 100, 50, 10], [0.8, 0.9, 0.7, 0.75])
    assert mask.tolist() == [True, True, False, False]
    assert pareto_front([10, np.nan, 5], [0.8, 0.99, np.nan]).tolist() == [True, False, False]


# ------------------------------------------------------------------------------ the main sections


def test_wins_ties_losses_per_method():
    res = outcomes(score_rows(frame(_records())))
    counts = wtl_counts(res).set_index("method")
    assert counts.loc["alpha", [WIN, TIE, LOSS, UNTESTED, "datasets"]].tolist() == [4, 0, 0, 0, 4]
    assert counts.loc["beta", [WIN, TIE, LOSS, UNTESTED, "datasets"]].tolist() == [0, 0, 4, 0, 4]
    # gamma: differences 3, -2, -1 points: mean 0, no significance; r1 is skipped (not a cell)
    assert counts.loc["gamma", [WIN, TIE, LOSS, UNTESTED, "datasets"]].tolist() == [0, 3, 0, 0, 3]
    beta_d3 = res[(res["method"] == "beta") & (res["dataset"] == "d3")].iloc[0]
    assert beta_d3["n"] == 2  # the seeds it has, labelled incomplete in the page


def test_coverage_labels_incomplete_skipped_and_missing_cells():
    table, missing = coverage(score_rows(frame(_records())), PLAN)
    table = table.set_index("method")
    assert table.loc["alpha"].tolist() == ["3", "3", "3", "3"]
    assert table.loc["beta", "d3"] == "2 of 3 seeds"
    assert table.loc["gamma", "r1"] == "n/a"
    assert missing == ["beta on d3: seed 2"]
    # a method of the plan without records: every cell missing, listed
    table, missing = coverage(
        score_rows(frame(_records())), {**PLAN, "methods": [*PLAN["methods"], "delta"]}
    )
    assert table.set_index("method").loc["delta"].tolist() == ["—"] * 4
    assert "delta on r1: seeds 0, 1, 2" in missing


def test_side_configurations_and_other_experiments_are_left_out():
    recs = _records()
    side = rec("alpha", "d1", 0, 0.1, 0.9)
    side["overrides"] = ["experiment=headtohead", "method=alpha", "method.params.depth=2"]
    other = rec("alpha", "d1", 1, 0.1, 0.9)
    other["experiment"] = "ci"
    sweep = rec("alpha", "d2", 0, 0.1, 0.9, profile="reduced")
    sweep["overrides"] = ["experiment=headtohead", "profile=reduced", "method=alpha", "tune=small"]
    sweep["overrides"] += ["threads=4", "seed=0"]  # no other configuration
    split = rec("alpha", "d1", 2, 0.1, 0.9)
    split["overrides"] = ["experiment=headtohead", "split=kfold5"]
    rows = score_rows(frame([*recs, side, other, sweep, split]))
    assert len(rows) == len(recs) + 2  # the sweep's run has the full parameters: in both profiles
    assert (rows["profile"] == "reduced").sum() == 1


def test_tuned_vs_defaults_counts_on_shared_seeds():
    """alpha: untuned loses d1 by 3 points and ties d2; tuned wins d1 and ties d2.

    An untuned seed without a tuned twin (3) and another profile's records do not enter.
    """
    recs = []
    for s in range(3):
        j = JITTER[s]
        recs.append(rec("alpha", "d1", s, 0.77 + j, 0.80, tuned=False, profile="reduced"))
        recs.append(rec("alpha", "d1", s, 0.85 + j, 0.80, profile="reduced"))
        noise = (0.03, -0.02, -0.01)[s]
        recs.append(rec("alpha", "d2", s, 0.70 + noise, 0.70, tuned=False, profile="reduced"))
        recs.append(rec("alpha", "d2", s, 0.71 + noise, 0.70, profile="reduced"))
        recs.append(rec("beta", "d1", s, 0.70 + j, 0.80, tuned=False, profile="reduced"))
        recs.append(rec("beta", "d1", s, 0.60 + j, 0.80, profile="reduced"))
    recs.append(rec("alpha", "d1", 3, 0.10, 0.80, tuned=False, profile="reduced"))
    recs.append(rec("alpha", "d1", 4, 0.10, 0.80, tuned=False))  # full profile, never tuned
    summary, detail = tuned_vs_defaults(score_rows(frame(recs)))
    s = summary.set_index("method")
    assert s.loc["alpha", "datasets"] == 2 and s.loc["alpha", "seeds each"] == "3"
    assert s.loc["alpha", "beats or ties, untuned"] == 1
    assert s.loc["alpha", "beats or ties, tuned"] == 2
    assert s.loc["alpha", "largest loss untuned (pts)"] == pytest.approx(
        3.0 - 100 * np.mean(JITTER)
    )
    assert s.loc["alpha", "on (untuned)"] == "d1"
    assert s.loc["alpha", "largest loss tuned (pts)"] == 0.0
    assert bool(s.loc["alpha", "tuned ≥ untuned"]) and bool(s.loc["alpha", "tuned loss ≤ 2 pts"])
    assert (
        s.loc["beta", "beats or ties, untuned"] == 0 and s.loc["beta", "beats or ties, tuned"] == 0
    )
    assert s.loc["beta", "largest loss tuned (pts)"] == pytest.approx(20.0 - 100 * np.mean(JITTER))
    assert not bool(s.loc["beta", "tuned loss ≤ 2 pts"])
    d = detail.set_index(["method", "dataset"])
    assert d.loc[("alpha", "d1"), "seeds"] == "0,1,2"
    assert (d.loc[("alpha", "d1"), "untuned"], d.loc[("alpha", "d1"), "tuned"]) == (LOSS, WIN)
    assert set(summary["profile"]) == {"reduced"}


# ------------------------------------------------------------------------------------- the page


def test_page_sections_figures_and_determinism(tmp_path):
    df = frame(_records())
    a = headtohead_markdown(df, None, stamp="test records", figures_dir=tmp_path / "a")
    b = headtohead_markdown(df, None, stamp="test records", figures_dir=tmp_path / "b")
    assert a == b
    for part in (
        "from test records",
        "## Coverage",
        "2 of 3 seeds",
        "beta on d3: seed 2",
        "### d1 (classification)",
        "### r1 (regression)",
        "![d1: test score vs leaves, Pareto front](headtohead/pareto_d1.png)",
        "## Critical-difference diagrams",
        "Datasets (2): d1, d2.",  # d3 is incomplete for beta
        "ttest_rel",
        "| alpha    |     4 |     0 |      0 |          0 |          4 |",
        "No (method, dataset, seed) has records both with and without tuning yet",
    ):
        assert part in a, part
    names = sorted(p.name for p in (tmp_path / "a").glob("*.png"))
    assert names == [
        "cd_classification.png",
        "pareto_d1.png",
        "pareto_d2.png",
        "pareto_d3.png",
        "pareto_r1.png",
    ]
    assert "gamma on r1" not in a and "Missing: 1 cells" in a  # skipped: n/a, not missing
    assert "other settings with ok records: none." in a
    for n in names:  # byte-identical figures
        assert (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes(), n
    # regression: only alpha and beta do it, too few methods for a diagram
    assert (
        "Not computed over complete cells: needs >= 3 methods complete on >= 2 datasets (have 2"
        in a
    )
    assert "Provisional ranking" not in a  # no complete-cell gap to fill on classification


def test_page_before_any_run_says_so(tmp_path):
    old = tmp_path / "stale.png"
    old.write_bytes(b"x")
    text = headtohead_markdown(frame([]), CONF_DIR, figures_dir=tmp_path)
    assert "**Not run yet.**" in text and "(13 methods × 15 datasets × 5 seeds)" in text
    assert not old.exists()  # the report's folder holds only what it draws


def test_plan_comes_from_the_experiment_config():
    full = experiment_plan(CONF_DIR, "headtohead", "full")
    assert len(full["methods"]) == 13 and len(full["datasets"]) == 15
    assert full["seeds"] == [0, 1, 2, 3, 4]
    reduced = experiment_plan(CONF_DIR, "headtohead", "reduced")
    assert reduced["datasets"] == ["wine_red", "dna", "satimage", "cmc"]
    assert reduced["seeds"] == [0, 1, 2]
    assert experiment_plan(CONF_DIR, "no_such_experiment", "full") is None


def test_cli_writes_the_page_from_the_ledger(tmp_path, monkeypatch):
    """``report --headtohead`` reads the ledger only.

    Stamps the page with its records' hash and draws the figures beside it; it refuses --no-ledger
    and --reproduction with it.
    """
    from typer.testing import CliRunner

    from treebench.cli import app
    from treebench.results.ledger import Ledger

    recs = _records()
    Ledger(tmp_path / "results").add(recs)
    monkeypatch.setenv("TREEBENCH_LEDGER", str(tmp_path / "results"))
    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path / "o"))
    out = tmp_path / "docs" / "headtohead.md"
    r = CliRunner().invoke(app, ["report", "--headtohead", "--out", str(out)])
    assert r.exit_code == 0, r.output
    stored = Ledger(tmp_path / "results").records()
    text = out.read_text()
    assert f"records ({len(recs)} records, content hash {records_hash(stored)})" in text
    # the plan is the experiment config's (5 seeds in the full profile), not the records'
    assert "2 of 5 seeds" in text and "3 of 5 seeds" in text and "3 of 3" not in text
    assert (tmp_path / "docs" / "headtohead" / "pareto_d1.png").exists()
    for bad in (["--no-ledger"], ["--reproduction"]):
        r = CliRunner().invoke(app, ["report", "--headtohead", *bad, "--out", str(out)])
        assert r.exit_code == 2, r.output


def test_records_hash_names_the_records_not_their_order():
    recs = _records()[:5]
    assert records_hash(recs) == records_hash(list(reversed(recs)))
    assert records_hash(recs) != records_hash(recs[:4])


def test_a_reduced_run_with_the_full_parameters_counts_in_the_full_profile():
    """The reduced plan's job with the full plan's parameters counts in both profiles.

    It is the same job (the full sweep skips it as done); one with other parameters counts only in
    its own.
    """
    same = {"depth": 4}
    recs = [
        rec("alpha", "d1", 0, 0.8, 0.7, params=same),
        rec("alpha", "d1", 1, 0.8, 0.7, params=same, profile="reduced"),
        rec("alpha", "d1", 2, 0.8, 0.7, params={"depth": 2}, profile="reduced"),
        rec("beta", "d1", 0, 0.8, 0.7, params=same, profile="reduced"),  # no full run to match
    ]
    rows = score_rows(frame(recs))
    full = rows[rows["profile"] == "full"]
    assert sorted(zip(full["method"], full["seed"], strict=True)) == [("alpha", 0), ("alpha", 1)]
    reduced = rows[rows["profile"] == "reduced"]
    assert sorted(zip(reduced["method"], reduced["seed"], strict=True)) == [
        ("alpha", 1),
        ("alpha", 2),
        ("beta", 0),
    ]
    # a reduced run that a full sweep found done (its full_plan_of) counts in both, whatever its
    # parameters say
    found = rec("beta", "d1", 1, 0.8, 0.7, params=same, profile="reduced")
    rows = score_rows(frame([*recs, {**found, "full_plan_of": ["headtohead"]}]))
    beta = rows[(rows["method"] == "beta") & (rows["seed"] == 1)]
    assert sorted(zip(beta["profile"], beta["shared"], strict=True)) == [
        ("full", True),
        ("reduced", False),
    ]


def test_provisional_ranking_uses_the_seeds_every_method_has():
    """Incomplete cells.

    The diagram ranks each dataset's mean over the seeds all methods share there, labelled
    provisional; seeds only some methods have do not enter.
    """
    recs = []
    for ds, scores in {"d1": (0.9, 0.8, 0.7), "d2": (0.8, 0.9, 0.6), "d3": (0.9, 0.7, 0.8)}.items():
        for m, sc in zip(("alpha", "beta", "gamma"), scores, strict=True):
            recs.append(rec(m, ds, 0, sc, 0.5))
        recs.append(rec("alpha", ds, 1, 0.1, 0.5))  # alpha alone has seed 1: left out
    md = headtohead_markdown(frame(recs), None, stamp="t")
    part = md.split("### classification")[1].split("##")[0]
    assert "Not computed over complete cells" in part
    assert "**Provisional ranking** (1 of 2 seeds per dataset)" in part  # plan: seeds 0, 1
    ranks = {
        ln.split("|")[1].strip(): float(ln.split("|")[2])
        for ln in part.splitlines()
        if ln.startswith("| ") and ln.split("|")[2].strip()[:1].isdigit()
    }
    assert ranks == pytest.approx(
        {"alpha": 4 / 3, "beta": 2.0, "gamma": 8 / 3}, abs=1e-3
    )  # 3 decimals
