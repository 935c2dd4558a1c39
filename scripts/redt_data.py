"""Read the ReDT paper's datasets: ``load_treebench`` (what the runner feeds a method) or ``load``.

``load_treebench(name, seed)`` goes through ``treebench.data.load_dataset`` with the dataset's own
config, split protocol (the runner's split seed) and preprocessing, i.e. exactly the arrays of a
``treebench run`` job (needs ``TREEBENCH_MIRROR``). ``load`` is the session-1 stop-gap reader below.

Choices where the paper is silent: categorical attributes are ordinal-coded (sorted category codes;
a missing '?' is its own category), missing numeric values get the training median, the class is
factorised in sorted order. Splits: ADULT and MNIST use their given train/test files; all other sets
(LETTER included) a stratified random holdout with 1/3 test, drawn from the seed. ISOLET: only the
test part ``isolet5`` (1559 rows) is mirrored, so it is split like the others (deviation).
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

MIRROR = os.environ.get("TREEBENCH_MIRROR_DIR", "../shared/data")
DATASETS = (
    "adult",
    "crx",
    "eeg",
    "bank",
    "german",
    "cmc",
    "connect4",
    "landcover",
    "letter",
    "isolet",
)


def _p(*parts):
    return os.path.join(MIRROR, *parts)


def _encode(df: pd.DataFrame, cat_cols) -> np.ndarray:
    out = []
    for c in df.columns:
        col = df[c]
        if c in cat_cols:
            out.append(pd.factorize(col.astype(str), sort=True)[0].astype(np.float64))
        else:
            out.append(pd.to_numeric(col, errors="coerce").to_numpy(np.float64))
    return np.column_stack(out)


def _frame(name):
    """(DataFrame of attributes, label Series, categorical columns, given split or None)."""
    if name == "adult":
        cols = [f"a{i}" for i in range(14)] + ["y"]
        tr = pd.read_csv(_p("uci/adult/adult.data"), header=None, names=cols, skipinitialspace=True)
        te = pd.read_csv(
            _p("uci/adult/adult.test"), header=None, names=cols, skipinitialspace=True, skiprows=1
        )
        tr, te = tr.dropna(subset=["y"]), te.dropna(subset=["y"])
        df = pd.concat([tr, te], ignore_index=True)
        df["y"] = df["y"].str.rstrip(".")
        cats = [f"a{i}" for i in (1, 3, 5, 6, 7, 8, 9, 13)]
        return df.drop(columns="y"), df["y"], cats, len(tr)
    if name == "crx":
        df = pd.read_csv(_p("uci/crx/crx.data"), header=None, na_values="?", keep_default_na=False)
        df.columns = [f"a{i}" for i in range(15)] + ["y"]
        cats = [f"a{i}" for i in (0, 3, 4, 5, 6, 8, 9, 11, 12)]
        return df.drop(columns="y"), df["y"], cats, None
    if name == "eeg":
        with open(_p("uci/eeg-eye-state/EEG Eye State.arff"), encoding="latin-1") as fh:
            txt = fh.read()
        data = txt[txt.lower().index("@data") + 5 :]
        df = pd.read_csv(io.StringIO(data), header=None)
        return df.iloc[:, :-1], df.iloc[:, -1], [], None
    if name == "bank":
        df = pd.read_csv(_p("uci/bank-marketing/bank/bank-full.csv"), sep=";")
        cats = [c for c in df.columns[:-1] if not pd.api.types.is_numeric_dtype(df[c])]
        return df.iloc[:, :-1], df.iloc[:, -1], cats, None
    if name == "german":
        df = pd.read_csv(_p("uci/german/german.data"), header=None, sep=r"\s+")
        cats = [c for c in df.columns[:-1] if not pd.api.types.is_numeric_dtype(df[c])]
        return df.iloc[:, :-1], df.iloc[:, -1], cats, None
    if name == "cmc":
        df = pd.read_csv(_p("uci/cmc/cmc.data"), header=None)
        return df.iloc[:, :-1], df.iloc[:, -1], [], None
    if name == "connect4":
        df = pd.read_csv(_p("pmlb/connect_4/connect_4.tsv.gz"), sep="\t")
        return df.drop(columns="target"), df["target"], [], None
    if name == "landcover":
        a = pd.read_csv(_p("uci/urban-land-cover/training.csv"))
        b = pd.read_csv(_p("uci/urban-land-cover/testing.csv"))
        df = pd.concat([a, b], ignore_index=True)
        return df.iloc[:, 1:], df.iloc[:, 0].str.strip(), [], None
    if name == "letter":
        df = pd.read_csv(_p("uci/letter-recognition/letter-recognition.data"), header=None)
        return df.iloc[:, 1:], df.iloc[:, 0], [], None
    if name == "isolet":
        raw = subprocess.run(
            ["gzip", "-dc", _p("uci/isolet/isolet5.data.Z")], capture_output=True, check=True
        ).stdout
        df = pd.read_csv(io.BytesIO(raw), header=None)
        return df.iloc[:, :-1], df.iloc[:, -1].astype(int), [], None
    raise KeyError(name)


def load(name: str, seed: int = 0, test_size: float = 1 / 3):
    """``(X_train, y_train, X_test, y_test)`` of one dataset, float64 features, int labels."""
    if name == "mnist":
        return load_mnist()
    df, y, cats, n_train = _frame(name)
    X = _encode(df, set(cats))
    y = pd.factorize(y, sort=True)[0]
    if n_train is not None:
        tr, te = np.arange(n_train), np.arange(n_train, len(y))
    else:
        tr, te = train_test_split(
            np.arange(len(y)), test_size=test_size, stratify=y, random_state=seed
        )
    med = np.nanmedian(X[tr], axis=0)
    X = np.where(np.isnan(X), med, X)
    return X[tr], y[tr], X[te], y[te]


def load_treebench(name: str, seed: int = 0):
    """``(X_train, y_train, X_test, y_test)`` exactly as a ``treebench run`` job sees them (fold 0)."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from treebench.data import DataContext, load_dataset
    from treebench.runner import derive_seed
    from treebench.schema import register_schema

    register_schema()
    conf = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "treebench", "conf"
    )
    with initialize_config_dir(config_dir=conf, version_base=None):
        cfg = compose("config", overrides=[f"dataset={name}", f"seed={seed}"])
    ctx = DataContext(
        data_dir=os.path.abspath(cfg.paths.data), mirror=cfg.data.mirror, allow_fetch=False
    )
    ds = load_dataset(cfg.dataset, ctx)
    (fold,) = list(instantiate(cfg.dataset.split).folds(ds, derive_seed(seed, name), only=0))
    pre = instantiate(cfg.dataset.preprocess)
    pre.fit(fold.train.X, fold.train.y, categorical=ds.categorical)
    y_tr, y_te = np.asarray(fold.train.y), np.asarray(fold.test.y)
    classes = np.unique(y_tr)
    return (
        np.asarray(pre.transform(fold.train.X), np.float64),
        np.searchsorted(classes, y_tr),
        np.asarray(pre.transform(fold.test.X), np.float64),
        np.searchsorted(classes, y_te),
    )


def _idx(path):
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_mnist():
    f = lambda s: _p("mnist", s)  # noqa: E731
    Xtr = _idx(f("train-images-idx3-ubyte.gz")).reshape(60000, -1).astype(np.float64)
    Xte = _idx(f("t10k-images-idx3-ubyte.gz")).reshape(10000, -1).astype(np.float64)
    return (
        Xtr,
        _idx(f("train-labels-idx1-ubyte.gz")).astype(int),
        Xte,
        _idx(f("t10k-labels-idx1-ubyte.gz")).astype(int),
    )


if __name__ == "__main__":
    for name in DATASETS:
        Xtr, ytr, Xte, yte = load(name)
        print(f"{name:10s} train {Xtr.shape} test {Xte.shape} classes {len(np.unique(ytr))}")
