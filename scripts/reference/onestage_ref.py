"""One-Stage: seconds per training epoch, treebench vs the authors' One-Stage-Tree code.

The reference's training loop needs PyTorch Lightning 1.x; instead of installing it, this registers
a minimal stand-in module (LightningModule = torch.nn.Module with ``device``/``log``, Callback,
LightningDataModule) and drives the reference's own objects per minibatch exactly as Lightning
would: ArchOptimizer.on_train_batch_start (gamma binarisation) -> training_step -> backward -> Adam
step -> LeafOptimizer.on_train_batch_end (leaves on the whole training part) ->
ArchOptimizer.on_train_batch_end (gamma step on the whole validation part). Lightning's own per-step
overhead is left out, so the reference time is a lower bound. The reference's ``utils.data`` uses
``np.long`` (removed in numpy 2); it is aliased to ``np.int64`` before the import.

Data: Pima (the mirror's file through treebench), the reference's protocol: 80/20 split, scaler on
the 80 %, 25 % of it as validation (460 training rows); depth 6, batch 32. The two implementations
are timed alternately (``--rounds`` times each) so that load from other users of the machine hits
both alike; the medians are compared. ``--credit`` also times treebench alone on credit_default (the
80 % training part, 24,000 rows) at n_jobs 1 and 2.
"""

from __future__ import annotations

import sys
import time
import types

import numpy as np
from _common import fold, ratio, use_reference

REPOSITORY = "github.com/Unkrible/One-Stage-Tree"


def add_arguments(p):
    """Add this comparison's options to the ``compare.py onestage`` parser ``p``."""
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--credit", action="store_true", help="also treebench on credit_default")


def pooled(name):
    """Return dataset ``name``'s train and test parts pooled, labels as class indices."""
    Xtr, ytr, Xte, yte = fold(name)
    return np.r_[Xtr, Xte].astype(np.float64), np.unique(np.r_[ytr, yte], return_inverse=True)[1]


def install_lightning_standin(torch):
    """Install a minimal ``pytorch_lightning`` module so that the reference code imports."""
    pl = types.ModuleType("pytorch_lightning")

    class LightningModule(torch.nn.Module):
        @property
        def device(self):
            return torch.device("cpu")

        def log(self, *a, **k):
            pass

    class LightningDataModule:
        pass

    class Callback:
        pass

    pl.LightningModule = LightningModule
    pl.LightningDataModule = LightningDataModule
    pl.callbacks = types.SimpleNamespace(Callback=Callback)
    sys.modules["pytorch_lightning"] = pl


def reference_epoch_seconds(Xtr, ytr, Xva, yva, depth, epochs, seed):
    """Median (wall, CPU) seconds of the reference's training epochs."""
    times = reference_fit(Xtr, ytr, Xva, yva, depth, epochs, seed)[1]
    return tuple(np.median(np.array(times), axis=0))


def reference_fit(Xtr, ytr, Xva, yva, depth, epochs, seed):
    """Return the reference's tree trained for ``epochs`` and its (wall, CPU) seconds per epoch."""
    import torch

    install_lightning_standin(torch)
    if not hasattr(np, "long"):
        np.long = np.int64  # numpy-2 stand-in for the reference's PlainDataset
    from torch.utils import data as tud
    from tree import ArchOptimizer, HierarchicalTree, LeafOptimizer  # the reference's own modules
    from utils.data import PlainDataset

    torch.manual_seed(seed)  # the reference relies on the global RNG (pl.seed_everything)
    k = int(ytr.max()) + 1
    tree = HierarchicalTree(input_dim=Xtr.shape[1], output_dim=k, loss="ce", max_depth=depth)
    opt = tree.configure_optimizers()
    ytr2, yva2 = ytr.reshape(-1, 1), yva.reshape(-1, 1)
    train_dl = tud.DataLoader(PlainDataset(Xtr, ytr2, n_classes=k), shuffle=True, batch_size=32)
    val_ds = PlainDataset(Xva, yva2, n_classes=k)
    leaf = LeafOptimizer((Xtr, ytr2))
    arch = ArchOptimizer(tud.DataLoader(val_ds, batch_size=len(val_ds)))
    arch.on_fit_start(None, tree)
    times = []
    for _ in range(epochs):
        t0, c0 = time.perf_counter(), time.process_time()
        tree.train()
        for i, batch in enumerate(train_dl):
            arch.on_train_batch_start(None, tree, batch, i, 0)
            loss = tree.training_step(batch, i)
            opt.zero_grad()
            loss.backward()
            opt.step()
            leaf.on_train_batch_end(None, tree, None, batch, i, 0)
            arch.on_train_batch_end(None, tree, None, batch, i, 0)
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    return tree, times


