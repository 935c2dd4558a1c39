"""Startup discipline.

What ``--help``, ``list``, ``status`` and a CART run import, the source index of the method
registrations, the YAML reader, and the bench's startup section.

No timings are asserted: the import checks run in fresh subprocesses and look at ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from treebench.methods import _catalog, _index, base

# imported by no command but the methods that need them (seconds each at startup)
METHOD_LIBS = ["torch", "numba", "matplotlib", "openml"]


def _modules_after(code: str, tmp_path: Path) -> dict:
    """Run ``code`` in a fresh interpreter (outputs in ``tmp_path``, no ledger).

    It must leave its findings in the dict ``out``, printed here as JSON.
    """
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TREEBENCH_OUTPUTS": str(tmp_path / "outputs"),
        "TREEBENCH_LEDGER": "off",
    }
    script = textwrap.dedent(code) + "\nimport json, sys\nprint('@@' + json.dumps(out))\n"
    res = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("@@")][-1]
    return json.loads(line[2:])


_HELPERS = """
import sys
from typer.testing import CliRunner
import treebench.cli as cli

HEAVY = ["torch", "numba", "matplotlib", "openml", "sklearn", "scipy.stats", "pandas",
         "pyarrow", "hydra"]
out = {}

def loaded():
    return sorted(m for m in HEAVY if m in sys.modules)

def invoke(*args):
    res = CliRunner().invoke(cli.app, list(args))
    assert res.exit_code == 0, res.output
    return res.output
"""


def test_help_list_and_status_import_no_heavy_library(tmp_path):
    out = _modules_after(
        _HELPERS
        + """
out["import"] = loaded()
invoke("--help")
out["help"] = loaded()
text = invoke("list")
out["list"] = loaded()
out["cart_row"] = [ln for ln in text.splitlines() if "│ cart " in ln][0]
out["methods"] = sorted(m for m in sys.modules if m.startswith("treebench.methods."))
invoke("status")
out["status"] = loaded()
""",
        tmp_path,
    )
    assert out["import"] == out["help"] == out["list"] == []
    assert "classification, regression" in out["cart_row"]  # the tasks, without the registry
    # no method package, not even base: the registrations' index and the requirements check
    assert out["methods"] == [
        "treebench.methods._catalog",
        "treebench.methods._index",
        "treebench.methods._requires",
    ]
    # status needs pandas (crosstab, the store's Parquet row cache), nothing else heavy
    assert set(out["status"]) <= {"pandas", "pyarrow"}


def test_a_cart_run_imports_neither_torch_nor_numba(tmp_path):
    out = _modules_after(
        _HELPERS
        + """
invoke("run", "method=cart", "dataset=iris")
out["run"] = loaded()
out["packages"] = sorted(
    m.split(".")[2] for m in sys.modules
    if m.startswith("treebench.methods.") and m.count(".") >= 3
)
from treebench.results import Store
import os
store = Store(os.path.join(os.environ["TREEBENCH_OUTPUTS"], "store"))
out["records"] = [(r["method"], r["dataset"], r["status"]) for r in store.records()]
out["targets"] = sorted(m for m in sys.modules if m.startswith("treebench.report.t"))
""",
        tmp_path,
    )
    assert out["records"] == [["cart", "iris", "ok"]]
    # no paper names cart on iris (the CI guards aside): no paper file validated, no report table
    assert out["targets"] == []
    assert not set(out["run"]) & set(METHOD_LIBS)
    assert "sklearn" in out["run"]  # CART is scikit-learn's
    assert set(out["packages"]) == {"baselines"}  # the one package that registers cart


def test_get_entry_imports_only_the_registering_package(tmp_path):
    out = _modules_after(
        """
import sys
from treebench.methods import get_entry
e = get_entry("tnt")
out = {"tasks": list(e.tasks), "cls": e.classes["classification"].__name__,
       "others": sorted(p for p in ("baselines", "e2edt", "hinge", "onestage", "redt", "sdt")
                        if f"treebench.methods.{p}" in sys.modules)}
