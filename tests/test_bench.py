"""`treebench bench --quick`.

Outputs, columns, and ratios computed from the same run's CART rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from treebench import bench
from treebench.bench.sections import _load_previous
from treebench.bench.write import _run_line
from treebench.cli import app


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    res = CliRunner().invoke(
        app,
        [
            "bench",
            "--quick",
            "--methods",
            "rf",
            "--datasets",
            "digits",
            "--sections",
            "main,inference",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    return out


def test_outputs_and_columns(quick_run):
    md = (quick_run / "BENCHMARKS.md").read_text()
    for col in (
        "fit s (median [min, max])",
        "fit × CART",
        "predict/s (median [min, max])",
        "predict × CART",
        "peak RSS MB",
        "traced MB",
        "split evals",
        # with the load the run recorded (test_machine_note_follows_the_recorded_load)
        "**Machine**: ",
        "load average",
        "Inference target",
    ):
        assert col in md
    assert (quick_run / "docs" / "bench" / "overview.png").stat().st_size > 0
    raw = pd.read_csv(quick_run / "docs" / "bench" / "bench_raw.csv")
    assert list(raw.columns) == bench.RAW_COLUMNS
    summary = pd.read_csv(quick_run / "docs" / "bench" / "bench_summary.csv")
    assert list(summary.columns) == bench.SUMMARY_COLUMNS
    assert set(summary["method"]) == {"cart", "rf"}  # CART, the reference, is always added
    assert (summary["status"] == "ok").all()
    assert (summary[["fit_s_median", "predict_sps_median", "split_evals"]] > 0).all().all()
    # --quick reuses one worker per method: heap the allocator kept can make a job's growth read 0
    assert (summary["peak_rss_mb"] >= 0).all()


def test_ratios_come_from_the_same_runs_cart(quick_run):
    raw = pd.read_csv(quick_run / "docs" / "bench" / "bench_raw.csv")
    summary = pd.read_csv(quick_run / "docs" / "bench" / "bench_summary.csv").set_index("method")
    timed = raw[(raw["section"] == "main") & ~raw["warmup"]]
    fit, pred = bench.basis_columns(bench.load_config(quick=True)["time_basis"])
    med = timed.groupby("method")[[fit, pred, "split_evals"]].median()
    np.testing.assert_allclose(
        summary.loc["rf", "fit_ratio_cart"], med.loc["rf", fit] / med.loc["cart", fit]
    )
    np.testing.assert_allclose(
        summary.loc["rf", "predict_ratio_cart"], med.loc["rf", pred] / med.loc["cart", pred]
    )
    assert summary.loc["cart", "fit_ratio_cart"] == 1.0
    # the warm-up row of every method exists and carries the traced memory
    warm = raw[(raw["section"] == "main") & raw["warmup"]]
    assert set(warm["method"]) == {"cart", "rf"} and (warm["peak_traced_mb"] > 0).all()
    inf = raw[raw["section"] == "inference"]
    assert list(inf["method"]) == ["cart"] and (inf["depth"] <= 10).all()


def test_slopes_and_flags():
    n = np.array([1000, 2000, 4000, 8000])
    assert bench.fit_slope(n, 1e-3 * n**1.5) == pytest.approx(1.5)
    assert bench.fit_slope(
        [2, 3, 4, 5], 0.01 * 2.0 ** np.array([2, 3, 4, 5]), "exp2"
    ) == pytest.approx(1.0)
    assert np.isnan(bench.fit_slope([1, 2], [1, 2]))
    rows = [
        {
            "section": "scaling_n",
            "method": "m",
            "status": "ok",
            "param": "n_samples",
            "value": v,
            "fit_s": 1e-6 * v**2,
        }
        for v in n
    ]
    cfg = {"scaling": {"tolerance": 0.3}}
    s = bench.scaling_summary(pd.DataFrame(rows), cfg, {"m": {"expected": {"n_samples": 1.1}}})
    assert s.loc[0, "slope"] == pytest.approx(2.0) and s.loc[0, "flag"]
    s = bench.scaling_summary(pd.DataFrame(rows), cfg, {"m": {"expected": {"n_samples": 2.0}}})
    assert not s.loc[0, "flag"]


def test_worker_timeout_and_failure():
    w = bench.Worker()
    try:
        assert w.call(_boom, (), timeout=30)["status"] == "failed"
        assert w.alive  # an exception is reported, the worker goes on
        assert w.call(_sleep, (5,), timeout=0.5)["status"] == "timeout"
        assert not w.alive
    finally:
        w.close()


def test_every_registered_classifier_has_bench_settings():
    cfg = bench.load_config()
    for m in bench.registered_methods():
        s = bench.method_settings(m, cfg)
        assert isinstance(s["params"], dict)


def _boom():
    raise RuntimeError("boom")


def _sleep(s):
    import time

    time.sleep(s)
    return {}


def test_update_reruns_one_section_and_keeps_the_others(quick_run):
    before = pd.read_csv(quick_run / "docs" / "bench" / "bench_raw.csv")
    args = ["bench", "--quick", "--methods", "rf", "--datasets", "digits"]
    res = CliRunner().invoke(
        app, [*args, "--sections", "inference", "--update", "--out", str(quick_run)]
    )
    assert res.exit_code == 0, res.output
    after = pd.read_csv(quick_run / "docs" / "bench" / "bench_raw.csv")
    main_b, main_a = (t[t["section"] == "main"] for t in (before, after))
    np.testing.assert_allclose(main_a["fit_cpu_s"], main_b["fit_cpu_s"])
    assert (after["section"] == "inference").sum() == (before["section"] == "inference").sum()
    md = (quick_run / "BENCHMARKS.md").read_text()
    assert "* main:" in md and "* inference:" in md


def test_quick_writes_under_outputs_not_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path / "o"))
    args = ["bench", "--quick", "--methods", "cart", "--datasets", "digits", "--sections", "main"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "bench" / "BENCHMARKS.md").is_file()
    assert (tmp_path / "o" / "bench" / "docs" / "bench" / "bench_raw.csv").is_file()
    assert not (tmp_path / "BENCHMARKS.md").exists() and not (tmp_path / "docs").exists()


def test_only_update_or_out_write_committed_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path / "o"))
    assert bench.output_dir() == tmp_path / "o" / "bench"
    assert bench.output_dir(update=True) == Path(".")
    assert bench.output_dir(tmp_path / "x", update=True) == tmp_path / "x"
    monkeypatch.delenv("TREEBENCH_OUTPUTS")
    assert bench.output_dir() == Path("outputs") / "bench"


def test_store_section_writes_its_table_plot_and_csv(tmp_path):
    """The store section at a tiny size: output files and columns, not timings."""
    import yaml

    from treebench.bench.config import CONF_DIR
    from treebench.bench.store import STORE_COLUMNS

    cfg = yaml.safe_load((Path(CONF_DIR) / "bench" / "bench.yaml").read_text())
    cfg["quick"]["store"] = {"sizes": [200], "commands": ["status", "collect"], "plan_jobs": 4}
    conf = tmp_path / "bench.yaml"
    conf.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    files = bench.run(
        methods=["cart"], sections=["store"], quick=True, out=out, config=str(conf), log=print
    )
    st = pd.read_csv(out / "docs" / "bench" / "store.csv")
    assert list(st.columns) == STORE_COLUMNS
    assert set(zip(st["command"], st["cache"], strict=True)) == {
        (c, k) for c in ("status", "collect") for k in ("cold", "warm")
    } | {("plan", "cold")}
    assert (st["records"] == 200).all() and (st["returncode"] == 0).all()
    assert (st["wall_s"] > 0).all() and (st["peak_rss_mb"] > 0).all()
    assert files["store"].stat().st_size > 0
    md = (out / "BENCHMARKS.md").read_text()
    assert "## Result store scale" in md and "peak RSS MB (warm)" in md
    assert "not measured here" in md  # no 100,000-record store in a test
    # a store-less run keeps the section (--update) without re-measuring it
    bench.run(
        methods=["cart"], sections=["none"], quick=True, out=out, config=str(conf), update=True
    )
    assert "## Result store scale" in (out / "BENCHMARKS.md").read_text()


def test_plan_sweep_records_carry_the_keys_the_sweep_plans(tmp_path):
    """The store section's ``plan`` times a sweep whose jobs are all done.

    The synthetic records must have exactly the keys the sweeper computes, or it would time
    launching instead of skipping.
    """
    from tests.conftest import run_cli
    from treebench.bench.store import add_sweep_records, plan_args

    assert add_sweep_records(tmp_path / "out" / "store", 6) == 6  # 2 depths x 3 seeds, 1 fold
    res = run_cli(plan_args(6), tmp_path, {"TREEBENCH_OUTPUTS": str(tmp_path / "out")})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "6 done already, 0 to launch" in res.stdout


def test_make_store_clones_with_fresh_keys_and_failures(tmp_path):
    from treebench.bench.store import make_store
    from treebench.results import Store

    base = [
        {"key": "x" * 24, "experiment": "ci", "status": "ok", "method": "cart", "metrics": {"a": 1}}
    ]
    make_store(tmp_path / "s", 60, base)
    recs = list(Store(tmp_path / "s").records())
    assert len(recs) == 60 and len({r["key"] for r in recs}) == 60
    assert sum(r["status"] == "failed" for r in recs) == 2
    assert sum("store_bench" in (r.get("also_experiments") or []) for r in recs) == 3


def test_quick_profile_keeps_one_worker_per_method(quick_run):
    """--quick keeps one worker per method for every section (first-call costs paid once).

    Forked after every section's data are loaded; data loaded later get a new worker.
    """
    from treebench.bench.sections import Bench
    from treebench.bench.worker import DATA

    cfg = bench.load_config(quick=True)
    assert (
        cfg["reuse_workers"] and cfg["first_call"] and not bench.load_config().get("reuse_workers")
    )
    b = Bench(cfg, ["cart"], ["digits"], log=lambda *a: None)
    try:
        b.preload(["main", "scaling"])
        w = b.worker("cart")
        assert b._first_calls == {w: "cart"}  # started, not awaited
        assert w.alive and b.worker("cart") is w
        b.release(w)
        assert w.alive and b.worker("cart") is w  # kept for the next section
        b.data("digits", 50, 20)  # loaded after the fork: the kept worker cannot see it
        w2 = b.worker("cart")
        assert w2 is not w and not w.alive and w2.alive
        row = b._run(w2, "main", "cart", ("digits", 50, 20), b.params("cart", "digits"))
        assert row["status"] == "ok" and row["n_train"] == 50
        assert not b._first_calls  # the job waited for the first call
    finally:
        b.close()
        for key in [k for k in DATA if k == ("digits", 50, 20)]:
            del DATA[key]
    assert not w2.alive
    md = (quick_run / "BENCHMARKS.md").read_text()
    assert "one per method, kept for every section" in md and "fits and predicts 100 rows" in md


def test_quick_profile_settings_leave_the_full_profile_alone():
    """The quick profile's shortcuts are its own.

    The full profile keeps its predict budgets, its process sections on their own and its outputs
    written after every section.
    """
    full, quick = bench.load_config(), bench.load_config(quick=True)
    assert full["inference"]["predict_min_seconds"] == 0.5
    assert full["threading"]["predict_min_seconds"] == 0.2
    assert not full.get("overlap_processes") and full.get("partial_writes", True)
    assert not full.get("first_call")  # the series and threads sections warm up their workers
    assert quick["overlap_processes"] and not quick["partial_writes"]
    assert quick["inference"]["predict_min_seconds"] < 0.5


def test_process_sections_run_beside_the_others(tmp_path, monkeypatch):
    """With ``overlap_processes`` (--quick) the store and startup sections run in their own worker.

    Started with the run; their rows, run records and log lines come back to the run, whose outputs
    are written once (``partial_writes: false``).
    """
    import json

    import yaml

    from treebench.bench import sections
    from treebench.bench.config import CONF_DIR

    cfg = yaml.safe_load((Path(CONF_DIR) / "bench" / "bench.yaml").read_text())
    cfg["quick"]["store"] = {"sizes": [200], "commands": ["status"], "plan_jobs": 4}
    cfg["quick"]["startup"] = {"repeats": 1, "commands": ["--help"], "floor": False}
    conf = tmp_path / "bench.yaml"
    conf.write_text(yaml.safe_dump(cfg))

    b = sections.Bench(bench.load_config(True, conf), ["cart"], [], processes=["startup"])
    try:
        assert b._aside is not None and b._aside.alive  # started with the run
        b.startup()
        assert b._aside is None and [r["command"] for r in b.startup_rows] == ["treebench --help"]
        assert set(b.aside_runs["startup"]) == {"started", "finished", "load_start", "load_end"}
    finally:
        b.close()

    writes = []
    write = sections.write_outputs
    monkeypatch.setattr(sections, "write_outputs", lambda *a: writes.append(1) or write(*a))
    out, lines = tmp_path / "out", []
    args = {"methods": ["cart"], "quick": True, "out": out, "config": str(conf)}
    bench.run(**args, sections=["main", "store", "startup"], log=lines.append)
    assert len(writes) == 1
    d = out / "docs" / "bench"
    assert list(json.loads((d / "runs.json").read_text())) == ["main", "store", "startup"]
    st = pd.read_csv(d / "store.csv")
    assert set(zip(st["command"], st["cache"], strict=True)) == {
        ("status", "cold"),
        ("status", "warm"),
        ("plan", "cold"),
    }
    assert (st["returncode"] == 0).all()
    su = pd.read_csv(d / "startup.csv")
    assert list(su["command"]) == ["treebench --help"] and (su["returncode"] == 0).all()
    assert any(ln.startswith("[store]") for ln in lines)  # logged in the worker, shown by the run
    assert any(ln.startswith("startup: --help") for ln in lines)
    md = (out / "BENCHMARKS.md").read_text()
    assert "the store and startup section(s) ran beside the other sections" in md
    assert "## Result store scale" in md and "* startup:" in md


def test_machine_note_follows_the_recorded_load():
    from treebench.bench.write import _machine_load

    quiet = {"main": {"load_start": "0.50, 0.40, 0.30", "load_end": "1.90, 0.5, 0.4"}}
    assert "at most 1.90" in _machine_load(quiet, 2) and "little other work" in _machine_load(
        quiet, 2
    )
    busy = {**quiet, "store": {"load_start": "6.10, 5.0, 4.0", "load_end": None}}
    assert "up to 6.10, above the core count" in _machine_load(busy, 2)
    assert _machine_load({"main": {}}, 2) == "load not recorded"


def test_startup_miss_states_the_yardstick_share(tmp_path):
    """A run that misses the startup target is reported with the share of scikit-learn's import.

    How much of its time to the first fit is scikit-learn's import alone (the yardstick row),
    measured in the same section.
    """
    from types import SimpleNamespace

    from treebench.bench.startup import FLOOR
    from treebench.bench.write import _startup

    def row(command, wall, first=None):
        ok = (first if first is not None else wall) <= 1.0
        return {
            "command": command,
            "runs": 5,
            "wall_s_min": wall,
            "wall_s_median": wall,
            "cpu_s_min": wall,
            "first_work_wall_s_min": first,
            "first_work_cpu_s_min": first,
            "returncode": 0,
            "meets_target": ok,
            "heavy_imports": "",
        }

    rows = [row("treebench --help", 0.14), row("treebench run cart iris", 1.35, 1.28)]
    b = SimpleNamespace(cfg={}, startup_rows=[*rows, row(FLOOR, 0.985)])
    md = _startup(b, tmp_path)
    assert (
        "**MISSED** by `treebench run cart iris` (fit at 1.28 s: the yardstick, scikit-learn's "
        "import alone, takes 0.985 s of it, treebench's own start-up 0.3 s)"
    ) in md
    assert "yardstick alone is above" not in md
    b.startup_rows = [*rows, row(FLOOR, 1.16)]  # a slow machine: the yardstick misses too
    md = _startup(b, tmp_path)
    assert "**MISSED** by `treebench run cart iris` (fit at 1.28 s" in md
    assert f"`{FLOOR}`" not in md.split("**MISSED**")[1].split("\n")[0]  # not a treebench command
    assert "the yardstick alone is above the target on this machine (1.16 s)" in md
    b.startup_rows = rows[:1]
    assert "**met** by every command" in _startup(b, tmp_path)


def test_repeated_measurements_time_the_whole_fit(monkeypatch):
    """Repeats of one fit in one worker each do all its work.

    Methods' in-process caches (ReDT's soft-label memo) are emptied before every timed fit.
    """
    from sklearn.datasets import load_iris

    import treebench.methods.redt.estimator as redt
    from treebench.bench.data import BenchData
    from treebench.bench.measure import measure
    from treebench.bench.worker import DATA

    X, y = load_iris(return_X_y=True)
    X = X.astype(np.float32)
    monkeypatch.setitem(DATA, ("iris", "test"), BenchData("iris", X[::2], y[::2], X[1::2], y[1::2]))
    calls = []
    real = redt.jackknife_soft_labels
    monkeypatch.setattr(
        redt, "jackknife_soft_labels", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    params = {"alpha": 0.5, "n_repeats": 1, "teacher_params": {"n_estimators": 5}}
    for _ in range(2):
        out = measure("redt", params, ("iris", "test"), 1, 0, predict=False)
        assert out.get("status", "ok") == "ok", out
    assert len(calls) == 2


def test_small_section_fits_tunes_once_and_states_the_slope(tmp_path, monkeypatch):
    """The small section.

    Each method on the pooled datasets of the stated sizes, ratios to the same run's CART, one
    tune=small job, One-Stage's slope; the full profile fits the methods' own defaults, --quick
    (this smoke run) their bench profiles.
    """
    from tests.data.tb_data_helpers import MIRROR

    if MIRROR is None:
        pytest.skip("not in mirror: german and satimage need the mirror (set TREEBENCH_MIRROR)")
    monkeypatch.setenv("TREEBENCH_MIRROR", str(MIRROR))
    assert bench.load_config()["small"]["params"] == "defaults"
    cfg = bench.load_config(quick=True)
    assert cfg["small"]["params"] == "bench"
    # the method's own defaults, not the bench profile's 3 epochs
    assert bench.method_settings("onestage", cfg, "iris")["params"]["max_epochs"] == 3
    assert bench.config.default_params("onestage", cfg, "iris")["max_epochs"] is None
    out = tmp_path / "b"
    bench.run(methods=["onestage"], sections=["small"], quick=True, out=out, log=print)
    d = out / "docs" / "bench"
    raw = pd.read_csv(d / "bench_raw.csv")
    sm = pd.read_csv(d / "small.csv")
    sizes = cfg["small"]["datasets"]
    fits = sm[sm["measure"] == "fit"]
    assert set(fits["method"]) == {"cart", "onestage"} and (fits["status"] == "ok").all()
    assert dict(zip(fits["dataset"], fits["n_rows"], strict=False)) == sizes
    timed = raw[(raw["section"] == "small") & ~raw["warmup"].astype(bool)]
    for ds in sizes:  # ratios from this run's CART on the same rows
        med = timed[timed["dataset"] == ds].groupby("method")["fit_cpu_s"].median()
        row = fits[(fits["dataset"] == ds) & (fits["method"] == "onestage")].iloc[0]
        assert row["ratio_cart"] == pytest.approx(med["onestage"] / med["cart"])
    tune = sm[sm["measure"] == "tune=small job"]
    assert set(tune["method"]) == {"cart", "onestage"} and (tune["status"] == "ok").all()
    assert ((tune["fits"] - 1) % 3 == 0).all() and (tune["fits"] > 8 * 3).all()  # 3 inner folds
    slope = pd.read_csv(d / "small_slope.csv")
    assert list(slope["variant"]) == ["defaults"] and slope["points"].iloc[0] == 3
    assert np.isfinite(slope["slope"].iloc[0])
    md = (out / "BENCHMARKS.md").read_text()
    assert "## Small data: per-fit cost where benchmark suites live" in md
    assert "iris (150 rows): s" in md and "tune=small job on iris" in md


def _series_bench(monkeypatch, fit_seconds: dict):
    """Return a bench whose workers are stubbed: each point's fit takes ``fit_seconds[value]``."""
    cfg = bench.load_config()
    b = bench.Bench(cfg, ["cart", "gosdt"], [], log=lambda *a: None)
    measured = []

    def fake_run(w, section, m, key, params, *, param=None, value=None, record=True, **kw):
        if record:
            measured.append((m, value))
        return {"status": "ok", b.FIT: fit_seconds.get(value, 0.0)}

    monkeypatch.setattr(b, "worker", lambda m: None)
    monkeypatch.setattr(b, "release", lambda w: None)
    monkeypatch.setattr(b, "_run", fake_run)
    return b, measured


