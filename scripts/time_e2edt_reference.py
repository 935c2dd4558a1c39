"""Side-by-side timing of treebench's E2EDT against the public reference implementation.

Usage:  python scripts/time_e2edt_reference.py /path/to/endtoenddecisiontrees [--depth 8]
            [--epochs 20] [--ref-finetune-epochs 3] [--finetune-epochs 20]

The reference checkout (github tomsal/endtoenddecisiontrees) is imported from the given path; it is
neither copied nor modified.  Only one compatibility shim is applied at run time for modern PyTorch:
boolean masks where the 2018 code uses uint8 masks (``Tensor.byte`` on masks).  Both models are
trained on the same data (LIBSVM Letter, standardised) and the same tree settings, with 1 thread.
Timings on a shared machine are noisy: read the ratios, which are measured in the same process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reference", help="path of a checkout of tomsal/endtoenddecisiontrees")
    ap.add_argument("--dataset", default="letter")
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--finetune-epochs", type=int, default=20)
    ap.add_argument(
        "--ref-finetune-epochs",
        type=int,
        default=3,
        help="Finetune epochs to time on the reference (it is slow)",
    )
    ap.add_argument("--skip-reference", action="store_true")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from e2edt_data import LOADERS

    from treebench.methods.e2edt import E2EDTClassifier, core

    Xtr, ytr, Xte, yte = LOADERS[args.dataset]()
    classes, y_enc = np.unique(ytr, return_inverse=True)
    yte_enc = np.searchsorted(classes, yte)
    print(
        f"data {args.dataset}: train {Xtr.shape}, test {Xte.shape}, classes {len(classes)}; "
        f"depth {args.depth}, {args.epochs} epochs per split, torch threads 1"
    )

    # ------------------------------------------------------------------ treebench
    est = E2EDTClassifier(
        max_depth=args.depth, epochs=args.epochs, finetune_epochs=0, random_state=0, n_jobs=1
    )
    c0 = time.process_time()
    est.fit(Xtr, ytr)
    tb_greedy_cpu = time.process_time() - c0
    tb_greedy = est.fit_info_["greedy_seconds"]
    acc_g = (est.predict(Xte) == yte).mean()
    stamps = [time.perf_counter()]
    cpu = [time.process_time()]
    Xt, yt = torch.from_numpy(Xtr), torch.from_numpy(y_enc.astype(np.int64))
    bank, gamma, pi, _ = core.finetune(
        est.bank_,
        est.struct_,
        est.gamma_,
        est.pi_,
        Xt,
        yt,
        torch.ones(len(yt)),
        len(classes),
        args.finetune_epochs,
        0.1,
        1000,
        torch.Generator().manual_seed(0),
        callback=lambda e: (stamps.append(time.perf_counter()), cpu.append(time.process_time())),
    )
    ep = np.diff(stamps)
    tb_ft_cpu = float(np.diff(cpu)[1:].mean())
    est.bank_, est.gamma_, est.pi_ = bank, gamma, pi
    acc_f = (est.predict(Xte) == yte).mean()
    tb_ft = float(ep[1:].mean()) if len(ep) > 1 else float(ep[0])
    print(
        f"treebench: greedy {tb_greedy:.2f} s wall / {tb_greedy_cpu:.2f} s CPU "
        f"({est.struct_.n_splits} splits), greedy test acc "
        f"{acc_g:.4f}; finetune {tb_ft:.3f} s/epoch wall / {tb_ft_cpu:.3f} CPU (first, leaves-only epoch {ep[0]:.3f} s), "
        f"finetuned test acc {acc_f:.4f} (deterministic)"
    )
    if args.skip_reference:
        return

    # ------------------------------------------------------------------ reference
    sys.path.insert(0, os.path.abspath(args.reference))
    _orig_byte = torch.Tensor.byte
    torch.Tensor.byte = lambda self: (
        self.bool() if self.dtype in (torch.bool, torch.uint8) or self.dim() else _orig_byte(self)
    )
    from e2edt import DecisionTree  # noqa: E402  (the reference package)

    ds = torch.utils.data.TensorDataset(
        torch.from_numpy(Xtr), torch.from_numpy(y_enc.astype(np.int64))
    )
    torch.manual_seed(0)  # the reference draws from the global RNG
    model = DecisionTree(Xtr.shape[1], len(classes), initial_steepness=1.0, batch_size=1000)
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit_greedy(ds, epochs=args.epochs, algo="EM", steepness_inc=0.1, max_depth=args.depth)
    ref_greedy = time.perf_counter() - t0
    ref_greedy_cpu = time.process_time() - c0
    nodes = [0]
    model.root.foreach(lambda nd: nodes.__setitem__(0, nodes[0] + int(not nd._path_end)))
    Xte_t = torch.from_numpy(Xte)
    with torch.no_grad():
        ref_acc_g = float((model(Xte_t, discrete=True).argmax(1).numpy() == yte_enc).mean())
    stamps, cpu = [time.perf_counter()], [time.process_time()]
    for _ in model.refine(ds, args.ref_finetune_epochs, "EM"):
        model.root.set_steepness(inc_value=0.1)
        stamps.append(time.perf_counter())
        cpu.append(time.process_time())
    rep = np.diff(stamps)
    ref_ft = float(rep[1:].mean()) if len(rep) > 1 else float(rep[0])
    ref_ft_cpu = float(np.diff(cpu)[1:].mean())
    print(
        f"reference: greedy {ref_greedy:.2f} s wall / {ref_greedy_cpu:.2f} s CPU "
        f"({nodes[0]} splits), greedy test acc "
        f"{ref_acc_g:.4f}; finetune {ref_ft:.3f} s/epoch wall / {ref_ft_cpu:.3f} CPU over {len(rep) - 1} full epochs "
        f"(first, leaves-only epoch {rep[0]:.3f} s)"
    )
    print(
        f"speed-up (wall): greedy {ref_greedy / tb_greedy:.1f}x, finetune per epoch "
        f"{ref_ft / tb_ft:.1f}x"
    )
    print(
        f"speed-up (CPU):  greedy {ref_greedy_cpu / tb_greedy_cpu:.1f}x, finetune per epoch "
        f"{ref_ft_cpu / tb_ft_cpu:.1f}x"
    )


if __name__ == "__main__":
    main()
