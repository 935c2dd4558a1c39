"""Fault injection helpers: a sweep run as a user runs it, with a fault planted in every process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

#: a ``sitecustomize`` loaded by every Python process of the run (driver and joblib workers): with
#: ``TB_FULL_STORE`` set, a record written once ``TB_FULL_AFTER`` records exist fails as a full
#: disk does (ENOSPC), the same for every process since it counts the files
_FULL_DISK = """
import errno, glob, os
_replace = os.replace
def _full(src, dst, *a, **k):
    store = os.environ.get("TB_FULL_STORE")
    d = str(dst)
    if store and d.startswith(store) and d.endswith(".json") and "/." not in d[len(store):]:
        if len(glob.glob(store + "/*/[!.]*.json")) >= int(os.environ.get("TB_FULL_AFTER", "0")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src))
    return _replace(src, dst, *a, **k)
os.replace = _full
"""


@pytest.fixture
def faulty(tmp_path):
    """Return a directory for a ``sitecustomize.py`` planting the full-disk fault.

    See :data:`_FULL_DISK`.
    """
    d = tmp_path / "site"
    d.mkdir()
    (d / "sitecustomize.py").write_text(_FULL_DISK)
    return d


def treebench(args, cwd, env=None, timeout=300, site=None, popen=False):
    """``python -m treebench.cli ARGS`` as a user runs it (ledger off).

    Optionally with ``site``'s sitecustomize loaded in every process.
    """
    e = dict(os.environ)
    e.update(env or {})
    path = [str(site)] if site else []
    e["PYTHONPATH"] = os.pathsep.join([*path, str(REPO), e.get("PYTHONPATH", "")])
    e["TREEBENCH_LEDGER"] = (env or {}).get("TREEBENCH_LEDGER", "off")
    cmd = [sys.executable, "-m", "treebench.cli", *args]
    if popen:
        return subprocess.Popen(
            cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    return subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def records(store: Path) -> dict[str, dict]:
    """Return the store's record files by key (no temporary ones)."""
    import json

    return {p.stem: json.loads(p.read_text()) for p in sorted(store.glob("*/[!.]*.json"))}


def temps(root: Path) -> list[Path]:
    return sorted(root.rglob(".tmp-*"))