def test_a_method_declared_time_cap_lets_its_series_grow_past_a_fixed_cost(monkeypatch):
    # GOSDT's threshold guessing costs ~7 s per fit whatever the depth: with the section's 2 s cap
    # its depth series stopped after depth 1; its own cap (bench.yaml) lets the curve show
    fits = {1: 7.2, 2: 7.2, 3: 31.6, 4: 90.0, 5: 1000.0}
    b, measured = _series_bench(monkeypatch, fits)
    section_cap = b.cfg["param_scaling"]["time_cap"]
    assert section_cap == 2 and b.time_cap("cart", section_cap) == 2.0
    cap = b.time_cap("gosdt", section_cap)
    assert cap == 60.0
    pts = [("depth_budget", v, {}, None) for v in fits]
    b._series("scaling_param", "gosdt", None, pts, cap)
    assert measured == [("gosdt", 1), ("gosdt", 2), ("gosdt", 3), ("gosdt", 4)]
    measured.clear()
    b._series("scaling_param", "cart", None, pts, b.time_cap("cart", section_cap))
    assert measured == [("cart", 1)]  # the section's cap for a method without its own


def _raw(section, method, values):
    return [
        {"section": section, "method": method, "status": "ok", "value": v, "fit_cpu_s": 0.1 * v}
        for v in values
    ]