""",
        tmp_path,
    )
    assert out == {"tasks": ["classification"], "cls": "TnTClassifier", "others": []}


def test_source_index_equals_the_registry():
    reg = base.discover()
    index = _index.scan()
    assert index.opaque == []
    assert set(index.tasks) == set(reg)
    for name, entry in reg.items():
        assert _catalog.method_tasks(name) == entry.tasks
        assert {t: cls.__module__ for t, cls in entry.classes.items()} == index.tasks[name]


def test_unknown_method_still_lists_every_choice():
    with pytest.raises(base.UnknownMethodError, match=r"Did you mean 'tnt'\?.*Choices: adaboost"):
        base.get_entry("tntt")
    with pytest.raises(KeyError):
        _catalog.method_tasks("tntt")


@pytest.fixture
def extra_methods(tmp_path, monkeypatch):
    """Two throwaway method packages on ``treebench.methods``' path.

    One registered with literal arguments (multi-line decorator, keyword task), one under a computed
    name.
    """
    import treebench.methods as methods_pkg

    root = tmp_path / "methods"
    lit, comp = root / "idx_literal", root / "idx_computed"
    for pkg in (lit, comp):
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(f"from treebench.methods.{pkg.name} import est  # noqa\n")
    (lit / "est.py").write_text(
        textwrap.dedent(
            """
            from treebench.methods import base


            @base.register(
                "idx_lit",
                task=base.REGRESSION,
                description="a description (with brackets",
            )
            class Lit:
                pass
            """
        )
    )
    (comp / "est.py").write_text(
        textwrap.dedent(
            """
            from treebench.methods.base import CLASSIFICATION, register

            NAME = "idx_" + "computed"


            @register(NAME, CLASSIFICATION)
            class Comp:
                pass
            """
        )
    )
    monkeypatch.setattr(methods_pkg, "__path__", [*methods_pkg.__path__, str(root)])
    yield
    for name in ("idx_lit", "idx_computed"):
        base._REGISTRY.pop(name, None)
    for mod in [m for m in sys.modules if m.startswith("treebench.methods.idx_")]:
        del sys.modules[mod]


def test_index_reads_literal_registrations_and_flags_computed_ones(extra_methods):
    index = _index.scan()
    assert index.tasks["idx_lit"] == {"regression": "treebench.methods.idx_literal.est"}
    assert index.opaque == ["treebench.methods.idx_computed.est"]
    assert "treebench.methods.idx_literal" not in sys.modules  # read, not imported
    assert _catalog.method_tasks("idx_lit") == ("regression",)
    # a name only an import tells: the opaque module is imported and the registry answers
    assert _catalog.method_tasks("idx_computed") == ("classification",)
    assert base.get_entry("idx_lit").classes["regression"].__name__ == "Lit"


def test_load_yaml_equals_safe_load_and_raises_the_same_error(tmp_path):
    from treebench.config import CONF_DIR, load_yaml

    files = sorted(Path(CONF_DIR).rglob("*.yaml"))
    assert len(files) > 50
    for p in files:
        text = p.read_text()
        assert load_yaml(text) == yaml.safe_load(text), p
    bad = "a: [1, 2\nb: 3\n"
    with pytest.raises(yaml.YAMLError) as want:
        yaml.safe_load(bad)
    with pytest.raises(yaml.YAMLError) as got:
        load_yaml(bad)
    assert str(got.value) == str(want.value)


def test_startup_section_rows_and_table(tmp_path):
    """The bench's startup section for ``--help`` and a CART run, once, with the yardstick.

    Columns, imports, the first fit of the run, the table.
    """
    from types import SimpleNamespace

    from treebench.bench.startup import FLOOR, STARTUP_COLUMNS, run_startup_section
    from treebench.bench.write import _startup

    env = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(REPO) + os.pathsep + env  # the child imports this checkout
    try:
        cfg = {
            "startup": {
                "repeats": 1,
                "commands": ["--help", "run cart iris"],
                "target_seconds": 1000,
            }
        }
        rows = run_startup_section(cfg, log=lambda *a: None)
    finally:
        os.environ["PYTHONPATH"] = env
    assert len(rows) == 3 and all(list(r) == STARTUP_COLUMNS for r in rows)
    row, run, floor = rows
    assert row["command"] == "treebench --help" and row["returncode"] == 0 and row["runs"] == 1
    assert row["heavy_imports"] == "" and row["meets_target"] is True
    assert 0 < row["cpu_s_min"] and 0 < row["wall_s_min"] <= row["wall_s_median"]
    assert row["first_work_wall_s_min"] is None and row["first_work_cpu_s_min"] is None
    # the run's first fit is stamped inside the process, before it ends
    assert run["command"] == "treebench run cart iris" and run["returncode"] == 0
    assert 0 < run["first_work_wall_s_min"] < run["wall_s_min"]
    assert 0 < run["first_work_cpu_s_min"] <= run["cpu_s_min"]
    assert not {"torch", "numba", "matplotlib", "openml"} & set(run["heavy_imports"].split(","))
    assert floor["command"] == FLOOR and floor["returncode"] == 0
    assert "sklearn" in floor["heavy_imports"].split(",") and floor["first_work_wall_s_min"] is None
    (tmp_path / "d").mkdir()
    md = _startup(SimpleNamespace(cfg=cfg, startup_rows=rows), tmp_path / "d")
    assert "## Startup" in md and "**met** by every command" in md
    row_md = [ln for ln in md.splitlines() if ln.startswith("| treebench --help ")]
    assert len(row_md) == 1 and row_md[0].split("|")[-2].strip() == "none"
    assert (tmp_path / "d" / "startup.csv").read_text().startswith(",".join(STARTUP_COLUMNS))


def test_numba_threads_leave_the_jobs_torch_threads(tmp_path):
    """Numba's threading layer, launched lazily by the first kernel of a job limited to 1 thread.

    Must not raise torch's intra-op threads to every core (a fresh process: the layer launches once
    per process).
    """
    out = _modules_after(
        """
