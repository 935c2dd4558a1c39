"""Long fits report progress through one protocol.

A single run renders it, plainly off a terminal.
"""

from __future__ import annotations

import io

from rich.console import Console

from treebench.methods.progress import report, reporting
from treebench.progress import FitProgress


def test_report_outside_reporting_does_nothing():
    report("epochs", 1, 2)  # no callback installed: no output, no error


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
    # with the time left at the rate so far
    assert lines == [
        "[tnt | mnist] epochs 3/4 (31 s, about 10 s left)",
        "[tnt | mnist] epochs 4/4 (40 s)",
    ]


def test_api_users_get_the_progress_of_a_fit_through_a_callback_or_a_logger(caplog):
    import logging

    from treebench import api

    seen = []
    with api.progress(callback=lambda *a: seen.append(a)):
        report("epochs", 1, 2)
        report("epochs", 2, 2)
    assert seen == [("epochs", 1, 2), ("epochs", 2, 2)]
    with (
        caplog.at_level(logging.INFO, logger="fits"),
        api.progress(logger=logging.getLogger("fits")),
    ):
        report("epochs", 1, 3)
        report("epochs", 2, 3)  # within the interval: left out
        report("epochs", 3, 3)  # the phase's end
    assert [r.getMessage() for r in caplog.records] == ["epochs 1/3", "epochs 3/3"]
    with api.progress(verbose=0):
        report("epochs", 1, 2)  # nothing shown, no error


def test_warnings_during_a_bar_are_printed_once_after_it():
    import warnings

    out = io.StringIO()
    with FitProgress(
        "[tnt | mnist]", console=Console(file=out, width=120, force_terminal=True)
    ) as bar:
        with reporting(bar):
            report("epochs", 1, 2)
            for _ in range(3):
                warnings.warn("batch_size >= rows", UserWarning, stacklevel=1)
            report("epochs", 2, 2)
    text = out.getvalue()
    assert text.count("batch_size >= rows") == 1
    assert text.rindex("UserWarning: batch_size >= rows") > text.rindex("epochs")


def test_a_runs_phases_before_its_fit_are_reported(outputs):
    """The seconds before a method's own bar are phases of their own.

    Loading the data, preprocessing, importing the method: a single run is not silent until its
    first epoch.
    """
    from tests.conftest import compose_config
    from treebench.data import DataContext
    from treebench.results.store import Store
    from treebench.runner import run_job

    cfg = compose_config(["threads=1", "method=cart", "dataset=iris"])
    seen = []
    with reporting(lambda *a: seen.append(a)):
        (rec,) = run_job(
            cfg, Store(outputs / "store"), DataContext(outputs / "data", None, False), log=print
        )
    assert rec["status"] == "ok"
    assert seen == [
        ("loading the data", 0, 1),
        ("loading the data", 1, 1),
        ("preprocessing, importing the method", 0, 1),
        ("preprocessing, importing the method", 1, 1),
    ]
