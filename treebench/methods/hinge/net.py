"""Torch modules of Random Hinge Forest / Ferns (Lay et al. 2018). Imported lazily by ``hinge.py``.

The differentiable output of tree m on sample b is ``w[leaf] * |z[f_v*] - t_v*|`` with v* the first
minimum-|margin| decision on the path, so only three entries get gradient (Eqs. 11-12):
d/dw_leaf = |r*|, d/dt_v* = -sgn(r*) w_leaf, d/dz_{f_v*} = +sgn(r*) w_leaf.

Two implementations of the same function:
* compiled (numba, ``hinge.kernels``; used when numba is installed): a custom autograd.Function
  whose forward walks every (tree, sample) once and whose backward writes only those entries. The
  leaf-weight gradient can be returned as coalesced sparse rows (``sparse_grad``), which
  :class:`HingeAdam` (dense Adam semantics, torch.optim.Adam's arithmetic) consumes without ever
  materialising the ~M 2^D K zeros, and the threshold gradient too (``sparse_thresholds``), which
  :class:`HingeAdagrad` applies to the touched entries only; with K-vector leaves summed over trees
  (``reduce``) no [B, M, K] tensor is built either.
* :meth:`HingeForest.forward_torch`: traversal without autograd (vectorised over samples and trees,
  loop over levels), then three gathers; autograd yields the same sparse derivatives. Used without
  numba and as the reference in tests.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.optim.adagrad import adagrad as _adagrad_fn

try:  # optional (the ``fast`` extra): compiled traversal, forward/backward and Adam
    import numba

    from treebench.methods.hinge import kernels as _kernels
except ImportError:  # pragma: no cover - depends on the environment
    numba = None
    _kernels = None

if numba is not None:

    @numba.njit(cache=True, nogil=True)
    def _route_trees_nb(z, feats, thr, depth, leaf_out, vstar_out):  # pragma: no cover - compiled
        """Per tree, then sample: walk the heap-ordered tree; leaf and first min-|margin| node.

        Tree-major (one tree's arrays stay in cache) and branch-free selects: ~2x the sample-major
        loop with branches on random routing decisions.
        """
        B = z.shape[0]
        M = feats.shape[0]
        first_leaf = 2**depth - 1
        for t in range(M):
            f = feats[t]
            th = thr[t]
            for b in range(B):
                zb = z[b]
                g = 0
                best = np.float32(np.inf)
                bestv = 0
                for _ in range(depth):
                    r = zb[f[g]] - th[g]
                    a = abs(r)
                    c = a < best  # strict: the shallower decision wins ties (Alg. 3)
                    best = a if c else best
                    bestv = g if c else bestv
                    g = 2 * g + 1 + np.int64(r > 0)
                leaf_out[b, t] = g - first_leaf
                vstar_out[b, t] = bestv


class RunningBatchNorm(nn.Module):
    """The paper's modified batch normalisation (bleak ``BatchNormalization``), no affine.

    The forward pass always uses the stored running mean/variance (train and test alike), so the
    statistics are constants for the backward pass. In training mode the forward pass remembers the
    current batch's mean and unbiased variance; :meth:`update` (called after each optimiser step)
    folds them in with ``alpha = min(it / (it + 1), 0.99)``. Initial statistics: mean 0, var 1.

    ``channel_dim`` = 1 normalises per channel over the batch and spatial positions (conv inputs).
    """

    def __init__(self, num_features: int, eps: float = 1e-7, max_momentum: float = 0.99):
        super().__init__()
        self.eps = eps
        self.max_momentum = max_momentum
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("n_updates", torch.zeros((), dtype=torch.long))
        self._pending = None

    def _shape(self, x):
        return (1, -1) + (1,) * (x.dim() - 2)

    def forward(self, x):
        """Normalise ``x`` with the running statistics; in training, remember the batch's."""
        if self.training and x.shape[0] > 1:
            with torch.no_grad():
                dims = [0] + list(range(2, x.dim()))
                self._pending = (x.mean(dim=dims), x.var(dim=dims, unbiased=True))
        shape = self._shape(x)
        mean = self.running_mean.view(shape)
        std = (self.running_var.abs() + self.eps).sqrt().view(shape)
        return (x - mean) / std

    @torch.no_grad()
    def update(self) -> None:
        """Fold the last training batch's statistics into the running estimates."""
        if self._pending is None:
            return
        mean, var = self._pending
        it = int(self.n_updates)
        alpha = min(it / (it + 1.0), self.max_momentum)
        self.running_mean.mul_(alpha).add_(mean, alpha=1 - alpha)
        self.running_var.mul_(alpha).add_(var, alpha=1 - alpha)
        self.n_updates += 1
        self._pending = None


class HingeForest(nn.Module):
    """M hinge trees (``kind="tree"``) or hinge ferns (``kind="fern"``) of depth D as one layer.

    Input ``z``: [B, F] (normalised features). Output: [B, M, K] tree predictions ``w_leaf * |r*|``.

    Trees: heap-ordered nodes (children of v are 2v+1, 2v+2), 2^D - 1 decisions each, leaf index
    ``node - (2^D - 1)`` (the paper's ``l <- 2l + I(r > 0)``). Ferns: D decisions per fern, one per
    level, leaf = D-bit code with the first level as the most significant bit.
    Routing: right iff r > 0. r* = the smallest-|r| decision on the path, ties -> the shallower one.

    With numba the forward/backward are compiled kernels (:class:`_HingeForestFn`); otherwise (or
    via :meth:`forward_torch`) three gathers and autograd. ``sparse_grad=True`` makes the
    leaf-weight gradient a sparse COO tensor (for :class:`HingeAdam` / :class:`HingeAdagrad`); with
    it, the attribute ``sparse_thresholds = True`` makes the threshold gradient one too (for
    :class:`HingeAdagrad`: then a training step costs O(B M D), not O(M 2^D)).
    """

    def __init__(
        self,
        in_features: int,
        n_trees: int,
        depth: int,
        n_outputs: int = 1,
        kind: str = "tree",
        threshold_range: float = 3.0,
        leaf_std: float = 0.01,
        generator: torch.Generator | None = None,
        sparse_grad: bool = False,
    ):
        super().__init__()
        self.sparse_grad = bool(sparse_grad)
        self.sparse_thresholds = False
        self._rows_ws = None
        if kind not in ("tree", "fern"):
            raise ValueError(f"kind must be 'tree' or 'fern', got {kind!r}")
        self.in_features, self.n_trees, self.depth = int(in_features), int(n_trees), int(depth)
        self.n_outputs, self.kind = int(n_outputs), kind
        n_dec = (2**depth - 1) if kind == "tree" else depth
        self.n_decisions = n_dec
        self.n_leaves = 2**depth
        g = generator
        feats = torch.randint(0, self.in_features, (n_trees, n_dec), generator=g)
        self.register_buffer("features", feats)
        thr = (torch.rand(n_trees, n_dec, generator=g) * 2 - 1) * threshold_range
        self.thresholds = nn.Parameter(thr)
        w = torch.randn(n_trees, self.n_leaves, self.n_outputs, generator=g) * leaf_std
        self.weights = nn.Parameter(w)
        # flat offsets of each tree's first decision / leaf
        self.register_buffer("_dec_off", torch.arange(n_trees) * n_dec)
        self.register_buffer("_leaf_off", torch.arange(n_trees) * self.n_leaves)
        # after D tree levels g = offset + heap index = offset + (2^D - 1) + leaf
        self.register_buffer("_leaf_base", torch.arange(n_trees) * n_dec + (2**depth - 1))

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_rows_ws"] = None  # scratch of the compiled backward: not pickled, not copied
        return state

    def _rows_workspace(self):
        """Return the workspace of the compiled coalescing of sparse gradients.

        (stamps and slots of leaves and decisions, a fresh stamp base); allocated once, never
        cleared (see :func:`~treebench.methods.hinge.kernels.forest_backward_rows`).
        """
        if self._rows_ws is None:
            L, N = self.n_leaves, self.n_decisions
            self._rows_ws = [
                (np.full(L, -1, np.int64), np.empty(L, np.int64),
                 np.full(N, -1, np.int64), np.empty(N, np.int64)),
                0,
            ]  # fmt: skip
        ws = self._rows_ws
        base = ws[1]
        ws[1] += self.n_trees
        return ws[0], base

    @torch.no_grad()
    def route(self, z):
        """Leaf index [B, M] and index v* (within the tree's decisions) of the min-|margin| node."""
        B = z.shape[0]
        M, D = self.n_trees, self.depth
        feats, thr = self.features.reshape(-1), self.thresholds.detach().reshape(-1)
        if (
            self.kind == "tree"
            and numba is not None
            and not self.training
            and z.dtype == torch.float32
            and z.device.type == "cpu"
        ):
            # inference: one compiled walk per sample and tree, no [D, B, M] temporaries
            leaf = torch.empty(B, M, dtype=torch.int64)
            vstar = torch.empty(B, M, dtype=torch.int64)
            _route_trees_nb(
                z.detach().contiguous().numpy(),
                self.features.numpy(),
                self.thresholds.detach().contiguous().numpy(),
                D,
                leaf.numpy(),
                vstar.numpy(),
            )
            return leaf, vstar
        if self.kind == "fern":
            r = z[:, feats].view(B, M, D) - thr.view(1, M, D)
            bits = (r > 0).long()
            pows = 2 ** torch.arange(D - 1, -1, -1, device=z.device)
            leaf = (bits * pows).sum(-1)
            vstar = r.abs().min(dim=-1).indices  # first (shallowest) minimum on ties
            return leaf, vstar
        # r = z[f_v] - t_v with the *current* node's feature f_v (the paper's Alg. 3 prints x_{f_i},
        # an index typo). Global (flattened) node index g = node + tree offset; the children of g
        # are 2g + 1 - offset (left) and 2g + 2 - offset (right); right iff r > 0.
        g = self._dec_off.view(1, M).expand(B, M).clone()
        step = (1 - self._dec_off).view(1, M)
        rs = torch.empty(D, B, M, dtype=z.dtype, device=z.device)
        for d in range(D):
            r = torch.sub(z.gather(1, feats.take(g)), thr.take(g), out=rs[d])
            g = g.mul_(2).add_(step).add_(r > 0)
        leaf = g - self._leaf_base.view(1, M)
        # depth of the min-|margin| decision; min() returns the first minimum, so on ties the
        # shallower decision wins (the strict < of Alg. 3)
        k = rs.abs_().min(dim=0).indices
        # its node: the ancestor of the leaf at depth k, (1-based heap index >> (D - k)) - 1
        vstar = torch.bitwise_right_shift(leaf + 2**D, D - k) - 1
        return leaf, vstar

    def forward(self, z, reduce: bool = False):
        """Tree outputs [B, M, K]; ``reduce=True`` returns their sum over trees [B, K]."""
        if _use_kernels(z):
            return _HingeForestFn.apply(
                z, self.thresholds, self.weights, self, bool(reduce), bool(self.sparse_grad)
            )
        out = self.forward_torch(z)
        return out.sum(1) if reduce else out

    def forward_torch(self, z):
        """Gather-based reference path (autograd through three gathers; no numba needed)."""
        leaf, vstar = self.route(z)
        flat_v = vstar + self._dec_off.view(1, -1)
        B, M, K = z.shape[0], self.n_trees, self.n_outputs
        zv = z.gather(1, self.features.reshape(-1)[flat_v])  # [B, M]
        tv = self.thresholds.reshape(-1).index_select(0, flat_v.reshape(-1)).view(B, M)
        rows = (leaf + self._leaf_off.view(1, -1)).reshape(-1)
        w = self.weights.reshape(-1, K).index_select(0, rows).view(B, M, K)
        return w * (zv - tv).abs().unsqueeze(-1)


def _use_kernels(z) -> bool:
    return (
        _kernels is not None
        and z.device.type == "cpu"
        and z.dtype in (torch.float32, torch.float64)
    )


def _np(t):
    return t.detach().contiguous().numpy()


class _HingeForestFn(torch.autograd.Function):
    """Compiled forward/backward of a :class:`HingeForest` (numba kernels of ``hinge.kernels``).

    Same function and gradients as :meth:`HingeForest.forward_torch`; per (sample, tree) the
    backward touches one leaf row, one threshold and one input. With ``sparse`` the leaf-weight
    gradient is a coalesced sparse COO tensor (rows = touched (tree, leaf) pairs), for
    :class:`HingeAdam` or ``torch.optim.Adagrad``; otherwise dense.
    """

    @staticmethod
    def forward(ctx, z, thresholds, weights, forest, reduce, sparse):
        B, M, D = z.shape[0], forest.n_trees, forest.depth
        zn, thr, w = _np(z), _np(thresholds), _np(weights.to(z.dtype))
        K = w.shape[2]
        leaf = np.empty((B, M), np.int64)
        vstar = np.empty((B, M), np.int64)
        rstar = np.empty((B, M), zn.dtype)
        out = np.zeros((B, 1, K), zn.dtype) if reduce else np.empty((B, M, K), zn.dtype)
        _kernels.forest_forward(
            zn, forest.features.numpy(), thr, w, D, forest.kind == "fern", reduce,
            leaf, vstar, rstar, out,
        )  # fmt: skip
        ctx.forest, ctx.reduce, ctx.sparse = forest, reduce, sparse
        ctx.state = (leaf, vstar, rstar, w, z.shape[1])
        out_t = torch.from_numpy(out)
        return out_t[:, 0] if reduce else out_t

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        forest, reduce, sparse = ctx.forest, ctx.reduce, ctx.sparse
        leaf, vstar, rstar, w, F = ctx.state
        G = _np(grad_out.unsqueeze(1) if reduce else grad_out).astype(w.dtype, copy=False)
        B = leaf.shape[0]
        need_z = ctx.needs_input_grad[0]
        gz = np.zeros((B, F) if need_z else (1, 1), w.dtype)
        thr_rows = sparse and forest.sparse_thresholds
        gt = np.zeros((1, 1) if thr_rows else forest.thresholds.shape, w.dtype)
        feats = forest.features.numpy()
        if sparse:
            ws, base = forest._rows_workspace()
            ti, li, vals, tti, tni, tvals = _kernels.forest_backward_rows(
                G, feats, w, leaf, vstar, rstar, reduce, need_z, gz, gt, thr_rows, ws, base
            )
            grad_w = _coo(ti, li, vals, forest.weights)
        else:
            gw = np.zeros(w.shape, w.dtype)
            _kernels.forest_backward(G, feats, w, leaf, vstar, rstar, reduce, need_z, gz, gt, gw)
            grad_w = torch.from_numpy(gw).to(forest.weights.dtype)
        if thr_rows:
            grad_t = _coo(tti, tni, tvals, forest.thresholds)
        else:
            grad_t = torch.from_numpy(gt).to(forest.thresholds.dtype)
        return (torch.from_numpy(gz) if need_z else None), grad_t, grad_w, None, None, None


def _coo(rows, cols, vals, param):
    """Coalesced sparse COO gradient of ``param`` with entries (rows, cols) = vals.

    Sorted, unique.
    """
    return torch.sparse_coo_tensor(
        torch.from_numpy(np.stack([rows, cols])),
        torch.from_numpy(vals).to(param.dtype),
        param.shape,
        is_coalesced=True,
        check_invariants=False,
    )


class HingeAdam(torch.optim.Optimizer):
    """Adam (Kingma & Ba) with numba kernels: torch.optim.Adam's arithmetic, no decay/amsgrad.

    Dense semantics for every parameter: each step every entry's moments decay and every entry
    moves, exactly like ``torch.optim.Adam`` fed a dense gradient with zeros. A sparse COO gradient
    (the hinge leaves' coalesced rows) is consumed without materialising the zeros: one pass in
    memory order applies the zero-gradient update to the runs between touched rows and the full
    update to the touched rows. ``lazy=True``: a sparse gradient updates only its touched rows (the
    moments of the others neither decay nor move them), as ``torch.optim.SparseAdam``; dense
    gradients keep the dense rule.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, lazy=False):
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
        self.lazy = bool(lazy)
        self._views = {}  # param -> numpy views of (param, exp_avg, exp_avg_sq), made once

    def _state_views(self, p):
        st = self.state[p]
        if not st:
            st["step"] = 0
            st["exp_avg"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
            st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
        views = self._views.get(p)
        if views is None or views[1] is not st["exp_avg"]:  # new state (e.g. load_state_dict)
            ts = (p, st["exp_avg"], st["exp_avg_sq"])
            views = (ts, st["exp_avg"], tuple(_flat(t) for t in ts))
            self._views[p] = views
        return st, views[2]

    @torch.no_grad()
    def step(self, closure=None):
        """Take one Adam step (see the class), ``closure`` as torch's optimisers take it."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                st, (pn, mn, vn) = self._state_views(p)
                st["step"] += 1
                t = st["step"]
                bc1, bc2 = 1 - b1**t, 1 - b2**t
                dt = _NP_DTYPE[p.dtype]
                consts = (dt(1 - b1), dt(b2), dt(1 - b2), dt(lr / bc1), dt(bc2**0.5), dt(eps))
                if g.is_sparse:
                    nd = g.sparse_dim()
                    rows = np.ravel_multi_index(tuple(g._indices().numpy()), p.shape[:nd])
                    if rows.size > 1 and not _kernels.strictly_increasing(rows):
                        g = g.coalesce()  # sums duplicates, sorts (our backward already does)
                        rows = np.ravel_multi_index(tuple(g._indices().numpy()), p.shape[:nd])
                    R = int(np.prod(p.shape[:nd]))
                    vals = g._values().numpy().reshape(rows.size, -1).astype(dt, copy=False)
                    step_rows = _kernels.adam_rows_lazy if self.lazy else _kernels.adam_rows
                    step_rows(
                        pn.reshape(R, -1), mn.reshape(R, -1), vn.reshape(R, -1),
                        rows, vals, *consts,
                    )  # fmt: skip
                else:
                    gn = g.detach().contiguous().numpy().astype(dt, copy=False)
                    _kernels.adam_dense(
                        pn.reshape(-1), mn.reshape(-1), vn.reshape(-1), gn.reshape(-1), *consts
                    )
        return loss


_NP_DTYPE = {torch.float32: np.float32, torch.float64: np.float64}


def _closure_loss(closure):
    """Return the loss of an optimizer step's ``closure`` (evaluated with gradients on), or None."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def _flat(t):
    """Return a numpy view sharing ``t``'s memory (in-place updates reach the tensor)."""
    if t.device.type != "cpu" or not t.is_contiguous() or t.dtype not in _NP_DTYPE:
        raise ValueError("HingeAdam needs contiguous float32/float64 CPU parameters")
    return t.detach().numpy()


class HingeAdagrad(torch.optim.Adagrad):
    """``torch.optim.Adagrad(fused=True)`` that also takes sparse COO gradients.

    They are the hinge forest's coalesced rows; the result is the dense step's on the gradient
    with zeros.

    Adagrad leaves an entry with zero gradient as it is (its sum grows by 0, it moves by
    ``lr * 0 / (sqrt(sum) + eps)``; no weight decay), so only the touched rows are gathered, stepped
    by torch's own fused kernel (elementwise: an entry's result does not depend on its neighbours)
    and written back. A step then costs the rows a minibatch reaches, not the forest's 2^D leaves.
    The state (``sum``, ``step``) and ``state_dict`` are torch's.
    """

    def __init__(self, params, lr=1e-2, eps=1e-10):
        super().__init__(params, lr=lr, eps=eps, fused=True)

    @torch.no_grad()
    def step(self, closure=None):
        """Take one Adagrad step on dense and sparse gradients (see the class)."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            ps, gs, sums, steps, back = [], [], [], [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                st = self.state[p]
                if g.is_sparse:
                    if group["weight_decay"] != 0:
                        raise ValueError("HingeAdagrad: sparse gradients need weight_decay=0")
                    nd = g.sparse_dim()
                    R = math.prod(p.shape[:nd])
                    dims = np.asarray(p.shape[:nd], np.int64)
                    pn, sn = _flat(p).reshape(R, -1), _flat(st["sum"]).reshape(R, -1)
                    rows, pr, sr, ordered = _kernels.gather_rows(pn, sn, g._indices().numpy(), dims)
                    if not ordered:  # duplicates or unsorted (our backward's rows never are)
                        g = g.coalesce()
                        rows, pr, sr, _ = _kernels.gather_rows(pn, sn, g._indices().numpy(), dims)
                    ps.append(torch.from_numpy(pr))
                    gs.append(g._values().reshape(pr.shape))
                    sums.append(torch.from_numpy(sr))
                    back.append((pn, sn, rows, pr, sr))
                else:
                    ps.append(p)
                    gs.append(g)
                    sums.append(st["sum"])
                steps.append(st["step"])
            if not ps:
                continue
            _adagrad_fn(
                ps, gs, sums, steps, fused=True, lr=group["lr"],
                weight_decay=group["weight_decay"], lr_decay=group["lr_decay"], eps=group["eps"],
                maximize=group["maximize"], has_complex=False,
            )  # fmt: skip
            for pn, sn, rows, pr, sr in back:
                _kernels.scatter_rows(pn, sn, rows, pr, sr)
        return loss


class HingeNet(nn.Module):
    """Feature pool -> modified BN -> hinge forest/ferns -> aggregation.

    ``pool``: ``"linear"`` (inner products, no bias), ``"conv"`` (5x5 filters, stride 3, no padding,
    no bias, flattened) or ``"none"`` (the raw inputs). ``aggregation``: ``"linear"`` (scalar tree
    outputs -> Linear(M, K) with bias) or ``"sum"`` (K-vector leaves summed over trees).

    ``weight_init``: ``"torch"`` (PyTorch's Kaiming-uniform default for the pool and the linear
    head) or ``"bleak"`` (the authors' paper framework: pool and head weights ~ N(0, 1), head bias
    0; bleak ``SGInnerProduct.sad`` / ``SGConvolution2D.sad``). ``conv_bn``: the conv pool's batch
    norm keeps one statistic per ``"channel"`` (over batch and positions) or per ``"position"`` (per
    flattened feature, 80*8*8 on MNIST, as bleak's forest subgraph normalises its reshaped input).
    """

    def __init__(
        self,
        n_inputs: int,
        n_outputs: int,
        n_trees: int,
        depth: int,
        kind: str,
        pool: str = "linear",
        n_features: int = 100,
        aggregation: str = "linear",
        image_shape=None,
        kernel_size: int = 5,
        stride: int = 3,
        threshold_range: float = 3.0,
        leaf_std: float = 0.01,
        generator: torch.Generator | None = None,
        sparse_grad: bool = False,
        weight_init: str = "torch",
        conv_bn: str = "channel",
    ):
        super().__init__()
        if weight_init not in ("torch", "bleak"):
            raise ValueError(f"weight_init must be 'torch' or 'bleak', got {weight_init!r}")
        if conv_bn not in ("channel", "position"):
            raise ValueError(f"conv_bn must be 'channel' or 'position', got {conv_bn!r}")
        self.pool_kind, self.aggregation = pool, aggregation
        self.conv_bn = conv_bn

        def init(layer):
            (_reinit if weight_init == "torch" else _bleak_init)(layer, generator)

        if pool == "linear":
            self.pool = _skip(nn.Linear, n_inputs, n_features, bias=False)
            init(self.pool)
            self.bn = RunningBatchNorm(n_features)
            n_pool = n_features
        elif pool == "conv":
            c, h, w = _chw(image_shape, n_inputs)
            self.image_chw = (c, h, w)
            self.pool = _skip(nn.Conv2d, c, n_features, kernel_size, stride=stride, bias=False)
            init(self.pool)
            oh, ow = (h - kernel_size) // stride + 1, (w - kernel_size) // stride + 1
            if oh < 1 or ow < 1:
                raise ValueError(
                    f"image_shape {image_shape} is smaller than the {kernel_size}x"
                    f"{kernel_size} convolution"
                )
            n_pool = n_features * oh * ow
            self.bn = RunningBatchNorm(n_features if conv_bn == "channel" else n_pool)
        elif pool == "none":
            self.pool = nn.Identity()
            self.bn = RunningBatchNorm(n_inputs)
            n_pool = n_inputs
        else:
            raise ValueError(f"features must be 'linear', 'conv' or 'none', got {pool!r}")
        self.n_pool = n_pool
        k_leaf = n_outputs if aggregation == "sum" else 1
        self.forest = HingeForest(
            n_pool, n_trees, depth, k_leaf, kind, threshold_range, leaf_std, generator, sparse_grad
        )
        if aggregation == "linear":
            self.head = _skip(nn.Linear, n_trees, n_outputs)
            init(self.head)
        elif aggregation != "sum":
            raise ValueError(f"aggregation must be 'linear' or 'sum', got {aggregation!r}")

    def features(self, x):
        """Return the normalised feature pool of ``x`` (flattened per sample)."""
        if self.pool_kind == "conv":
            x = x.view(x.shape[0], *self.image_chw)
        if self.pool_kind == "conv" and self.conv_bn == "position":
            return self.bn(self.pool(x).flatten(1))
        z = self.bn(self.pool(x))
        return z.flatten(1)

    def forward(self, x):
        """Return the network's output: the forest's, summed over trees or through the head."""
        z = self.features(x)
        if self.aggregation == "sum":
            return self.forest(z, reduce=True)  # [B, K], summed over trees
        return self.head(self.forest(z).squeeze(-1))

    @torch.no_grad()
    def forward_rowwise(self, x):
        """:meth:`forward` for inference, each output row a function of its input row only.

        A float32 matrix product sums in an order that depends on the number of rows (BLAS picks
        other kernels for 1 row than for 1000), so a row's output could change in the last bit
        with the rows predicted alongside it. Here the pool and the linear head are accumulated in
        float64 and rounded to float32 once (the precision the layers are trained in); the batch
        norm and the forest are per row already. Call in eval mode.
        """
        if self.pool_kind == "conv":
            x = x.view(x.shape[0], *self.image_chw)
            p = nn.functional.conv2d(x.double(), self.pool.weight.double(), stride=self.pool.stride)
        elif self.pool_kind == "linear":
            p = nn.functional.linear(x.double(), self.pool.weight.double())
        else:
            p = x
        p = p.to(x.dtype)
        if self.pool_kind == "conv" and self.conv_bn == "position":
            z = self.bn(p.flatten(1))
        else:
            z = self.bn(p).flatten(1)
        if self.aggregation == "sum":
            return self.forest(z, reduce=True)
        t = self.forest(z).squeeze(-1)
        head = nn.functional.linear(t.double(), self.head.weight.double(), self.head.bias.double())
        return head.to(t.dtype)


def _chw(image_shape, n_inputs):
    if image_shape is None:
        side = int(round(math.sqrt(n_inputs)))
        if side * side != n_inputs:
            raise ValueError(
                "features='conv' needs image_shape (the runner fills it for image data)"
            )
        return 1, side, side
    shp = tuple(int(s) for s in image_shape)
    if len(shp) == 2:
        c, h, w = 1, *shp
    elif len(shp) == 3:
        c, h, w = shp if shp[0] <= 4 else (shp[2], shp[0], shp[1])
    else:
        raise ValueError(f"image_shape must have 2 or 3 entries, got {image_shape}")
    if c * h * w != n_inputs:
        raise ValueError(f"image_shape {image_shape} does not match {n_inputs} input features")
    return c, h, w


def _skip(cls, *args, **kwargs):
    """Build a layer without touching the global RNG (its weights are drawn by :func:`_reinit`)."""
    return cls(*args, device="meta", **kwargs).to_empty(device="cpu")


def _reinit(layer, generator):
    """PyTorch's default (Kaiming-uniform) init, drawn from ``generator``, not the global RNG."""
    with torch.no_grad():
        fan_in = layer.weight[0].numel()
        bound = 1.0 / math.sqrt(fan_in)
        layer.weight.uniform_(-bound, bound, generator=generator)
        if getattr(layer, "bias", None) is not None:
            layer.bias.uniform_(-bound, bound, generator=generator)


def _bleak_init(layer, generator):
    """Apply the authors' bleak init: weights ~ N(0, 1), bias 0, drawn from ``generator``."""
    with torch.no_grad():
        layer.weight.normal_(0.0, 1.0, generator=generator)
        if getattr(layer, "bias", None) is not None:
            layer.bias.zero_()


def torch_train_steps(net, opt, X, Y, W, batches, loss_fn) -> float:
    """Minibatch steps of the torch path.

    Forward, ``loss_fn(out, y, w)``, backward, optimiser step, then the running BN statistics;
    ``batches`` [S, B] are row indices of X. Mean loss.
    """
    total = 0.0
    for b in torch.from_numpy(np.ascontiguousarray(batches, dtype=np.int64)):
        loss = loss_fn(net(X[b]), Y[b], None if W is None else W[b])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        net.bn.update()
        total += float(loss.detach())
    return total / max(len(batches), 1)


class CompiledUCITrainer:
    """The whole training step of the UCI network in one numba kernel.

    Linear pool, running BN, scalar-leaf trees/ferns, linear head, AdaGrad:
    :func:`treebench.methods.hinge.kernels.uci_train_steps`.

    Same arithmetic as the torch path (forward, autograd backward, ``torch.optim.Adagrad``,
    :meth:`RunningBatchNorm.update`), without torch's per-op and autograd overhead, which dominates
    for these tiny models (~2 ms a step against ~50 us). The kernel updates the network's parameters
    and BN buffers in place through numpy views, so snapshots, validation and prediction use the
    ordinary module. AdaGrad's accumulators live here (zeros at the start, like torch's).
    """

    def __init__(self, net, X, Y, sw, classification: bool, lr: float, eps: float = 1e-10):
        self.net, self.classification = net, bool(classification)
        self.X = np.ascontiguousarray(X)
        dt = self.X.dtype
        self.Y = np.ascontiguousarray(Y, dtype=dt)
        self.sw = np.ascontiguousarray(sw, dtype=dt)
        f, bn = net.forest, net.bn
        self.params = (net.pool.weight, f.thresholds, f.weights, net.head.weight, net.head.bias)
        self.views = tuple(_flat(p) for p in self.params)
        self.acc = tuple(np.zeros_like(v) for v in self.views)
        self.bn = (_flat(bn.running_mean), _flat(bn.running_var), bn.n_updates.numpy().reshape(1))
        self.lr, self.eps = dt.type(lr), dt.type(eps)

    #: widest input the kernel takes: its pool products and dense AdaGrad loops are plain loops and
    #: scipy-BLAS calls; on madelon (500 inputs) they measured 3.1 ms a step against torch's 2.7 ms
    max_inputs = 64

    @staticmethod
    def applies(net, optimizer: str, dtype) -> bool:
        """Return whether the compiled trainer can run this network and optimiser."""
        return (
            _kernels is not None
            and getattr(getattr(net, "pool", None), "in_features", np.inf)
            <= CompiledUCITrainer.max_inputs
            and optimizer == "adagrad"
            and getattr(net, "pool_kind", None) == "linear"
            and getattr(net, "aggregation", None) == "linear"
            and np.dtype(dtype).type in _TORCH_DTYPE
            and all(p.dtype == _TORCH_DTYPE[np.dtype(dtype).type] for p in net.parameters())
        )

    def run(self, batches) -> float:
        """Train on the minibatches ``batches`` [S, B] (training-row indices); mean loss."""
        Wp, thr, w, Wh, bh = self.views
        aWp, athr, aw, aWh, abh = self.acc
        rm, rv, nu = self.bn
        f, bn = self.net.forest, self.net.bn
        return float(
            _kernels.uci_train_steps(
                self.X, self.Y, self.sw, np.ascontiguousarray(batches, dtype=np.int64),
                self.classification, Wp, rm, rv, nu, rm.dtype.type(bn.eps),
                rm.dtype.type(bn.max_momentum), _narrow(f.features.numpy()), thr, w, f.depth,
                f.kind == "fern", Wh, bh, aWp, athr, aw, aWh, abh, self.lr, self.eps,
            )
        )  # fmt: skip


_TORCH_DTYPE = {np.float32: torch.float32, np.float64: torch.float64}


def _narrow(feats):
    """Return the forest's feature indices in the narrowest unsigned type that holds them.

    That is uint16 for fewer than 65,536 pool features: the tree walk's node arrays then take a
    quarter of the cache lines of int64.
    """
    return feats.astype(np.uint16 if feats.size == 0 or feats.max() < 2**16 else np.uint32)


#: optimizer="adagrad" takes the forest's gradients as rows (:class:`HingeAdagrad`) from this many
#: threshold + leaf-weight entries on: below, the dense gradient and torch's fused Adagrad over
#: all entries cost less than the rows' fixed overhead (docs/methods/hinge.md, "Cost per step
#: and depth")
SPARSE_ADAGRAD_MIN_ENTRIES = 2**20


def make_optimizer(name: str, net: nn.Module, lr: float):
    """Return the optimiser ``optimizer`` names for ``net``.

    ``"adam"``: :class:`HingeAdam` with sparse leaf gradients when numba is available (else
    ``torch.optim.Adam``); ``"lazy_adam"``: :class:`HingeAdam` updating only the leaves a minibatch
    reaches (``torch.optim.SparseAdam``'s rule; dense Adam for the other layers);
    ``"adagrad"``: ``torch.optim.Adagrad`` (fused, dense gradients); for a forest of at least
    :data:`SPARSE_ADAGRAD_MIN_ENTRIES` thresholds and leaf weights (and numba),
    :class:`HingeAdagrad` on sparse leaf and threshold gradients instead: the same results at a cost
    per step independent of the 2^D leaves. Sets ``net``'s forest to the sparse gradients the
    optimiser takes.
    """
    params = list(net.parameters())
    forest = getattr(net, "forest", net)
    forest.sparse_thresholds = False
    if name == "lazy_adam":
        if _kernels is None:  # pragma: no cover - numba is a dependency
            raise ValueError("optimizer='lazy_adam' needs numba")
        forest.sparse_grad = True
        return HingeAdam(params, lr=lr, lazy=True)
    if name == "adam":
        if _kernels is not None:
            forest.sparse_grad = True
            return HingeAdam(params, lr=lr)
        forest.sparse_grad = False
        return torch.optim.Adam(params, lr=lr)
    if name == "adagrad":  # the UCI setting; the leaves a step does not reach stay as they are
        n_forest = forest.thresholds.numel() + forest.weights.numel()
        if _kernels is not None and n_forest >= SPARSE_ADAGRAD_MIN_ENTRIES:
            forest.sparse_grad = forest.sparse_thresholds = True
            try:
                return HingeAdagrad(params, lr=lr)
            except (RuntimeError, TypeError, ValueError):  # pragma: no cover - older torch
                forest.sparse_thresholds = False
        forest.sparse_grad = False
        try:
            return torch.optim.Adagrad(params, lr=lr, fused=True)
        except (RuntimeError, TypeError, ValueError):  # pragma: no cover - older torch
            return torch.optim.Adagrad(params, lr=lr)
    raise ValueError(f"optimizer must be 'adam', 'lazy_adam' or 'adagrad', got {name!r}")
