"""Stop-gap loaders for the One-Stage benchmark scripts, reading the shared data mirror directly.

Only for scripts until the data branch's dataset configs land; library code never reads files.
Returns (X float matrix with categoricals one-hot encoded and missing values mean-imputed, y, task).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

ROOT = os.environ.get("TREEBENCH_MIRROR", "../shared/data")
CLASSIFICATION = (
    "pima spectf german ionosphere messidor wine_red wine_white spambase crx fertility "
    "hepatitis megawatt1 credit_default magic04 yeast ecoli glass"
).split()
REGRESSION = "bike housing airfoil fri586 fri589 fri620".split()


def _p(*parts):
    return os.path.join(ROOT, *parts)


def _frame_to_xy(df, target, cat_cols=()):
    y = df[target].to_numpy()
    X = df.drop(columns=[target])
    X = pd.get_dummies(
        X, columns=[c for c in cat_cols if c in X.columns], dummy_na=False, dtype=float
    )
    X = X.apply(pd.to_numeric, errors="coerce").astype(float)
    X = X.fillna(X.mean()).fillna(0.0)
    return X.to_numpy(), y


def load(name: str):
    task = "regression" if name in REGRESSION else "classification"
    if name == "pima":
        d = np.loadtxt(_p("uci/pima-indians-diabetes/pima-indians-diabetes.data"), delimiter=",")
        X, y = d[:, :-1], d[:, -1]
    elif name == "spectf":
        a = [
            np.loadtxt(_p("uci/spectf", f), delimiter=",") for f in ("SPECTF.train", "SPECTF.test")
        ]
        d = np.vstack(a)
        X, y = d[:, 1:], d[:, 0]
    elif name == "german":
        d = np.loadtxt(_p("uci/german/german.data-numeric"))
        X, y = d[:, :-1], d[:, -1]
    elif name == "ionosphere":
        df = pd.read_csv(_p("uci/ionosphere/ionosphere.data"), header=None)
        X, y = df.iloc[:, :-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "messidor":
        lines = open(_p("uci/messidor/messidor_features.arff")).read().split("@data")[-1].split()
        d = np.array([[float(v) for v in ln.split(",")] for ln in lines if ln.strip()])
        X, y = d[:, :-1], d[:, -1]
    elif name in ("wine_red", "wine_white"):
        df = pd.read_csv(_p("uci/wine-quality", f"winequality-{name[5:]}.csv"), sep=";")
        X, y = df.iloc[:, :-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "spambase":
        d = np.loadtxt(_p("uci/spambase/spambase.data"), delimiter=",")
        X, y = d[:, :-1], d[:, -1]
    elif name == "crx":
        df = pd.read_csv(_p("uci/crx/crx.data"), header=None, na_values="?")
        X, y = _frame_to_xy(df, 15, cat_cols=[0, 3, 4, 5, 6, 8, 9, 11, 12])
    elif name == "fertility":
        df = pd.read_csv(_p("uci/fertility/fertility_Diagnosis.txt"), header=None)
        X, y = df.iloc[:, :-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "hepatitis":
        df = pd.read_csv(_p("uci/hepatitis/hepatitis.data"), header=None, na_values="?")
        X, y = _frame_to_xy(df, 0)
    elif name == "megawatt1":
        df = pd.read_csv(_p("difer/megawatt1/megawatt1.csv"), header=None)
        X, y = _frame_to_xy(df, df.columns[-1])
    elif name == "credit_default":
        df = pd.read_csv(
            _p("uci/default-of-credit-card-clients/default of credit card clients.csv"), header=1
        )
        X, y = df.iloc[:, 1:-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "magic04":
        df = pd.read_csv(_p("uci/magic/magic04.data"), header=None)
        X, y = df.iloc[:, :-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "yeast":
        df = pd.read_csv(_p("uci/yeast/yeast.data"), header=None, sep=r"\s+")
        X, y = df.iloc[:, 1:-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "ecoli":
        df = pd.read_csv(_p("uci/ecoli/ecoli.data"), header=None, sep=r"\s+")
        X, y = df.iloc[:, 1:-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "glass":
        df = pd.read_csv(_p("uci/glass/glass.data"), header=None)
        X, y = df.iloc[:, 1:-1].to_numpy(float), df.iloc[:, -1].to_numpy()
    elif name == "bike":
        df = pd.read_csv(_p("uci/bike-sharing/day.csv"))
        X = df.drop(columns=["instant", "dteday", "casual", "registered", "cnt"]).to_numpy(float)
        y = df["cnt"].to_numpy(float)
    elif name == "housing":
        d = np.loadtxt(_p("uci/housing/housing.data"))
        X, y = d[:, :-1], d[:, -1]
    elif name == "airfoil":
        d = np.loadtxt(_p("uci/airfoil-self-noise/airfoil_self_noise.dat"))
        X, y = d[:, :-1], d[:, -1]
    elif name in ("fri586", "fri589", "fri620"):
        stem = {
            "fri586": "586_fri_c3_1000_25",
            "fri589": "589_fri_c2_1000_25",
            "fri620": "620_fri_c1_1000_25",
        }[name]
        df = pd.read_csv(_p("pmlb", stem, f"{stem}.tsv.gz"), sep="\t")
        X, y = df.iloc[:, :-1].to_numpy(float), df.iloc[:, -1].to_numpy(float)
    else:
        raise KeyError(name)
    if task == "classification":
        y = np.unique(np.asarray(y).astype(str), return_inverse=True)[1]
    return np.asarray(X, dtype=float), y, task
