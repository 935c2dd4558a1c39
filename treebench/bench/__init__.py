"""Performance benchmark of every registered method: fit time, predict throughput, memory, scaling.

``treebench bench`` runs, for every method of the registry (settings from
``treebench/conf/bench/bench.yaml`` over the composed method configs), five sections: the **main
table** (per dataset, a warm-up and interleaved timed repeats: fit and predict times, peak memory,
split evaluations, accuracy, ratios to CART of the same run), **scaling** (fit time against
n_samples and one parameter per method, log-log slopes against the stated exponents), the
**inference target** (a depth-10 model's predict throughput on one core against 1 million
samples/s and against CART, profiled when below), **threads** (1 and 2 threads) and **store**
(``treebench status``/``collect``/``check`` as processes against synthetic result stores of growing
size, cold and warm row cache: seconds and peak RSS), **startup** (``--help``, ``list``,
``status`` and a CART run on iris as processes: seconds to first useful work against 1 s) and
**small** (every method at its own defaults: CPU per fit on 150 to 5,000 rows and of one
``tune=small`` job against CART, One-Stage's fit time vs rows). BENCHMARKS.md also carries the
**comparison with the authors' code**, rendered from
the committed ``docs/bench/references.csv`` that ``scripts/reference/compare.py all`` writes.

Modules: :mod:`~treebench.bench.config` (bench config, method settings), :mod:`~.data` (the
runner's fold, subsets), :mod:`~.worker` (forked processes), :mod:`~.measure` (one measurement),
:mod:`~.store` (the store section), :mod:`~.startup` (the startup section),
:mod:`~.sections` (the sections, `run`), :mod:`~.summary` (tables), :mod:`~.references` (the
comparison with the authors' code), :mod:`~.write` and ``templates/``
(``BENCHMARKS.md``), :mod:`~.plots`.
"""

from treebench.bench.config import (
    SECTIONS,
    basis_columns,
    load_config,
    method_settings,
    output_dir,
    registered_methods,
)
from treebench.bench.sections import Bench, run
from treebench.bench.summary import (
    RAW_COLUMNS,
    SUMMARY_COLUMNS,
    fit_slope,
    scaling_summary,
    summarize,
)
from treebench.bench.worker import Worker

__all__ = [
    "RAW_COLUMNS",
    "SECTIONS",
    "SUMMARY_COLUMNS",
    "Bench",
    "Worker",
    "basis_columns",
    "fit_slope",
    "load_config",
    "method_settings",
    "output_dir",
    "registered_methods",
    "run",
    "scaling_summary",
    "summarize",
]
