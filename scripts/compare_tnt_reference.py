"""Side-by-side timing of treebench's TnT and the public reference implementation.

Usage (the reference checkout is NOT part of treebench; pass its path):
    python scripts/compare_tnt_reference.py /path/to/TnTDecisionGraph --dataset letter --ccp 1.2e-4
    python scripts/compare_tnt_reference.py /path/to/TnTDecisionGraph --dataset mnist --ccp 1e-4

Both get the same data, N1, N2, ccp_alpha and random_state (--seed, default 0); prints #splits, #leaves, train/test
accuracy and seconds for each, and the speed ratio. ``--skip-reference`` times treebench only.
Data: MNIST IDX files (raw 0-255 pixels, 60k/10k), UCI Letter (file order 16000/4000), sklearn digits.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time

import numpy as np

MNIST = "../shared/data/mnist"
LETTER = "../shared/data/uci/letter-recognition/letter-recognition.data"


def read_idx(path):
    with gzip.open(path) as f:
        data = f.read()
    nd = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * nd).reshape(shape)


def load(name, mnist_dir=MNIST, letter_file=LETTER):
    if name == "mnist":
        Xtr = read_idx(f"{mnist_dir}/train-images-idx3-ubyte.gz").reshape(60000, -1)
        ytr = read_idx(f"{mnist_dir}/train-labels-idx1-ubyte.gz")
        Xte = read_idx(f"{mnist_dir}/t10k-images-idx3-ubyte.gz").reshape(10000, -1)
        yte = read_idx(f"{mnist_dir}/t10k-labels-idx1-ubyte.gz")
    elif name == "letter":
        raw = np.loadtxt(letter_file, delimiter=",", dtype=str)
        y = np.unique(raw[:, 0], return_inverse=True)[1]
        X = raw[:, 1:].astype(np.float64)
        Xtr, Xte, ytr, yte = X[:16000], X[16000:], y[:16000], y[16000:]
    elif name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        X, y = load_digits(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.33, random_state=0)
    else:
        raise SystemExit(f"unknown dataset {name}")
    f = np.float64
    return Xtr.astype(f), ytr.astype(np.int64), Xte.astype(f), yte.astype(np.int64)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("reference", help="path to a checkout of BingzhaoZhu/TnTDecisionGraph")
    ap.add_argument("--dataset", default="letter", choices=["mnist", "letter", "digits"])
    ap.add_argument("--ccp", type=float, default=1.2e-4)
    ap.add_argument("--N1", type=int, default=2)
    ap.add_argument("--N2", type=int, default=5)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--seed", type=int, default=0, help="random_state of both implementations")
    ap.add_argument(
        "--compat",
        action="store_true",
        help="treebench uses the reference's weight scale and care-set order (tie-breaking only)",
    )
    ap.add_argument(
        "--n-train", type=int, default=None, help="use only the first n training samples"
    )
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    Xtr, ytr, Xte, yte = load(args.dataset)
    if args.n_train:
        Xtr, ytr = Xtr[: args.n_train], ytr[: args.n_train]
    print(
        f"data {args.dataset}: train {Xtr.shape}, test {Xte.shape}; N1={args.N1} N2={args.N2} "
        f"ccp_alpha={args.ccp:g}",
        flush=True,
    )

    from treebench.methods.tnt import TnTClassifier

    t0, c0 = time.perf_counter(), time.process_time()
    ours = TnTClassifier(ccp_alpha=args.ccp, N1=args.N1, N2=args.N2, random_state=args.seed)
    ours._reference_compat = args.compat  # reference weights/care-set order (tie-breaking only)
    ours.fit(Xtr, ytr)
    t_ours, cpu_ours = time.perf_counter() - t0, time.process_time() - c0
    rep = ours.size_report(Xte)
    print(
        f"treebench  : {t_ours:8.2f} s (CPU {cpu_ours:.2f} s)  #S={ours.n_splits_} leaves={ours.n_leaves_} "
        f"train={ours.score(Xtr, ytr):.4f} test={ours.score(Xte, yte):.4f} "
        f"mean_depth={rep['mean_depth']:.1f} depth={rep['depth']} info={ours.fit_info_}",
        flush=True,
    )
    if args.skip_reference:
        return
    sys.path.insert(0, args.reference)
    from TreeInTree import TnT  # the reference implementation, from the given path

    t0, c0 = time.perf_counter(), time.process_time()
    ref = TnT(N1=args.N1, N2=args.N2, ccp_alpha=args.ccp, random_state=args.seed)
    ref.fit(Xtr, ytr)
    t_ref, cpu_ref = time.perf_counter() - t0, time.process_time() - c0
    n_int, n_leaf = ref.check_complexity()
    acc_tr = float((ref.predict(Xtr) == ytr).mean())
    acc_te = float((ref.predict(Xte) == yte).mean())
    agree = float((ref.predict(Xte) == ours.predict(Xte)).mean())
    print(
        f"reference  : {t_ref:8.2f} s (CPU {cpu_ref:.2f} s)  #S={n_int} leaves={n_leaf} train={acc_tr:.4f} test={acc_te:.4f}"
    )
    print(
        f"speed-up (reference / treebench): wall {t_ref / t_ours:.1f}x, CPU {cpu_ref / cpu_ours:.1f}x; test prediction agreement "
        f"{agree:.4f}; test acc difference {100 * (ours.score(Xte, yte) - acc_te):+.2f} pp"
    )


if __name__ == "__main__":
    main()
