"""The CI guards: the ratchet (no silent loosening), coverage of every method.

One colour per method.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import compose_config
from tests.report.records import frame, make_record
from treebench.methods import available_methods
from treebench.report.checks import run_checks
from treebench.report.guards import check_ratchet, guard_file, previous_version, ratchet_violations
from treebench.report.targets import TargetError, load_paper

GUARDS = """
paper: g
units: fraction
defaults: {experiment: ci, op: ">=", tolerance: 0.03, size_rtol: 0.25, profile: reduced}
targets:
  - {id: ci/cart/digits, dataset: digits, method: cart, metric: test_accuracy, value: 0.829, n_splits: 130}
  - {id: ci/cart/iris, dataset: iris, method: cart, metric: test_accuracy, value: 0.940{iris}}
  - {id: ci_depth/d2, dataset: digits, method: cart, where: {max_depth: 2}, metric: test_accuracy, value: 0.311, op: "~", tolerance: 0.03}
  - {id: ci/rf_ge_cart, kind: relation, lhs: rf, rhs: cart, metric: test_accuracy, require: all}
"""


def _file(**edits) -> str:
    """GUARDS with textual edits ``old=new`` (keys are labels; values are (old, new) pairs)."""
    text = GUARDS.replace("{iris}", edits.pop("iris", ""))
    for old, new in edits.values():
        assert old in text, old
        text = text.replace(old, new)
    return text


def _violations(**edits) -> list[str]:
    return ratchet_violations(_file(), _file(**edits))


# ------------------------------------------------------------------------------------------ ratchet


def test_unchanged_and_raised_guards_pass():
    assert _violations() == []
    assert _violations(floor=("value: 0.829", "value: 0.851")) == []
    assert (
        _violations(
            tol=(
                'value: 0.311, op: "~", tolerance: 0.03',
                'value: 0.311, op: "~", tolerance: 0.02',
            )
        )
        == []
    )
    assert _violations(iris=", tolerance: 0.01") == []  # tighter than the default 0.03


def test_lowered_floor_needs_a_reason():
    (v,) = _violations(floor=("value: 0.829", "value: 0.800"))
    assert v.startswith("ci/cart/digits: loosened without a reason") and ">= 0.77" in v
    reason = ', lowered: {from: 0.829, reason: "sklearn 1.10 changed tie-breaking"}'
    assert (
        _violations(floor=("value: 0.829, n_splits: 130", f"value: 0.800, n_splits: 130{reason}"))
        == []
    )


def test_widened_tolerance_needs_a_reason():
    band = 'value: 0.311, op: "~", tolerance: 0.03'
    (v,) = _violations(tol=(band, band.replace("tolerance: 0.03", "tolerance: 0.05")))
    assert v.startswith("ci_depth/d2: loosened without a reason") and "[0.261, 0.361]" in v
    (v,) = _violations(iris=", tolerance: 0.05")  # wider than the default it inherited
    assert v.startswith("ci/cart/iris: loosened")
    # a moved "~" band (here the size guard) lets other results pass too
    (v,) = _violations(size=("n_splits: 130", "n_splits: 150"))
    assert v.startswith("ci/cart/digits/n_splits: loosened")
    # a size field's own lowering goes on the field: n_splits: {value, lowered}
    why = 'lowered: {reason: "size_report counts merged nodes once"}'
    assert _violations(size=("n_splits: 130", f"n_splits: {{value: 150, {why}}}")) == []
    (v,) = _violations(size=("n_splits: 130", f"n_splits: 150, {why}"))  # on the entry: not it
    assert v.startswith("ci/cart/digits/n_splits: loosened")


def test_other_loosenings_need_a_reason():
    (v,) = _violations(op=("value: 0.940", "value: 0.940, check: false"))
    assert v.startswith("ci/cart/iris: loosened") and "check: false" in v
    (v,) = _violations(rel=("require: all", "require: most"))
    assert v.startswith("ci/rf_ge_cart: loosened") and "require 1 -> 0.5" in v
    (v,) = _violations(ds=("dataset: iris", "dataset: wine"))
    assert v.startswith("ci/cart/iris: loosened") and "selects other rows" in v
    gone = _violations(rm=("  - {id: ci/cart/digits", "  - {id: ci/cart/digits_old"))
    assert "ci/cart/digits: removed (keep it with check: false" in "\n".join(gone)
    assert not any(v.startswith("ci/cart/digits/n_splits:") for v in gone)  # once per entry


def test_a_reason_is_per_change():
    why = ', lowered: {from: 0.829, reason: "first"}'
    old = _file(floor=("value: 0.829, n_splits: 130", f"value: 0.800, n_splits: 130{why}"))
    again = old.replace("value: 0.800", "value: 0.780")  # lowered again, old reason left in place
    (v,) = ratchet_violations(old, again)
    assert "'lowered' is unchanged" in v
    stale = again.replace('"first"', '"second"')  # a new reason, but from names the old floor
    (v,) = ratchet_violations(old, stale)
    assert "lowered.from is 0.829 but the previous value was 0.8" in v
    assert ratchet_violations(old, stale.replace("from: 0.829", "from: 0.8")) == []


def test_lowered_is_validated_and_shown_by_check(tmp_path):
    p = tmp_path / "g.yaml"
    bad = _file(floor=("value: 0.829", 'value: 0.800, lowered: {from: 0.829, reason: ""}'))
    with pytest.raises(TargetError, match="non-empty 'reason'"):
        load_paper(p, text=bad)
    with pytest.raises(TargetError, match="lowered must be"):
        load_paper(p, text=_file(floor=("value: 0.829", "value: 0.800, lowered: oops")))
    why = ', lowered: {from: 0.829, reason: "new split protocol"}'
    spec = load_paper(
        p, text=_file(floor=("value: 0.829, n_splits: 130", f"value: 0.8, n_splits: 130{why}"))
    )
    recs = [
        make_record(
            "cart", "digits", seed=s, acc=0.81, n_splits=130, experiment="ci", profile="reduced"
        )
        for s in range(3)
    ]
    res = run_checks(spec.targets, frame(recs)).set_index("id")
    assert res.loc["ci/cart/digits", "status"] == "pass"
    assert res.loc["ci/cart/digits", "note"].startswith("lowered from 0.829: new split protocol")
    assert "lowered" not in res.loc["ci/cart/iris", "note"]


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_previous_version_from_git_history(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@t")
    _git(tmp_path, "config", "user.name", "t")
    f = tmp_path / "ci.yaml"
    f.write_text("v1\n")
    assert previous_version(f)[0] is None  # untracked
    _git(tmp_path, "add", "ci.yaml")
    _git(tmp_path, "commit", "-qm", "one")
    text, why = previous_version(f)
    assert text is None and "added there" in why
    f.write_text("v2\n")
    assert previous_version(f) == ("v1\n", "HEAD")  # the working tree differs: HEAD's version
    _git(tmp_path, "commit", "-qam", "two")
    (tmp_path / "other").write_text("x")
    _git(tmp_path, "add", "other")
    _git(tmp_path, "commit", "-qm", "three")  # does not touch ci.yaml
    text, why = previous_version(f)
    assert text == "v1\n" and why.endswith("~1")  # before the last commit that touched it


def test_ci_guards_never_loosen_silently():
    violations, against = check_ratchet()
    if violations is None:
        pytest.skip(f"no previous version of {guard_file().name} to compare with: {against}")
    assert violations == [], f"compared with {against}:\n" + "\n".join(violations)


# ----------------------------------------------------------------------------------------- coverage


def test_ci_runs_and_guards_every_registered_method():
    cfg = compose_config(["experiment=ci"], hydra_cfg=True)
    rows = [str(r).split() for r in cfg.hydra.sweeper.rows]
    variants = [v for row in rows for o in row if o.startswith("method=") for v in o[7:].split(",")]
    ran = {compose_config([f"method={v.strip()}"]).method.name for v in variants}
    assert set(available_methods()) <= ran, f"ci misses {set(available_methods()) - ran}"
    guarded = {t.select.method for t in load_paper(guard_file()).targets if t.kind == "value"}
    assert set(available_methods()) <= guarded, (
        f"no ci guard for {set(available_methods()) - guarded}"
    )


# ------------------------------------------------------------------------------------------ colours


def test_every_registered_method_has_its_own_colour():
    from treebench.report.figures import method_color, method_colors

    colors = method_colors()
    assert set(colors) == set(available_methods())
    assert len(set(colors.values())) == len(colors)
    assert method_color("not_a_method") not in colors.values()


def _figure_colours(monkeypatch, tmp_path, df, spec, targets=()) -> dict[str, str]:
    """Render ``spec`` and return series label → colour of its line, as drawn."""
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from treebench.report.figures import make_figure

    seen = {}

    def savefig(fig, *args, **kwargs):
        for ax in fig.axes:
            for c in ax.containers:
                seen[c.get_label()] = to_hex(c.lines[0].get_color())
            for c in ax.collections:  # the paper's numbers (scatter markers)
                if c.get_label().endswith("(paper)"):
                    seen[c.get_label()] = to_hex(c.get_edgecolor()[0])

    monkeypatch.setattr(Figure, "savefig", savefig)
    make_figure(df, spec, tmp_path, targets=targets, experiment="x")
    return seen


def test_a_method_has_the_same_colour_in_every_figure(monkeypatch, tmp_path):
    from treebench.report.figures import method_color

    recs = [
        make_record(m, ds, seed=s, acc=0.7 + 0.01 * s, n_splits=5 + d, params={"max_depth": d})
        for m in ("cart", "rf", "tnt", "redt")
        for ds in ("d1", "d2")
        for s in range(2)
        for d in (2, 4)
    ]
    df = frame(recs)
    spec = {"name": "a", "x": "n_splits", "y": "test_accuracy", "series": ["method"]}
    one = _figure_colours(monkeypatch, tmp_path, df, {**spec, "where": {"method": ["cart", "rf"]}})
    two = _figure_colours(monkeypatch, tmp_path, df, {**spec, "where": {"method": ["rf", "tnt"]}})
    assert set(one) == {"cart", "rf"} and set(two) == {"rf", "tnt"}
    assert one["rf"] == two["rf"] == method_color("rf") != one["cart"]
    # series of one method share its colour (told apart by marker and line style)
    three = _figure_colours(
        monkeypatch,
        tmp_path,
        df,
        {**spec, "x": "param.max_depth", "series": ["method", "param.max_depth"]},
    )
    assert three["redt[max_depth=2]"] == three["redt[max_depth=4]"] == method_color("redt")


def test_a_papers_number_is_drawn_in_its_methods_colour_under_the_figures_legend_text(
    monkeypatch, tmp_path
):
    from treebench.report.figures import method_color

    recs = [
        make_record(m, "d1", seed=s, acc=0.7 + 0.01 * s, n_splits=5, params={"max_depth": d})
        for m in ("cart", "tnt")
        for s in range(2)
        for d in (2, 4)
    ]
    paper = tmp_path / "p.yaml"
    paper.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy}\ntargets:\n"
        "  - {id: a, experiment: x, source: T, dataset: d1, method: cart, where: {max_depth: 4},"
        " value: 71.0}\n"
        "  - {id: b, experiment: x, source: T, dataset: d1, method: tnt, where: {max_depth: 4},"
        " value: 75.0}\n"
    )
    spec = {
        "name": "a",
        "x": "param.max_depth",
        "y": "test_accuracy",
        "series": ["method"],
        "labels": {"cart": "CART", "tnt": "TnT"},
    }
    drawn = _figure_colours(monkeypatch, tmp_path, frame(recs), spec, load_paper(paper).targets)
    assert drawn == {
        "CART": method_color("cart"),
        "TnT": method_color("tnt"),
        "CART (paper)": method_color("cart"),
        "TnT (paper)": method_color("tnt"),
    }


def test_a_size_set_by_config_is_info_and_needs_a_reason_to_become_so():
    fixed = 'n_splits: {value: 130, fixed: "max_leaf_nodes"}'
    (v,) = _violations(size=("n_splits: 130", fixed))
    assert "now set by config" in v
    why = 'n_splits: {value: 130, fixed: "max_leaf_nodes", lowered: {reason: "structural"}}'
    assert _violations(size=("n_splits: 130", why)) == []
    spec = load_paper("g.yaml", text=_file(size=("n_splits: 130", why)))
    by = {t.id: t for t in spec.targets}
    assert by["ci/cart/digits/n_splits"].fixed == "max_leaf_nodes"
    assert by["ci/cart/digits"].fixed == "" and by["ci/cart/digits"].lowered == {}
