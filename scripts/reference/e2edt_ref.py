"""E2EDT: greedy and finetune seconds, treebench vs the authors' endtoenddecisiontrees code.

Both train one tree on the same data with the same settings (depth, epochs per split, steepness
increment 0.1, batch ``--batch-size``: the reference's 1000 unless given; treebench's own default
``auto`` takes smaller batches), torch with 1 thread; ``--seed`` seeds both (treebench's
``random_state``, the reference's global torch RNG); ``--greedy-only`` skips both Finetunes.
treebench: greedy seconds and test accuracy of a fit without finetuning, then finetune seconds per
epoch (``fit_info_``) and test accuracy of a fit with ``--finetune-epochs``. Reference:
``fit_greedy`` (EM), then ``--ref-finetune-epochs`` of ``refine`` (it is slow), the first
(leaves-only) epoch reported apart. The reference is imported from the checkout, neither copied nor
modified; one shim is applied at run time for modern PyTorch: boolean masks where the 2018 code uses
uint8 masks (``Tensor.byte`` on masks).

Data: letter = LIBSVM Letter 15000/5000, standardised on train; usps = ESL zip 7291/2007, pixels
rescaled to [0, 1]; mnist = 60000/10000, normalised as the reference ((x/255 - 0.1307) / 0.3081).
"""

from __future__ import annotations

import numpy as np
from _common import fit_measured, fold, ratio, timed, use_reference

REPOSITORY = "github.com/tomsal/endtoenddecisiontrees"

DATA = {  # dataset: (treebench dataset, overrides, pixel transform)
    "letter": ("letter_libsvm", ["++dataset.preprocess.scale=standard"], lambda X: X),
    "usps": ("usps", [], lambda X: (X + 1) / 2),
    "mnist": ("mnist", [], lambda X: (X / 255 - 0.1307) / 0.3081),
}


def add_arguments(p):
    """Add this comparison's options to the ``compare.py e2edt`` parser ``p``."""
    p.add_argument("--dataset", default="letter", choices=sorted(DATA))
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--finetune-epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--batch-size",
        default="1000",
        help="minibatch rows of both (the reference's 1000); 'auto' is treebench's default",
    )
    p.add_argument("--greedy-only", action="store_true", help="no Finetune on either side")
    p.add_argument(
        "--ref-finetune-epochs",
        type=int,
        default=3,
        help="Finetune epochs to time on the reference (it is slow)",
    )


def load(name):
    """Return fold 0 of dataset ``name`` as float32 features and integer labels, scaled."""
    ds, overrides, scale = DATA[name]
    Xtr, ytr, Xte, yte = fold(ds, 0, overrides)
    f = np.float32
    return scale(Xtr).astype(f), ytr.astype(int), scale(Xte).astype(f), yte.astype(int)


def reference_class(torch):
    """Return the reference's ``DecisionTree``, patched to use boolean masks for ``Tensor.byte``.

    Modern PyTorch refuses byte masks.
    """
    if not getattr(torch.Tensor.byte, "_bool_mask_shim", False):
        orig = torch.Tensor.byte

        def byte(self):
            return (
                self.bool() if self.dtype in (torch.bool, torch.uint8) or self.dim() else orig(self)
            )

        byte._bool_mask_shim = True
        torch.Tensor.byte = byte
    from e2edt import DecisionTree  # the reference package, from the --ref checkout

    return DecisionTree


def suite(ref, dataset="letter", depth=8, epochs=3, finetune_epochs=2, batch_size=1000, seed=0):
    """Return the fits of ``compare.py all``.

    Greedy growth then ``finetune_epochs`` of Finetune (the reference's ``refine``, the leaves-only
    first epoch included on both sides), timed together.
    """
    import torch

    from treebench.api import make_estimator

    torch.set_num_threads(1)
    Xtr, ytr, Xte, yte = load(dataset)
    classes, y_enc = np.unique(ytr, return_inverse=True)
    yte_enc = np.searchsorted(classes, yte)
    warm = {"max_depth": 2, "epochs": 1, "finetune_epochs": 1, "batch_size": batch_size}
    make_estimator("e2edt", params=warm).fit(Xtr[:2000], ytr[:2000])  # compile the numba kernels

    def ours():
        est = make_estimator(
            "e2edt",
            params={
                "max_depth": depth,
                "epochs": epochs,
                "finetune_epochs": finetune_epochs,
                "batch_size": batch_size,
            },
            random_state=seed,
        )
        return fit_measured(est, Xtr, ytr, Xte, yte)

    fits = {"treebench": ours}
    if not ref:
        return fits
    use_reference(ref)
    DecisionTree = reference_class(torch)
    ds = torch.utils.data.TensorDataset(
        torch.from_numpy(Xtr), torch.from_numpy(y_enc.astype(np.int64))
    )

    def theirs():
        torch.manual_seed(seed)
        model = DecisionTree(
            Xtr.shape[1], len(classes), initial_steepness=1.0, batch_size=batch_size
        )
        with timed() as t:
            model.fit_greedy(ds, epochs=epochs, algo="EM", steepness_inc=0.1, max_depth=depth)
            for _ in model.refine(ds, finetune_epochs, "EM"):
                model.root.set_steepness(inc_value=0.1)
        nodes = [0]
        model.root.foreach(lambda nd: nodes.__setitem__(0, nodes[0] + int(not nd._path_end)))
        with torch.no_grad():
            pred = model(torch.from_numpy(Xte), discrete=True).argmax(1).numpy()
        acc = float((pred == yte_enc).mean())
        return {"cpu": t.cpu, "wall": t.wall, "accuracy": acc, "size": nodes[0]}

    fits["reference"] = theirs
    return fits


