"""Overrides normalised or refused before Hydra: ``~`` in a value, a typo added with ``+``."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from treebench.cli import app
from treebench.overrides import OverrideError, check_new_keys, expand_home


def test_home_in_a_value_is_expanded_and_nothing_else_is():
    home = os.path.expanduser("~")
    assert expand_home(["dataset.path=~/data/f.csv", "+x.y=~", "~seed", "a=b~c"]) == [
        f"dataset.path={home}/data/f.csv",
        f"+x.y={home}",
        "~seed",
        "a=b~c",
    ]


def test_a_new_top_level_key_that_nothing_reads_is_refused_with_the_close_name():
    check_new_keys(["+dataset.preprocess.impute=mean", "++method.params.x=1", "+experiment=ci"])
    with pytest.raises(OverrideError, match="Did you mean 'threads'"):
        check_new_keys(["+treads=1"])
    r = CliRunner().invoke(app, ["run", "method=cart", "dataset=iris", "+treads=1"])
    assert r.exit_code == 2 and "never reads" in r.output and "'threads'" in r.output
