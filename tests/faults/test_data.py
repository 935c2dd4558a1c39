"""Bad data and bad values, caught before launch where the plan can tell.

A missing target column, infinite or NaN class labels, a numeric column with a few text cells,
duplicate column names, text that is not UTF-8, names that would become paths outside the outputs,
unusable threads and seeds.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from tests.faults.conftest import records, treebench
from treebench.data.base import DataError
from treebench.data.sources import local

ROWS = 60


def _csv(tmp_path, name="d.csv", header="a,b,label", cell=None, label=None, encoding="utf-8"):
    rng = np.random.RandomState(0)
    lines = [header]
    for i in range(ROWS):
        a, b = rng.normal(size=2)
        lines.append(f"{a:.3f},{b:.3f},{label(i) if label else int(a > 0)}")
    if cell:
        for i, v in cell.items():
            parts = lines[i + 1].split(",")
            parts[0] = v
            lines[i + 1] = ",".join(parts)
    p = tmp_path / name
    p.write_bytes(("\n".join(lines) + "\n").encode(encoding))
    return p


def _run(tmp_path, *args, multirun=True):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    cmd = ["run", *(["-m"] if multirun else []), "method=cart", *args]
    return treebench(cmd, tmp_path, env=env)


def test_a_wrong_target_stops_the_sweep_before_any_job(tmp_path):
    p = _csv(tmp_path)
    res = _run(tmp_path, "dataset=csv", f"dataset.path={p}", "dataset.target=lable", "seed=0,1")
    assert res.returncode == 2, res.stderr
    assert "has no column 'lable'" in res.stderr and "Did you mean 'label'?" in res.stderr
    assert "no job launched" in res.stderr
    assert not records(tmp_path / "out" / "store")  # no failed records


@pytest.mark.parametrize("bad", ["inf", "-inf"])
def test_an_infinite_class_label_is_refused_with_its_line(tmp_path, bad):
    p = _csv(tmp_path, label=lambda i: bad if i in (3, 7) else i % 2)
    with pytest.raises(DataError, match=r"infinite or NaN.*line 5 .*line 9 "):
        local.load(str(p), "label", "classification")


def test_a_numeric_column_with_a_few_text_cells_is_reported_with_its_rows(tmp_path):
    p = _csv(tmp_path, cell={4: "1.5x", 20: "abc"})
    with pytest.raises(
        DataError, match=r"column 'a' holds numbers but for 2 of 60.*line 6 .*line 22 "
    ):
        local.load(str(p), "label", "classification")
    ds = local.load(str(p), "label", "classification", categorical=["a"])  # declared: taken
    assert ds.categorical == ["a"]


def test_duplicate_column_names_are_warned_about_while_planning(tmp_path, caplog):
    p = _csv(tmp_path, header="a,a,label")
    with caplog.at_level(logging.WARNING, logger="treebench.data.sources.local"):
        local.check_config(str(p), "label")
    assert "duplicate column names ['a']" in caplog.text and str(p) in caplog.text


def test_text_that_is_not_utf8_names_the_file_and_line(tmp_path):
    p = _csv(tmp_path, cell={9: "caf\xe9"}, encoding="latin-1")
    with pytest.raises(DataError, match=rf"{p}, line 11: byte 0xe9 is not UTF-8"):
        local.load(str(p), "label", "classification", categorical=["a"])
    with pytest.raises(DataError, match=r"line 11: byte 0xe9"):
        local.check_config(str(p), "label")


def test_a_dataset_name_cannot_put_a_run_outside_the_outputs(tmp_path):
    p = _csv(tmp_path)
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    args = ["dataset=csv", f"dataset.path={p}", "dataset.target=label", "dataset.name=../../../.."]
    res = _run(work, *args, multirun=False)
    assert res.returncode == 0, res.stderr
    runs = work / "out" / "runs"
    made = [d for d in tmp_path.rglob(".hydra")]  # every run dir Hydra made
    assert len(made) == 1 and made[0].parent.parent == runs
    res = _run(work, *args, "seed=1")
    assert res.returncode == 0, res.stderr
    (sweep,) = (work / "out" / "multirun").iterdir()
    jobs = [d.parent for d in tmp_path.rglob(".hydra") if d.parent.parent != runs]
    assert len(jobs) == 1 and jobs[0].parent == sweep


@pytest.mark.parametrize(
    "arg,message",
    [
        ("threads=999", "threads=999: a job can use 1 to"),
        ("threads=-4", "threads=-4: a job can use 1 to"),
        ("seed=-1", "seed -1 is not in 0..4294967295"),
        ("method.params.max_depth=100000000000000000000", "beyond a 64-bit integer"),
    ],
)
def test_unusable_threads_seeds_and_integers_are_refused_while_planning(tmp_path, arg, message):
    res = _run(tmp_path, "dataset=iris", arg, "--dry-run")
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert "no job launched" in res.stderr
