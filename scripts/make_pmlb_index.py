"""Regenerate treebench/conf/suite/pmlb_index.csv and the dataset lists of the PMLB suites.

The index has one row per PMLB dataset of the mirror, from its MANIFEST.csv (path, upstream URL,
sha256, rows, features, classes, and the task in the note of the 2017 batch) and, where the mirror
has one, PMLB's own ``metadata.yaml`` (task of the older sets); a dataset whose task neither names
fails the script. Each suite file with a ``select:`` rule gets its ``datasets:`` line rewritten: the
index rows the rule selects, in a random order drawn with the file's ``order_seed``.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "treebench" / "conf" / "suite"
OUT = SUITES / "pmlb_index.csv"
COLUMNS = ["name", "task", "n_rows", "n_features", "n_classes", "path", "url", "sha256"]


def _task(row: dict, mirror: Path) -> str:
    meta = mirror / Path(row["relative_path"]).parent / "metadata.yaml"
    if meta.exists():
        task = yaml.safe_load(meta.read_text()).get("task")
        if task in ("classification", "regression"):
            return task
    found = re.search(r"PMLB (classification|regression)", row["notes"])
    if found:
        return found.group(1)
    sys.exit(
        f"no task for {row['relative_path']}: neither metadata.yaml nor the manifest note names it"
    )


def build(mirror: Path) -> list[dict]:
    """Return the index rows of the mirror's PMLB datasets, from its ``MANIFEST.csv``."""
    with open(mirror / "MANIFEST.csv", newline="") as f:
        manifest = [r for r in csv.DictReader(f) if r["source"] == "pmlb"]
    rows = []
    for r in manifest:
        path = r["relative_path"]
        if not path.endswith(".tsv.gz"):
            continue
        rows.append(
            {
                "name": Path(
                    path
                ).parent.name,  # PMLB's own name (the folder), not the manifest's alias
                "task": _task(r, mirror),
                "n_rows": int(r["n_rows"]),
                "n_features": int(r["n_features"]),
                "n_classes": r["n_classes"] or "",
                "path": path,
                "url": r["upstream_url"],
                "sha256": r["sha256"],
            }
        )
    names = [r["name"] for r in rows]
    if len(set(names)) != len(names):
        sys.exit("the manifest lists a PMLB dataset twice")
    return sorted(rows, key=lambda r: r["name"])


def selected(rows: list[dict], rule: dict) -> list[str]:
    """Names of the index rows a suite's ``select:`` rule keeps (sorted by name)."""
    return [
        r["name"]
        for r in rows
        if r["task"] == rule["task"]
        and rule.get("min_rows", 0) <= r["n_rows"] <= rule.get("max_rows", float("inf"))
        and r["n_features"] <= rule.get("max_features", float("inf"))
    ]


def suite_files(rows: list[dict]) -> dict[Path, str]:
    """Each suite file with a ``select:`` rule, its ``datasets:`` line (re)written."""
    import numpy as np

    out = {}
    for path in sorted(SUITES.glob("*.yaml")):
        text = path.read_text()
        conf = yaml.safe_load(text)
        if not conf.get("select"):
            continue
        names = selected(rows, conf["select"])
        order = np.random.default_rng(int(conf["order_seed"])).permutation(len(names))
        line = f"datasets: [{', '.join(names[i] for i in order)}]\n"
        kept = [t for t in text.splitlines(keepends=True) if not t.startswith("datasets:")]
        out[path] = "".join(kept) + line
    return out


def main() -> None:
    """Parse the command line and write the PMLB index."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mirror", default=str(ROOT.parent / "shared" / "data"), help="mirror directory"
    )
    ap.add_argument("--check", action="store_true", help="fail if the committed index differs")
    args = ap.parse_args()
    rows = build(Path(args.mirror))
    from io import StringIO

    buf = StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    files = {OUT: buf.getvalue(), **suite_files(rows)}
    if args.check:
        stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
        if stale:
            names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
            sys.exit(f"out of date: {names}; run scripts/make_pmlb_index.py")
        return
    for p, text in files.items():
        p.write_text(text)
    n = {t: sum(r["task"] == t for r in rows) for t in ("classification", "regression")}
    print(
        f"{OUT.relative_to(ROOT)}: {len(rows)} datasets ({n['classification']} classification, "
        f"{n['regression']} regression)"
    )
    for p in files:
        if p != OUT:
            print(f"{p.relative_to(ROOT)}: {len(yaml.safe_load(files[p])['datasets'])} datasets")


if __name__ == "__main__":
    main()
