"""LIBSVM sparse text files (plain, .bz2 or .gz), parsed with ``load_svmlight_files``.

All parts are read in one call with an explicit ``n_features`` and ``zero_based`` so train, val and
test share one feature space (a test file whose highest index is lower still gets every column).
"""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_files

from treebench.data.base import DataError, Dataset
from treebench.data.sources._common import assemble, cached, decode, read_bytes, resolve

_LINE = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?(\s+\d+:\S+)*\s*(#.*)?$")


def _locate_error(path, label: str) -> str:
    """Find the first malformed line of a LIBSVM file (slow path, only after a parse error)."""
    for i, line in enumerate(decode(read_bytes(path)).splitlines(), 1):
        if line.strip() and not _LINE.match(line):
            return f"{label}, line {i}: malformed LIBSVM row {line[:120]!r}"
        for tok in line.split()[1:]:
            if tok.startswith("#"):
                break
            try:
                float(tok.split(":", 1)[1])
            except (IndexError, ValueError):
                return f"{label}, line {i}: malformed feature {tok!r}"
    return f"{label}: cannot parse (truncated or damaged file)"


def load(
    files: dict,
    task: str,
    n_features: int,
    zero_based: bool = False,
    dense: bool = True,
    image_shape: list[int] | None = None,
    name: str = "libsvm",
    ctx=None,
) -> Dataset:
    """Load LIBSVM files, one per part (``all`` or ``train``/``val``/``test``).

    Parameters
    ----------
    files : dict of part name to file spec ``{url, path, sha256}``
    n_features : int
        Number of columns (the dataset's documented dimension, not the highest index seen).
    zero_based : bool
        Feature indices start at 0 (LIBSVM files are 1-based).
    dense : bool
        Return dense float arrays (else CSR matrices).
    """
    resolved = {k: resolve(v, ctx) for k, v in files.items()}
    params = dict(
        files={k: rf.path for k, (rf, _) in resolved.items()},
        n_features=n_features,
        zero_based=zero_based,
        dense=dense,
        task=task,
    )

    def build():
        keys = list(resolved)
        paths = [str(resolved[k][1]) for k in keys]
        try:
            out = load_svmlight_files(
                paths, n_features=int(n_features), zero_based=bool(zero_based), dtype=np.float64
            )
        except (ValueError, OSError, EOFError) as exc:
            for k in keys:
                msg = _locate_error(resolved[k][1], resolved[k][0].path)
                if "line" in msg:
                    raise DataError(msg) from exc
            raise DataError(f"{', '.join(paths)}: {exc}") from exc
        parts = {}
        for i, k in enumerate(keys):
            X, y = out[2 * i], out[2 * i + 1]
            X = X.toarray() if dense else sp.csr_matrix(X)
            if task == "classification":
                y = y.astype(np.int64) if np.all(y == np.round(y)) else y
            parts[k] = (X, y)
        return assemble(
            name,
            task,
            parts,
            image_shape=image_shape,
            meta={"source": "libsvm", "files": [resolved[k][0].url for k in keys]},
        )

    return cached(ctx, "libsvm", params, [p for _, p in resolved.values()], build)
