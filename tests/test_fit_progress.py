"""Long fits report progress through one protocol; a single run renders it, plainly off a terminal."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from treebench.api import make_estimator
from treebench.methods.progress import report, reporting
from treebench.progress import FitProgress


def test_report_outside_reporting_does_nothing():
    report("epochs", 1, 2)  # no callback installed: no output, no error


@pytest.mark.parametrize(
    ("method", "params", "phase"),
    [
        ("tnt", {}, "grow rounds"),
        ("hinge_forest", {"n_iterations": 200, "snapshot_every": 100}, "iterations"),
        ("onestage", {"max_epochs": 3}, "epochs"),
        ("sdt", {"max_epochs": 2}, "epochs"),
        ("redt", {}, "teacher fits (jackknife)"),
        ("e2edt", {"max_depth": 2, "epochs": 1, "finetune_epochs": 2}, "finetune epochs"),
    ],
)
def test_methods_report_their_units_of_work(method, params, phase):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    seen = []
    with reporting(lambda p, done, total: seen.append((p, done, total))):
        make_estimator(method, params=params).fit(X.astype(np.float64), y)
    steps = [(d, t) for p, d, t in seen if p == phase]
    assert steps, seen
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)  # monotone
    done, total = steps[-1]
    assert total is None or done == total  # the last report says the phase is complete


def test_plain_lines_off_a_terminal_are_rate_limited():
    out = io.StringIO()
    clock = iter([0.0, 0.0, 10.0, 31.0, 40.0])  # start, then one time per report
    bar = FitProgress("[tnt | mnist]", console=Console(file=out, width=120), every=30.0)
    bar._time = lambda: next(clock)
    bar._last = bar._start = bar._time()
    with bar, reporting(bar):
        for i in range(1, 5):
            report("epochs", i, 4)
    lines = out.getvalue().splitlines()
    # nothing before 30 s, then at most one line per 30 s, and the phase's end
    assert lines == ["[tnt | mnist] epochs 3/4 (31 s)", "[tnt | mnist] epochs 4/4 (40 s)"]
