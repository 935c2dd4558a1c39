"""``compare.py all``.

The fixed list of comparisons behind BENCHMARKS.md's "Comparison with the authors' code", run
alternately and written to a CSV (one row per fit) and a Markdown table.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Comparison:
    """One comparison: ``<method>_ref.suite(ref, **kwargs)`` with the checkout ``DIR/checkout``."""

    method: str
    dataset: str
    setting: str
    checkout: str
    repo: str
    kwargs: dict = field(default_factory=dict)


#: the comparisons of ``compare.py all`` (checkout names as in scripts/README.md)
SUITE = (
    Comparison(
        "tnt",
        "letter",
        "N1=2 N2=5 ccp_alpha=5e-4, seed 0",
        "TnTDecisionGraph",
        "BingzhaoZhu/TnTDecisionGraph",
        {"dataset": "letter", "C": 5e-4},
    ),
    Comparison(
        "e2edt",
        "letter (LIBSVM)",
        "depth 8, 5 epochs per split, 3 Finetune epochs, batch 1000",
        "endtoenddecisiontrees",
        "tomsal/endtoenddecisiontrees",
        {"dataset": "letter", "depth": 8, "epochs": 5, "finetune_epochs": 3},
    ),
    Comparison(
        "onestage",
        "pima",
        "depth 6, 20 epochs, batch 32",
        "One-Stage-Tree",
        "Unkrible/One-Stage-Tree",
        {"depth": 6, "epochs": 20},
    ),
    Comparison(
        "hinge_forest",
        "letter",
        "100 trees of depth 10, 1000 minibatches of 53",
        "HingeTreeForTorch",
        "nslay/HingeTreeForTorch",
        {"iterations": 1000},
    ),
)
MODULES = {"tnt": "tnt_ref", "e2edt": "e2edt_ref", "onestage": "onestage_ref"}
MODULES["hinge_forest"] = "hinge_ref"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _commit(path: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def run_comparison(c: Comparison, refs: Path, repeats: int, base: dict, log=print) -> list[dict]:
    """Return the rows of one comparison.

    ``repeats`` fits of each implementation, alternating (the first implementation changes every
    repeat); one ``not run``/``failed`` row if it cannot run.
    """
    path = (refs / c.checkout).resolve()
    row = {**base, "method": c.method, "dataset": c.dataset, "setting": c.setting}
    row.update(reference_repo=c.repo, reference_commit=None)

    def stamp(**kw):
        now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        return {**row, "date": now, "load_avg": _load(), **kw}

    if not path.is_dir():
        log(f"{c.method}: not run: checkout not found at {path}")
        return [stamp(implementation="reference", status=f"not run: checkout not found at {path}")]
    row["reference_commit"] = _commit(path)
    try:
        fits = importlib.import_module(MODULES[c.method]).suite(str(path), **c.kwargs)
    except BaseException as exc:  # a reference that does not import or build here
        if isinstance(exc, KeyboardInterrupt):
            raise
        msg = f"not run: {type(exc).__name__}: {exc}".splitlines()[0][:200]
        log(f"{c.method}: {msg}")
        return [stamp(implementation="reference", status=msg)]
    rows = []
    for rep in range(repeats):
        order = ["treebench", "reference"] if rep % 2 == 0 else ["reference", "treebench"]
        for impl in order:
            r = fits[impl]()
            log(
                f"{c.method} {c.dataset} repeat {rep} {impl:9s}: fit {r['cpu']:.2f} s CPU, "
                f"{r['wall']:.2f} s wall, test acc {r['accuracy']:.4f}, size {r['size']}"
            )
            rows.append(
                stamp(
                    implementation=impl,
                    repeat=rep,
                    status="ok",
                    fit_cpu_s=r["cpu"],
                    fit_wall_s=r["wall"],
                    accuracy=r["accuracy"],
                    size=r["size"],
                )
            )
    return rows


def run_all(refs: str, out: str, repeats: int = 3, only=None, command: str = "", log=print):
    """Run :data:`SUITE` (or the methods in ``only``), write its table, return the rows as a frame.

    The rows go to ``out`` (CSV), the table to ``out`` with the suffix ``.md``.
    """
    from treebench.bench.references import REFERENCE_COLUMNS, references_markdown
    from treebench.runner import git_sha

    refs_dir = Path(refs).expanduser()
    base = {"treebench_commit": git_sha(), "command": command}
    rows = []
    for c in SUITE:
        if only and not {c.method, MODULES[c.method].removesuffix("_ref")} & set(only):
            continue
        rows += run_comparison(c, refs_dir, repeats, base, log=log)
    df = pd.DataFrame(rows).reindex(columns=REFERENCE_COLUMNS)
    df[["repeat", "size"]] = df[["repeat", "size"]].astype("Int64")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    table = references_markdown(df)
    out.with_suffix(".md").write_text(table + "\n")
    log(f"wrote {out} and {out.with_suffix('.md')}\n\n{table}")
    sys.stdout.flush()
    return df