def ours_epoch_seconds(X, y, depth, epochs, seed, n_jobs=1):
    """Fit treebench's One-Stage tree on ``X, y``.

    Return its (wall, CPU) seconds per epoch and the model.
    """
    from treebench.api import make_estimator

    m = make_estimator(
        "onestage",
        params={"max_depth": depth, "max_epochs": epochs, "patience": epochs + 1},
        random_state=seed,
        n_jobs=n_jobs,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    m.fit(X, y)
    ep = m.fit_info_["epochs"]
    return ((time.perf_counter() - t0) / ep, (time.process_time() - c0) / ep), m


def split_pima():
    """Pima as the reference's protocol splits it.

    80/20, scaler on the 80 %, 25 % of it validation; ``(X_80, y_80, X_test, y_test, scaled train,
    y, scaled validation, y, scaled test)``.
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = pooled("pima")
    Xtr80, Xte, ytr80, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    sc = StandardScaler().fit(Xtr80)
    Xs = sc.transform(Xtr80).astype(np.float32)
    Xtr, Xva, ytr, yva = train_test_split(Xs, ytr80, test_size=0.25, random_state=0)
    return Xtr80, ytr80, Xte, yte, Xtr, ytr, Xva, yva, sc.transform(Xte).astype(np.float32)


def suite(ref, depth=6, epochs=5, seed=0):
    """Return the fits of ``compare.py all``.

    ``epochs`` training epochs on Pima; treebench's whole ``fit`` against the reference's training
    loop (tree built, Lightning overhead excluded).
    """
    import torch

    torch.set_num_threads(1)
    Xtr80, ytr80, Xte, yte, Xtr, ytr, Xva, yva, Xte_s = split_pima()
    ours_epoch_seconds(Xtr80[:64], ytr80[:64], 2, 1, 0)  # compile the numba kernels

    def ours():
        from treebench.api import make_estimator

        m = make_estimator(
            "onestage",
            params={"max_depth": depth, "max_epochs": epochs, "patience": epochs + 1},
            random_state=seed,
            n_jobs=1,
        )
        t0, c0 = time.perf_counter(), time.process_time()
        m.fit(Xtr80, ytr80)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        acc = float((m.predict(Xte) == yte).mean())
        return {"cpu": cpu, "wall": wall, "accuracy": acc, "size": m.size_report(Xte)["n_splits"]}

    fits = {"treebench": ours}
    if not ref:
        return fits
    use_reference(ref)

    def theirs():
        t0, c0 = time.perf_counter(), time.process_time()
        tree = reference_fit(Xtr, ytr, Xva, yva, depth, epochs, seed)[0]
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        tree.eval()
        with torch.no_grad():
            acc = float(tree.score(Xte_s, yte))
        return {"cpu": cpu, "wall": wall, "accuracy": acc, "size": None}

    fits["reference"] = theirs
    return fits


def run(a):
    """Run the comparison with the options ``a`` and print its rows."""
    import torch
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    if a.ref:
        use_reference(a.ref)
    X, y = pooled("pima")
    with threadpool_limits(1):
        # the reference's protocol: 80/20 split, scaler on the 80%, then 25% of it as validation
        Xtr80, Xte, ytr80, yte = train_test_split(X, y, test_size=0.2, random_state=0)
        sc = StandardScaler().fit(Xtr80)
        Xs = sc.transform(Xtr80).astype(np.float32)
        Xtr, Xva, ytr, yva = train_test_split(Xs, ytr80, test_size=0.25, random_state=0)
        print(
            f"pima: {len(ytr)} training rows, {len(yva)} validation rows, depth {a.depth}, batch 32"
        )
        ours_epoch_seconds(Xtr80[:64], ytr80[:64], 2, 1, 0)  # compile the numba kernels
        ours_t, ref_t = [], []
        for r in range(a.rounds):
            ours, m = ours_epoch_seconds(Xtr80, ytr80, a.depth, a.epochs, r)
            ours_t.append(ours)
            print(
                f"round {r}: treebench onestage {ours[0]:.4f} s/epoch wall, {ours[1]:.4f} CPU "
                f"(n_train_part={m.fit_info_['n_train_part']})",
                flush=True,
            )
            if a.ref:
                ref = reference_epoch_seconds(Xtr, ytr, Xva, yva, a.depth, a.epochs, r)
                ref_t.append(ref)
                print(
                    f"round {r}: reference code     {ref[0]:.4f} s/epoch wall, {ref[1]:.4f} CPU "
                    f"(Lightning loop overhead excluded)",
                    flush=True,
                )
        ours = np.median(np.array(ours_t), axis=0)
        print(
            f"pima depth {a.depth}: treebench {ours[0]:.4f} s/epoch wall, {ours[1]:.4f} CPU "
            f"(median of {a.rounds})"
        )
        if ref_t:
            ref = np.median(np.array(ref_t), axis=0)
            print(
                f"pima depth {a.depth}: reference {ref[0]:.4f} s/epoch wall, {ref[1]:.4f} CPU "
                f"(median of {a.rounds})"
            )
            print(
                f"reference/treebench: {ratio(ref[0], ours[0])} wall, {ratio(ref[1], ours[1])} CPU"
            )
        if a.credit:
            X, y = pooled("credit_default")
            Xtr80, _, ytr80, _ = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
            for jobs in (1, 2):
                with threadpool_limits(jobs):
                    ours, m = ours_epoch_seconds(Xtr80, ytr80, a.depth, a.epochs, 0, n_jobs=jobs)
                print(
                    f"credit_default: treebench onestage {ours[0]:.3f} s/epoch wall, "
                    f"{ours[1]:.3f} s CPU (all threads) at depth {a.depth}, "
                    f"n_jobs={jobs} ({m.fit_info_['n_train_part']} training rows, "
                    f"{m.fit_info_['n_val_part']} validation)",
                    flush=True,
                )
