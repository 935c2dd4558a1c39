"""Regenerate the measured CI guards in treebench/conf/papers/ci.yaml from a collected `ci` run.

Usage::

    TREEBENCH_OUTPUTS=outputs/ci-guards treebench run experiment=ci
    python scripts/make_ci_guards.py outputs/ci-guards [--write]

Each (method, dataset) gets a guard "mean test metric >= measured mean (rounded down) - tolerance"
and "#splits within size_rtol of the measured mean". Only the generated block between the
`# BEGIN measured guards` and `# END measured guards` markers is replaced; hand-written relations
stay as they are. Without --write the block is printed. With --write, the guards the rewrite makes
looser are listed (the ratchet, treebench/report/guards.py): restore their lines or add
`lowered: {from: <previous value>, reason: "..."}` to them.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from treebench.report.guards import ratchet_violations
from treebench.results import collect

ROOT = Path(__file__).resolve().parent.parent
CI_YAML = ROOT / "treebench" / "conf" / "papers" / "ci.yaml"
BEGIN, END = "  # BEGIN measured guards", "  # END measured guards"


def guards(outputs: Path) -> list[str]:
    """Return the guard lines measured by a finished ``ci`` run under ``outputs``."""
    df = collect(outputs / "store", experiment="ci")
    ok = df[df["status"] == "ok"]
    lines = []
    for (method, dataset), g in sorted(ok.groupby(["method", "dataset"])):
        task = g["task"].iloc[0]
        metric = "test_accuracy" if task == "classification" else "test_r2"
        value = math.floor(g[metric].mean() * 1000) / 1000
        extra = ", tolerance: 0.05" if task == "regression" else ""
        splits = round(float(g["n_splits"].mean())) if "n_splits" in g else None
        size = f", n_splits: {splits}" if splits else ""
        lines.append(
            f"  - {{id: ci/{method}/{dataset}, dataset: {dataset}, method: {method}, "
            f"metric: {metric}, value: {value:.3f}{extra}{size}}}"
        )
    return lines


def main() -> None:
    """Parse the command line and rewrite the measured guard block."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("outputs", type=Path, help="TREEBENCH_OUTPUTS of a finished `ci` run")
    ap.add_argument(
        "--write", action="store_true", help="rewrite treebench/conf/papers/ci.yaml in place"
    )
    args = ap.parse_args()
    block = "\n".join([BEGIN, *guards(args.outputs), END])
    if not args.write:
        print(block)
        return
    text = CI_YAML.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{CI_YAML} has no '{BEGIN.strip()}' ... '{END.strip()}' block")
    new = pattern.sub(lambda _: block, text)
    CI_YAML.write_text(new)
    print(f"wrote {block.count('- {id:')} guards to {CI_YAML}")
    for v in ratchet_violations(text, new, CI_YAML):
        print(f"  looser, needs a reason: {v}")


if __name__ == "__main__":
    main()
