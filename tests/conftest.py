"""Shared test fixtures: isolated outputs directory, config composition, CLI subprocess runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris

from treebench import api

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """pytest-xdist workers export COLUMNS=80.

    CLI output is checked as a user off a terminal sees it.
    """
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True)
def _no_committed_ledger(monkeypatch):
    """Let tests see only the records they make.

    The committed ledger is off unless a test sets ``TREEBENCH_LEDGER`` itself
    (tests/results/test_ledger.py does).
    """
    monkeypatch.setenv("TREEBENCH_LEDGER", "off")


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    """Return a fresh outputs directory, exported as TREEBENCH_OUTPUTS."""
    out = tmp_path / "outputs"
    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(out))
    return out


def compose_config(overrides=(), hydra_cfg=False):
    """Compose ``treebench/conf/config.yaml`` with overrides through Hydra's compose API."""
    return api.compose_config(overrides, return_hydra_config=hydra_cfg)


def run_cli(args, cwd, env=None, timeout=900):
    """Run ``python -m treebench.cli ARGS`` in a subprocess; return the CompletedProcess.

    ``timeout`` only bounds a hang: a loaded 2-core machine runs a small command in minutes.
    """
    e = dict(os.environ)
    e.update(env or {})
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "treebench.cli", *args],
        cwd=cwd,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def data():
    """Small classification (shuffled iris) and regression (200 rows of diabetes) sets per task."""
    Xc, yc = load_iris(return_X_y=True)
    idx = np.random.RandomState(0).permutation(len(yc))
    Xr, yr = load_diabetes(return_X_y=True)
    return {"classification": (Xc[idx], yc[idx]), "regression": (Xr[:200], yr[:200])}