def run(a):
    """Run the comparison with the options ``a`` and print its rows."""
    import torch

    from treebench.api import make_estimator

    torch.set_num_threads(1)
    Xtr, ytr, Xte, yte = load(a.dataset)
    classes, y_enc = np.unique(ytr, return_inverse=True)
    yte_enc = np.searchsorted(classes, yte)
    print(
        f"data {a.dataset}: train {Xtr.shape}, test {Xte.shape}, classes {len(classes)}; "
        f"depth {a.depth}, {a.epochs} epochs per split, batch {a.batch_size}, seed {a.seed}, "
        "torch threads 1"
    )
    bs = a.batch_size if a.batch_size == "auto" else int(a.batch_size)

    # ------------------------------------------------------------------ treebench
    def ours(finetune_epochs):
        est = make_estimator(
            "e2edt",
            params={
                "max_depth": a.depth,
                "epochs": a.epochs,
                "finetune_epochs": finetune_epochs,
                "batch_size": bs,
            },
            random_state=a.seed,
        )
        with timed() as t:
            est.fit(Xtr, ytr)
        return est, t, float((est.predict(Xte) == yte).mean())

    est, t, acc_g = ours(0)
    tb_greedy, tb_greedy_cpu = est.fit_info_["greedy_seconds"], t.cpu
    print(
        f"treebench: greedy {tb_greedy:.2f} s wall / {tb_greedy_cpu:.2f} s CPU "
        f"({est.size_report(Xte)['n_splits']} splits, batch {est.fit_info_['batch_size']}), "
        f"greedy test acc {acc_g:.4f}"
    )
    if not a.greedy_only:
        est_f, t_f, acc_f = ours(a.finetune_epochs)
        fe = max(1, est_f.fit_info_.get("finetune_epochs", a.finetune_epochs))
        tb_ft = est_f.fit_info_["finetune_seconds"] / fe
        print(
            f"treebench: finetune {tb_ft:.3f} s/epoch wall (mean over {fe} epochs, the "
            f"leaves-only first one included), finetuned test acc {acc_f:.4f} (deterministic)"
        )
    if not a.ref:
        return
    use_reference(a.ref)
    import time

    # ------------------------------------------------------------------ reference
    DecisionTree = reference_class(torch)

    ds = torch.utils.data.TensorDataset(
        torch.from_numpy(Xtr), torch.from_numpy(y_enc.astype(np.int64))
    )
    if bs == "auto":
        raise SystemExit("--batch-size auto has no reference counterpart: give the rows")
    torch.manual_seed(a.seed)  # the reference draws from the global RNG
    # (its greedy stumps always use its DecisionTree default, 1000 rows, whatever is passed here)
    model = DecisionTree(Xtr.shape[1], len(classes), initial_steepness=1.0, batch_size=bs)
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit_greedy(ds, epochs=a.epochs, algo="EM", steepness_inc=0.1, max_depth=a.depth)
    ref_greedy = time.perf_counter() - t0
    ref_greedy_cpu = time.process_time() - c0
    nodes = [0]
    model.root.foreach(lambda nd: nodes.__setitem__(0, nodes[0] + int(not nd._path_end)))
    Xte_t = torch.from_numpy(Xte)
    with torch.no_grad():
        ref_acc_g = float((model(Xte_t, discrete=True).argmax(1).numpy() == yte_enc).mean())
    print(
        f"reference: greedy {ref_greedy:.2f} s wall / {ref_greedy_cpu:.2f} s CPU "
        f"({nodes[0]} splits), greedy test acc {ref_acc_g:.4f}"
    )
    if a.greedy_only:
        print(f"reference/treebench: greedy {ratio(ref_greedy_cpu, tb_greedy_cpu)} CPU")
        return
    stamps, cpu = [time.perf_counter()], [time.process_time()]
    for _ in model.refine(ds, a.ref_finetune_epochs, "EM"):
        model.root.set_steepness(inc_value=0.1)
        stamps.append(time.perf_counter())
        cpu.append(time.process_time())
    rep = np.diff(stamps)
    ref_ft = float(rep[1:].mean()) if len(rep) > 1 else float(rep[0])
    ref_ft_cpu = float(np.diff(cpu)[1:].mean()) if len(rep) > 1 else float(np.diff(cpu)[0])
    print(
        f"reference: finetune {ref_ft:.3f} s/epoch wall / {ref_ft_cpu:.3f} CPU over {len(rep) - 1} "
        "full epochs "
        f"(first, leaves-only epoch {rep[0]:.3f} s)"
    )
    print(
        f"reference/treebench: greedy {ratio(ref_greedy, tb_greedy)} wall, "
        f"{ratio(ref_greedy_cpu, tb_greedy_cpu)} CPU; finetune per epoch (all epochs) "
        f"{ratio(float(rep.mean()), tb_ft)} wall"
    )
