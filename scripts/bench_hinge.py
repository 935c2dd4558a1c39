"""Training speed of treebench's Random Hinge Forest (and, optionally, the authors' C++ extension).

  python scripts/bench_hinge.py speed --iterations 2000 --threads 1 [--ref /path/to/HingeTreeForTorch]
  python scripts/bench_hinge.py scaling --iterations 200

``speed``: Letter (first 16000 rows), 100 inner-product features, 100 trees of depth 10, 26-vector leaves
summed, Adam lr 0.005, batch 53 -- the paper's Table 3 setting. Reports seconds per 1000 minibatches
(wall and process CPU) and the extrapolation to 40 000 minibatches. With ``--ref`` the authors'
HingeTreeForTorch checkout (built in place with ``python setup.py build_ext --inplace``; never part of
treebench) is timed in the same process, its model being the one of its ``experiments/run_letter.py``
(Linear -> BatchNorm1d(affine=False) -> RandomHingeForest -> sum). Both run in interleaved blocks so a
shared machine's load hits both alike; the ratio is the number to quote.

``scaling``: forward+backward and optimiser-step time per 1000 minibatches for depth 5/10/15 at 100
trees and for 10/100/1000 trees at depth 10 (scalar leaves + linear aggregation, so depth 15 fits).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's treebench


def letter():
    """UCI Letter's 16000 training rows (file order), labels as 0..25, via treebench's loaders."""
    from treebench.api import load_fold

    f = load_fold("letter")
    y = np.unique(f.y_train, return_inverse=True)[1]
    return f.X_train.astype(np.float32), y.astype(np.int64)


def ours(torch, trees=100, depth=10, aggregation="sum", n_out=26, kind="tree"):
    from treebench.methods.hinge.net import HingeNet

    g = torch.Generator().manual_seed(0)
    net = HingeNet(16, n_out, trees, depth, kind, aggregation=aggregation, generator=g)
    return net, net.bn.update, "treebench"


def reference(torch, path, trees=100, depth=10):
    sys.path.insert(0, path)
    from RandomHingeForest import RandomHingeForest  # noqa: PLC0415 - the authors' package

    class Net(torch.nn.Module):  # as in the authors' experiments/run_letter.py
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Linear(16, 100, bias=False)
            self.bn = torch.nn.BatchNorm1d(100, affine=False)
            self.forest = RandomHingeForest(100, trees, depth, extra_outputs=26)

        def forward(self, x):
            return self.forest(self.bn(self.features(x))).sum(dim=1)

    return Net(), lambda: None, "torch"


class Trainer:
    def __init__(self, torch, net, after_step, optim, X, y, bs=53, lr=0.005, seed=0):
        self.torch, self.net, self.after = torch, net, after_step
        self.X, self.y, self.bs = torch.from_numpy(X), torch.from_numpy(y), bs
        if optim == "treebench":  # what the estimator uses (HingeAdam + sparse leaf gradients)
            from treebench.methods.hinge.net import make_optimizer

            self.opt = make_optimizer("adam", net, lr)
        else:
            self.opt = torch.optim.Adam(net.parameters(), lr=lr, fused=True)
        self.g = np.random.default_rng(seed)
        self.reset()
        net.train()

    def reset(self):
        self.fwd = self.bwd = self.step_s = self.wall = self.cpu = 0.0
        self.n = 0

    def run(self, n):
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
            self.after()
            self.fwd += t1 - t0
            self.bwd += t2 - t1
            self.step_s += time.process_time() - t2
        self.wall += time.perf_counter() - w0
        self.cpu += time.process_time() - c0
        self.n += n

    def per1000(self):
        k = 1000 / self.n
        return {
            "wall": self.wall * k,
            "cpu": self.cpu * k,
            "fwd": self.fwd * k,
            "bwd": self.bwd * k,
            "fwd_bwd": (self.fwd + self.bwd) * k,
            "opt": self.step_s * k,
        }


def speed(a, torch):
    X, y = letter()
    runs = {"treebench": Trainer(torch, *ours(torch), X, y)}
    if a.ref:
        runs["HingeTreeForTorch"] = Trainer(torch, *reference(torch, a.ref), X, y)
    for t in runs.values():  # warm-up
        t.run(20)
        t.reset()
    block = 100
    for _ in range(max(1, a.iterations // block)):
        for t in runs.values():
            t.run(block)
    print(
        f"threads={torch.get_num_threads()} minibatches={a.iterations} (machine shared; "
        "interleaved blocks of 100)"
    )
    for name, t in runs.items():
        p = t.per1000()
        print(
            f"{name:18s} s/1000 minibatches: wall {p['wall']:.2f} cpu {p['cpu']:.2f} "
            f"(cpu: forward {p['fwd']:.2f}, backward {p['bwd']:.2f}, optimiser {p['opt']:.2f}) -> 40000 minibatches: "
            f"wall {40 * p['wall']:.0f} s, cpu {40 * p['cpu']:.0f} s"
        )
    if a.ref:
        r, o = runs["HingeTreeForTorch"].per1000(), runs["treebench"].per1000()
        print(
            f"ratio reference/treebench: wall {r['wall'] / o['wall']:.2f}  "
            f"cpu {r['cpu'] / o['cpu']:.2f}  fwd+bwd {r['fwd_bwd'] / o['fwd_bwd']:.2f}"
        )


def scaling(a, torch):
    X, y = letter()
    rows = [(100, 5), (100, 10), (100, 15), (10, 10), (1000, 10)]
    trainers = {r: Trainer(torch, *ours(torch, r[0], r[1], "linear"), X, y) for r in rows}
    for t in trainers.values():
        t.run(10)
        t.reset()
    for _ in range(max(1, a.iterations // 50)):
        for t in trainers.values():
            t.run(50)
    print(
        f"threads={torch.get_num_threads()}, {a.iterations} minibatches of 53, Letter, scalar leaves"
        " + linear aggregation, Adam; seconds per 1000 minibatches (machine shared)"
    )
    print("CPU seconds (process time) per 1000 minibatches; wall is inflated by the shared machine")
    print("| trees | depth | params | forward | backward | optimiser | total cpu | wall |")
    print("|---|---|---|---|---|---|---|---|")
    for (m, d), t in trainers.items():
        p = t.per1000()
        n_par = sum(q.numel() for q in t.net.parameters())
        print(
            f"| {m} | {d} | {n_par} | {p['fwd']:.2f} | {p['bwd']:.2f} | {p['opt']:.2f} | "
            f"{p['cpu']:.2f} | {p['wall']:.1f} |"
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["speed", "scaling"])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ref", default=None, help="path of a built HingeTreeForTorch checkout")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    (speed if a.mode == "speed" else scaling)(a, torch)


if __name__ == "__main__":
    main()