from treebench.methods.base import import_torch
torch = import_torch(1)
before = torch.get_num_threads()  # read before the launch, as E2EDF's kernels read it
from treebench.methods._threads import set_numba_threads
import numba
k = set_numba_threads(1)
out = {"before": before, "k": k, "numba": numba.get_num_threads(),
       "torch": torch.get_num_threads()}
k2 = set_numba_threads(10**6)
out["capped"] = k2 == numba.config.NUMBA_NUM_THREADS == numba.get_num_threads()
out["torch_after_cap"] = torch.get_num_threads()
""",
        tmp_path,
    )
    assert out == {
        "before": 1,
        "k": 1,
        "numba": 1,
        "torch": 1,
        "capped": True,
        "torch_after_cap": 1,
    }


def test_method_names_equal_the_registry_names():
    assert _catalog.method_names() == base.available_methods()


def test_run_pauses_the_collector_until_the_job_starts(tmp_path):
    """The console entry point pauses the cyclic collector for ``run``'s startup only.

    Paused for the imports and composition; the job's work runs with it enabled, everything
    imported before frozen (treebench.gcpause).
    """
    out = _modules_after(
        """
import gc, sys
import treebench.params as params, treebench.runner as runner
from treebench import cli
seen = {}
check, run_job = params.check_params, runner.run_job
def spy_check(cfg):
    seen["startup"] = gc.isenabled()
    return check(cfg)
def spy_run_job(*a, **k):
    seen["job"], seen["frozen"] = gc.isenabled(), gc.get_freeze_count() > 0
    return run_job(*a, **k)
params.check_params, runner.run_job = spy_check, spy_run_job
def main(*args):
    sys.argv = ["treebench", *args]
    try:
        cli.main()
    except SystemExit as exc:
        assert not exc.code, exc.code
main("run", "method=cart", "dataset=iris")
out = {**seen, "after": gc.isenabled()}
gc.unfreeze()
main("list", "splits")
out["list"] = (gc.isenabled(), gc.get_freeze_count())
""",
        tmp_path,
    )
    assert out == {"startup": False, "job": True, "frozen": True, "after": True, "list": [True, 0]}