def test_update_of_some_methods_keeps_the_other_methods_rows_and_says_so(tmp_path):
    d = tmp_path / "docs" / "bench"
    d.mkdir(parents=True)
    rows = _raw("scaling_n", "rf", [1, 2, 3]) + _raw("scaling_n", "gosdt", [1])
    rows += _raw("scaling_param", "gosdt", [1]) + _raw("main", "rf", [0])
    pd.DataFrame(rows, columns=bench.RAW_COLUMNS).to_csv(d / "bench_raw.csv", index=False)
    earlier = {"command": "treebench bench --update", "started": "2026-12-02 03:11 UTC"}
    earlier.update(finished="03:26 UTC", load_start="1", load_end="2", git_sha="37c2d87aaaa")
    (d / "runs.json").write_text(json.dumps({"scaling": earlier, "main": earlier}))
    b = bench.Bench(bench.load_config(), ["cart", "gosdt"], [], log=lambda *a: None)
    _load_previous(b, tmp_path, ["scaling"], ["cart", "gosdt"])
    kept = pd.DataFrame(b.rows)
    assert sorted(zip(kept["section"], kept["method"], strict=True)) == [
        ("main", "rf"),
        ("scaling_n", "rf"),
        ("scaling_n", "rf"),
        ("scaling_n", "rf"),
    ]
    assert b.settings["rf"]["expected"] == {"n_samples": 1.1}  # its table row keeps its expectation
    assert b.runs["scaling"] == earlier
    run = {**earlier, "command": "treebench bench --methods gosdt", "methods": "cart, gosdt"}
    line = _run_line("scaling", {**run, "others_from": earlier})
    assert "`treebench bench --methods gosdt`" in line
    assert "it re-ran cart, gosdt only, the other methods' rows are from `treebench bench " in line
    assert line.count("\n") == 1
    # the main table's ratios are against the same run's CART: a partial update is refused
    with pytest.raises(ValueError, match="re-measures every method"):
        bench.run(methods=["gosdt"], sections=["main"], update=True, out=tmp_path, quick=True)
