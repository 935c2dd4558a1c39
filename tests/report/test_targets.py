"""Paper target files: the real ones load; bad ones give clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from treebench.methods import available_methods
from treebench.report.targets import (
    TargetError,
    experiment_names,
    for_experiment,
    load_all,
    load_paper,
)

CONF = Path(__file__).resolve().parents[2] / "treebench" / "conf"
# names fixed in HELPERS.md (datasets) and the brief (methods); adf/sndf: published-only baselines
DATASETS = set(
    """iris digits wine breast_cancer diabetes mnist fashion_mnist usps letter letter_libsvm
connect4 pendigits optdigits satimage dna protein sensit adult crx eeg bank german cmc
landcover isolet abalone abalone_reg har madelon poker ionosphere pima spectf hepatitis
wine_red wine_white bike spambase magic04 yeast ecoli glass housing airfoil fertility
messidor megawatt1 credit_default fri586 fri589 fri620""".split()
)
METHODS = set(available_methods())
REFERENCE_ONLY = {"adf", "sndf"}


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    return p


def test_all_paper_files_load_with_known_names():
    papers = load_all(CONF)
    assert {p.paper for p in papers} >= {"tnt", "redt", "e2edt", "hinge", "onestage", "ci"}
    for p in papers:
        assert p.targets, p.paper
        for t in p.targets:
            sels = [t.select, t.lhs, t.rhs, *t.groups]
            for s in filter(None, sels):
                # a method we do not have is a typo unless the target says why it is not run
                assert s.method in METHODS | REFERENCE_ONLY or t.why, (t.id, s.method)
                assert s.method not in REFERENCE_ONLY or not t.check, t.id
                assert s.dataset is None or s.dataset in DATASETS, (t.id, s.dataset)
            assert t.source or p.paper == "ci", t.id
    names = experiment_names(papers)
    assert "ci" in names and "tnt_table1" in names


def test_percent_converted_and_sizes_expanded():
    tnt = load_paper(CONF / "papers" / "tnt.yaml")
    by_id = {t.id: t for t in tnt.targets}
    t = by_id["t1/tnt/mnist"]
    assert t.units == "percent" and t.paper_value == 90.87
    assert t.value == pytest.approx(0.9087) and t.sd == pytest.approx(0.0031)
    # TnT's tolerance: within 1.0 pp, or 2 paper SDs where larger (0.62 pp here)
    assert t.tolerance == pytest.approx(0.01) and t.tolerance_abs() == pytest.approx(0.01)
    assert t.runs == 5 and t.profile == "full"
    s = by_id["t1/tnt/mnist/n_splits"]
    assert s.metric == "n_splits" and s.units == "count" and s.value == 600 and s.rtol == 0.1
    assert s.fixed.startswith("TnT's target_splits")  # #S is set by the config: info, not a pass
    w = by_id["t2/tnt_bagging/mnist/e5"].select
    assert w.where == {"param.n_estimators": 5}
    # the unlimited bagged CART's #S is what full trees grow to: measured and checked, not the
    # experiment's "set by config" budget note
    assert by_id["t2/bagged_cart/mnist/e100/n_splits"].fixed is None
    assert by_id["t2/bagged_cart/mnist/e5/n_splits"].fixed.startswith("each estimator's #S")


def test_a_size_is_fixed_or_measured_not_both(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ntargets:\n"
        "  - {id: a, experiment: e, dataset: iris, method: cart, value: 90,"
        " n_splits: {value: 9, fixed: 'budget', measured: true}}\n"
    )
    with pytest.raises(TargetError, match="either 'fixed'"):
        load_paper(path)


def test_for_experiment_merges_unavailable():
    targets, spec, unavailable = for_experiment(load_all(CONF), "tnt_table1")
    assert len(targets) > 10 and spec["tables"][0]["table"] == "Table 1"
    assert "protein" in unavailable


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "targets:\n  - {id: a, experiment: e, dataset: d, method: m, metric: test_accuracy}",
            "missing 'value'",
        ),
        (
            "targets:\n  - {id: a, experiment: e, dataset: d, method: m, value: 1, colour: red}",
            "unknown keys ['colour']",
        ),
        (
            "targets:\n  - {id: a, experiment: e, dataset: d, method: m, value: 1, metric: x, op: "
            "'=='}",
            "op must be one of",
        ),
        (
            "targets:\n  - {id: a, experiment: e, dataset: d, method: m, value: fast, metric: x}",
            "value must be a number",
        ),
        (
            "targets:\n  - {id: a, experiment: e, method: m, value: 1, metric: x}",
            "missing 'dataset'",
        ),
        (
            "targets:\n  - {id: a, kind: relation, experiment: e, lhs: a, rhs: b, metric: x, "
            "require: 2}",
            "require must be in",
        ),
        (
            "targets:\n  - {id: a, kind: stat, experiment: e, test: anova, metric: x}",
            "test must be one of",
        ),
        (
            "targets:\n  - {id: a, kind: stat, experiment: e, test: friedman, metric: x, groups: "
            "[a, b]}",
            ">= 3 selectors",
        ),
        ("units: furlongs\ntargets: []", "units"),
        (
            "targets:\n  - {id: a, experiment: e, dataset: d, method: m, value: 1, metric: x}\n"
            "  - {id: a, experiment: e, dataset: d, method: m, value: 2, metric: x}",
            "duplicate id",
        ),
        (
            "experiments:\n  e: {figures: [{name: f, x: param.a}]}\ntargets: []",
            "needs 'name', 'x' and 'y'",
        ),
        ("targets: [1, 2", "not valid YAML"),
        (
            "targets:\n  - {id: a, kind: relation, experiment: e, lhs: {methd: a}, rhs: b, metric: "
            "x}",
            "(id a): lhs: unknown keys ['methd']",
        ),
        (
            "targets:\n  - {id: a, experiment: e, dataset: d, method: m, value: 1, metric: x, "
            "runs: 0}",
            "(id a): runs must be >= 1, got 0",
        ),
        ("defaults: {op: '=='}\ntargets: []", "defaults.op: must be one of"),
    ],
)
def test_bad_files_give_clear_errors(tmp_path, body, message):
    p = _write(tmp_path, body)
    with pytest.raises(TargetError) as exc:
        load_paper(p)
    assert message in str(exc.value)
    assert str(p) in str(exc.value)


def test_error_names_the_target(tmp_path):
    p = _write(
        tmp_path,
        "targets:\n  - {id: t1/x, experiment: e, dataset: d, method: m, value: 1, metric: x, "
        "tolerance: -1}",
    )
    with pytest.raises(TargetError, match=r"targets\[0\] \(id t1/x\): tolerance must be >= 0"):
        load_paper(p)


def test_paper_setting_names_the_experiment_and_number():
    from treebench.report.targets import load_all, paper_setting

    papers = load_all()
    line = paper_setting("hinge_forest", "letter", papers)
    assert line is not None and "experiment=rhf_table3 dataset=letter" in line
    assert "Random Hinge Forest" in line
    assert paper_setting("cart", "iris", papers) is None  # only CI guards know iris


def test_papers_naming_finds_every_paper_setting():
    """The text prefilter of the line printed after a run.

    Over the files it keeps, the paper setting of every (method, dataset) pair a target names is the
    one over all files.
    """
    from treebench.report.mentions import papers_naming
    from treebench.report.targets import load_all, paper_setting

    papers = load_all()
    pairs = {(t.select.method, t.select.dataset) for p in papers for t in p.targets if t.select}
    pairs |= {("cart", "iris"), ("tnt", "nosuchdata"), ("hinge", "letter")}
    for method, dataset in sorted(pairs, key=str):
        if not (isinstance(method, str) and isinstance(dataset, str)):
            continue
        kept = papers_naming(method, dataset, exclude=("ci",))
        line = paper_setting(method, dataset, [load_paper(p) for p in kept])
        assert line == paper_setting(method, dataset, papers), (method, dataset)
    assert papers_naming("cart", "iris", exclude=("ci",)) == []  # only the CI guards name iris
    assert [p.name for p in papers_naming("hinge_forest", "letter")] == ["hinge.yaml"]


def test_short_of_needs_the_papers_size_in_lhs_where(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ntargets:\n"
        "  - {id: r, kind: relation, experiment: e, lhs: e2edf, rhs: rf, short_of: n_estimators}\n"
    )
    with pytest.raises(TargetError, match="short_of"):
        load_paper(path)
