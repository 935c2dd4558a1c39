"""Random Hinge Forest: training seconds per 1000 minibatches, treebench vs HingeTreeForTorch.

The paper's Table 3 setting on Letter (the first 16000 rows, file order): 100 inner-product
features, 100 trees of depth 10, 26-vector leaves summed, Adam lr 0.005, minibatches of 53.
treebench: the ``hinge_forest`` estimator fitted for ``--iterations`` minibatches (``fit_info_``
training seconds; snapshot selection off). Reference: the model of the authors'
``experiments/run_letter.py`` (Linear -> BatchNorm1d(affine=False) -> RandomHingeForest -> sum)
trained by a plain loop in the same process. HingeTreeForTorch is a C++ extension: build it in its
checkout first (``python setup.py build_ext --inplace``). Reports seconds per 1000 minibatches and
the extrapolation to the paper's 40 000.
"""

from __future__ import annotations

import time

import numpy as np
from _common import fit_measured, fold, ratio, timed, use_reference

REPOSITORY = "github.com/nslay/HingeTreeForTorch (built in place)"


def add_arguments(p):
    """Add this comparison's options to the ``compare.py hinge`` parser ``p``."""
    p.add_argument("--iterations", type=int, default=2000, help="minibatches to time")


def letter():
    """UCI Letter's 16000 training rows (file order), labels as 0..25."""
    Xtr, ytr, _, _ = fold("letter")
    return Xtr.astype(np.float32), np.unique(ytr, return_inverse=True)[1].astype(np.int64)


def reference_net(torch, trees=100, depth=10):
    """Return the authors' Random Hinge Forest network of their letter experiment.

    ``trees`` of ``depth``.
    """
    from RandomHingeForest import RandomHingeForest  # the authors' package, from --ref

    class Net(torch.nn.Module):  # as in the authors' experiments/run_letter.py
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Linear(16, 100, bias=False)
            self.bn = torch.nn.BatchNorm1d(100, affine=False)
            self.forest = RandomHingeForest(100, trees, depth, extra_outputs=26)

        def forward(self, x):
            return self.forest(self.bn(self.features(x))).sum(dim=1)

    return Net()


class Trainer:
    """The reference model's training loop: Adam, cross-entropy, random minibatches."""

    def __init__(self, torch, net, X, y, bs=53, lr=0.005, seed=0):
        self.torch, self.net = torch, net
        self.X, self.y, self.bs = torch.from_numpy(X), torch.from_numpy(y), bs
        self.opt = torch.optim.Adam(net.parameters(), lr=lr, fused=True)
        self.g = np.random.default_rng(seed)
        self.reset()
        net.train()

    def reset(self):
        """Zero the timers and the minibatch count."""
        self.fwd = self.bwd = self.step_s = self.wall = self.cpu = 0.0
        self.n = 0

    def run(self, n):
        """Train on ``n`` minibatches, adding their forward, backward and step times."""
        torch = self.torch
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            b = torch.from_numpy(self.g.integers(0, len(self.y), self.bs))
            t0 = time.process_time()
            loss = torch.nn.functional.cross_entropy(self.net(self.X[b]), self.y[b])
            t1 = time.process_time()
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            t2 = time.process_time()
            self.opt.step()
            self.fwd += t1 - t0
            self.bwd += t2 - t1
            self.step_s += time.process_time() - t2
        self.wall += time.perf_counter() - w0
        self.cpu += time.process_time() - c0
        self.n += n

    def per1000(self):
        """Return the timers per 1000 minibatches."""
        k = 1000 / self.n
        return {
            "wall": self.wall * k,
            "cpu": self.cpu * k,
            "fwd": self.fwd * k,
            "bwd": self.bwd * k,
            "fwd_bwd": (self.fwd + self.bwd) * k,
            "opt": self.step_s * k,
        }


def suite(ref, iterations=1000, seed=0):
    """Return the fits of ``compare.py all``.

    ``iterations`` minibatches of the Table 3 model on Letter; treebench's whole ``fit`` against the
    reference model's training loop.
    """
    import torch

    from treebench.api import make_estimator

    torch.set_num_threads(1)
    Xtr, ytr, Xte, yte = fold("letter")
    classes = np.unique(ytr)
    X, y = Xtr.astype(np.float32), np.searchsorted(classes, ytr).astype(np.int64)
    Xt, yt = Xte.astype(np.float32), np.searchsorted(classes, yte)
    params = {
        "aggregation": "sum",
        "optimizer": "adam",
        "learning_rate": 0.005,
        "n_iterations": iterations,
        "snapshot_every": iterations,
        "selection": "last",
        "validation_fraction": 0.0,
    }
    make_estimator("hinge_forest", params={**params, "n_iterations": 20}).fit(X, y)  # warm-up

    def ours():
        est = make_estimator("hinge_forest", params=params, random_state=seed)
        return fit_measured(est, X, y, Xt, yt)

    fits = {"treebench": ours}
    if not ref:
        return fits
    use_reference(ref)

    def theirs():
        torch.manual_seed(seed)
        net = reference_net(torch)
        with timed() as t:
            Trainer(torch, net, X, y, seed=seed).run(iterations)
        net.eval()
        with torch.no_grad():
            acc = float((net(torch.from_numpy(Xt)).argmax(1).numpy() == yt).mean())
        return {"cpu": t.cpu, "wall": t.wall, "accuracy": acc, "size": 100 * (2**10 - 1)}

    fits["reference"] = theirs
    return fits


def run(a):
    """Run the comparison with the options ``a`` and print its rows."""
    import torch

    from treebench.api import make_estimator

    torch.set_num_threads(1)
    X, y = letter()
    params = {
        "aggregation": "sum",
        "optimizer": "adam",
        "learning_rate": 0.005,
        "n_iterations": a.iterations,
        "snapshot_every": a.iterations,
        "selection": "last",
        "validation_fraction": 0.0,
    }
    make_estimator("hinge_forest", params={**params, "n_iterations": 20}).fit(X, y)  # warm-up
    est = make_estimator("hinge_forest", params=params, random_state=0)
    with timed() as t:
        est.fit(X, y)
    ours = est.fit_info_["seconds_per_1000_iterations"]
    print(
        f"treebench          s/1000 minibatches: training {ours:.2f} (fit in all: wall "
        f"{t.wall:.1f} s, CPU {t.cpu:.1f} s) -> 40000 minibatches: {40 * ours:.0f} s"
    )
    if not a.ref:
        return
    use_reference(a.ref)
    tr = Trainer(torch, reference_net(torch), X, y)
    tr.run(20)
    tr.reset()
    tr.run(a.iterations)
    p = tr.per1000()
    print(
        f"HingeTreeForTorch  s/1000 minibatches: wall {p['wall']:.2f} cpu {p['cpu']:.2f} "
        f"(cpu: forward {p['fwd']:.2f}, backward {p['bwd']:.2f}, optimiser {p['opt']:.2f}) "
        f"-> 40000 minibatches: {40 * p['wall']:.0f} s"
    )
    print(f"reference/treebench (wall, training only): {ratio(p['wall'], ours)}")
