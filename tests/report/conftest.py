"""Fixtures of the report tests; record builders live in tests/report/records.py."""

from __future__ import annotations

import pytest

from treebench.results.store import Store


@pytest.fixture
def store_with(tmp_path):
    """Write records into ``tmp_path/store`` (the layout ``treebench check --outputs`` reads)."""

    def write(records):
        store = Store(tmp_path / "store")
        for r in records:
            store.write(r)
        return tmp_path

    return write
