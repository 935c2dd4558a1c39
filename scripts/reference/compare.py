"""treebench against a paper's public reference implementation, side by side, one thread.

    python scripts/reference/compare.py METHOD [--ref CHECKOUT] [options]
    python scripts/reference/compare.py tnt --ref ~/src/TnTDecisionGraph --dataset letter --C 1.2e-4
    python scripts/reference/compare.py METHOD --help
    python scripts/reference/compare.py all --refs DIR [--out docs/bench/references.csv] [--repeats
    3]

METHOD is one of tnt, onestage, e2edt, hinge (one module ``<method>_ref.py`` each). Both
implementations get the same data (``treebench.api.load_fold``, the runner's loading) and the same
hyperparameters in one process; wall and CPU seconds are printed for both (on a shared machine the
CPU seconds and the ratios are the numbers to read). Without ``--ref`` only treebench is timed. The
reference code is never part of this repository: clone it yourself (scripts/README.md lists the
repositories) and pass the checkout's path; it is imported from there at run time.

``all`` runs the fixed comparisons of BENCHMARKS.md's "Comparison with the authors' code"
(``_suite.py``) with the checkouts DIR/TnTDecisionGraph, DIR/endtoenddecisiontrees,
DIR/One-Stage-Tree and DIR/HingeTreeForTorch (built in place), the two implementations alternating,
and writes one CSV row per fit (``--out``, default docs/bench/references.csv) and the Markdown table
beside it (``.md``); a checkout that is missing or fails to import gives a ``not run: ...`` row.
``treebench bench`` renders the committed CSV.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parents[1]))  # this checkout's treebench

METHODS = ("tnt", "onestage", "e2edt", "hinge")


def main(argv=None) -> None:
    """Parse the command line and run the comparison it names."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="method", required=True)
    for name in METHODS:
        mod = importlib.import_module(f"{name}_ref")
        p = sub.add_parser(
            name,
            help=mod.__doc__.splitlines()[0],
            description=mod.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("--ref", default=None, help=f"path of a checkout of {mod.REPOSITORY}")
        mod.add_arguments(p)
        p.set_defaults(run=mod.run)
    p = sub.add_parser("all", help="the fixed comparisons of BENCHMARKS.md, written to a CSV")
    p.add_argument("--refs", required=True, help="directory holding the reference checkouts")
    out = HERE.parents[1] / "docs" / "bench" / "references.csv"
    p.add_argument("--out", default=str(out), help="results CSV (the table: .md beside it)")
    p.add_argument("--repeats", type=int, default=3, help="fits of each implementation")
    p.add_argument("--only", nargs="+", default=None, help="these methods only (tnt, e2edt, ...)")
    p.set_defaults(run=_all)
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    args.run(args)


def _all(a) -> None:
    from _suite import run_all

    command = "python scripts/reference/compare.py " + " ".join(a.argv)
    run_all(a.refs, a.out, a.repeats, a.only, command=command)


if __name__ == "__main__":
    main()
