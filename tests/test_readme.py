"""The README's commands work as written.

Every ``treebench run`` line of its bash blocks plans its jobs (``--dry-run``: composed and checked,
nothing launched), and the quick start runs for real.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil

import pytest

from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.slow  # ~25 commands as processes


def readme_commands() -> list[str]:
    """Return the ``treebench ...`` commands of README.md's bash blocks.

    Comments cut, continuation lines joined, ``a && b`` split.
    """
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    cmds = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            cmds += [c.strip() for c in line.split("&&") if c.strip().startswith("treebench ")]
    return cmds


def _planned(cmd: str) -> bool:
    """Commands whose plan is checked.

    Runs, except those that regenerate the committed documents or need a run key or a cluster's
    answer.
    """
    return cmd.startswith("treebench run ") and "headtohead" not in cmd


@pytest.fixture
def user_home(tmp_path):
    """Return a HOME holding the files the README's examples read.

    ``~/data/flowers.csv``, ``runs.parquet`` and ``~/myconf/dataset/mydata.yaml``.
    """
    import pandas as pd
    from sklearn.datasets import load_iris

    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    iris = load_iris(as_frame=True)
    df = iris.frame.rename(columns={"target": "species"})
    df.to_csv(home / "data" / "flowers.csv", index=False)
    pd.DataFrame({"id": range(60), "a": range(60), "y": [i * 0.5 for i in range(60)]}).to_parquet(
        tmp_path / "runs.parquet"
    )
    (home / "myconf" / "dataset").mkdir(parents=True)
    shutil.copy(REPO / "treebench" / "conf" / "dataset" / "iris.yaml", home / "myconf" / "dataset")
    (home / "myconf" / "dataset" / "iris.yaml").rename(home / "myconf" / "dataset" / "mydata.yaml")
    return home


def test_the_readme_lists_its_commands():
    cmds = readme_commands()
    assert len([c for c in cmds if _planned(c)]) >= 15
    assert "treebench run method=cart dataset=digits" in cmds


def test_every_documented_run_plans_as_written(tmp_path, user_home):
    env = {"HOME": str(user_home), "TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    failed = []
    for cmd in filter(_planned, readme_commands()):
        args = shlex.split(os.path.expandvars(cmd.replace("$HOME", str(user_home))))[1:]
        plan = [] if "--cfg" in args else ["--dry-run"]  # --cfg prints the config, runs nothing
        r = run_cli([*args, *plan], tmp_path, env)
        if r.returncode != 0:
            failed.append(f"{cmd}\n{(r.stderr or r.stdout)[-800:]}")
    assert not failed, "README commands that fail as written:\n\n" + "\n\n".join(failed)


def test_the_quick_start_runs(tmp_path):
    """The block after `make demo`, as a new user types it."""
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    quick = readme_commands()[:8]
    assert quick[0] == "treebench run method=cart dataset=digits" and quick[-1].endswith("methods")
    for i, cmd in enumerate(quick):
        r = run_cli(shlex.split(cmd)[1:], tmp_path, env)
        assert r.returncode == 0, f"{cmd}\n{r.stderr[-2000:]}{r.stdout[-1000:]}"
        if i == 1:  # the same run again
            assert "skipped, done" in r.stdout
    assert (tmp_path / "out" / "results" / "results.csv").exists()
