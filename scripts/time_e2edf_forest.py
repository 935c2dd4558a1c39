"""E2EDF forest training speed: compiled kernels vs the torch path, side by side (same data/seed).

  python scripts/time_e2edf_forest.py --dataset letter --trees 10 --epochs 5 --finetune-epochs 3
        [--threads 1] [--modes kernels torch]

For each mode (alternating, same process and load): greedy seconds (``epochs`` per stump), then
Finetune seconds per epoch on the kernel-grown greedy forest (the same structure for both modes),
and the test accuracy of the result.  Prints the machine load (shared machine) with every timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from e2edt_data import LOADERS  # noqa: E402

from treebench.methods.e2edt import (
    E2EDFClassifier,  # noqa: E402
    core,  # noqa: E402
)

FOREST = {
    "letter": dict(max_features=8),
    "usps": dict(patch_size=10, image_shape=(16, 16)),
    "mnist": dict(patch_size=15, image_shape=(28, 28)),
}


def load_avg():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="letter")
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--finetune-epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", nargs="+", default=["kernels", "torch"])
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    Xtr, ytr, Xte, yte = LOADERS[a.dataset]()
    kw = dict(n_estimators=a.trees, max_depth=10, epochs=a.epochs, n_jobs=a.threads)
    kw.update(FOREST[a.dataset])
    base = None
    for mode in a.modes:
        core.KERNELS_ENABLED = mode == "kernels"
        ld = load_avg()
        t = time.perf_counter()
        f = E2EDFClassifier(finetune_epochs=0, random_state=a.seed, **kw).fit(Xtr, ytr)
        tg = time.perf_counter() - t
        acc_g = float((f.predict(Xte) == yte).mean())
        print(
            f"[{mode}] greedy {a.trees} trees x {a.epochs} epochs: {tg:.1f} s, "
            f"{f.struct_.n_splits / a.trees:.1f} splits/tree, test {acc_g:.4f} "
            f"(load {ld:.1f} -> {load_avg():.1f}, threads {a.threads})",
            flush=True,
        )
        if base is None:
            base = f
    for mode in a.modes:
        core.KERNELS_ENABLED = mode == "kernels"
        f = base
        ld = load_avg()
        t = time.perf_counter()
        bank, gamma, pi, _ = f._finetune(
            core, torch, f.bank_.select(np.arange(len(f.bank_))), f.struct_, f.gamma_, f.pi_,
            torch.from_numpy(f._scale(Xtr)), torch.from_numpy(np.searchsorted(f.classes_, ytr)),
            torch.ones(len(Xtr)), len(f.classes_), a.finetune_epochs, torch_generator(a.seed),
            None, None,
        )  # fmt: skip
        tf = time.perf_counter() - t
        g = E2EDFClassifier(**kw)
        g.__dict__.update(f.__dict__)
        g.bank_, g.gamma_, g.pi_ = bank, gamma, pi
        acc = float((g.predict(Xte) == yte).mean())
        print(
            f"[{mode}] finetune {a.finetune_epochs} epochs: {tf / a.finetune_epochs:.2f} s/epoch, "
            f"test {acc:.4f} (load {ld:.1f} -> {load_avg():.1f}, threads {a.threads})",
            flush=True,
        )
    core.KERNELS_ENABLED = True


def torch_generator(seed):
    from treebench.methods.base import torch_generator as tg

    return tg(seed)


if __name__ == "__main__":
    main()
