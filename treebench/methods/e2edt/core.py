"""Vectorised machinery of E2EDT / E2EDF (imported lazily: this module imports torch).

Everything that is learned is stored with a leading *split axis*: one row per split node of every
tree.  A forest is one set of trees whose nodes are kept in level order; path log-probabilities of
all leaves are computed in one pass from an ancestor table ``anc[L, D]`` (split id of the d-th
ancestor of each leaf, -1 = padding) and a direction table ``dirn[L, D]`` (+1 right, -1 left):

    log mu_l(x) = sum_d log clamp(sigmoid(dirn[l, d] * gamma[anc] * f_anc(x)), 1e-5, 1 - 1e-5)

Greedy growth trains all stumps of one level (of all trees) *at once*: each stump sees only its own
deterministic data subset, with its own shuffled minibatches, and its own Adam state (a vectorised
Adam with per-stump step counts, so a stump with fewer batches is not moved by another stump's
steps).

Linear splits on float32 CPU data train through the compiled kernels of
:mod:`treebench.methods.e2edt.kernels` when numba is installed (:func:`use_kernels`): the same EM
loop, Adam and random draws, with the per-sample tree passes and the gradients fused (no [leaves,
batch] temporaries, no autograd graph); the Finetune then keeps the responsibilities dense (exact)
and processes a forest in groups of trees bounded by that memory.  The torch code below stays the
reference, the CNN path and the fallback (``KERNELS_ENABLED = False`` switches the kernels off).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from treebench.methods._threads import set_numba_threads
from treebench.methods.progress import report

CLAMP_LO = 1e-5
CLAMP_HI = 1.0 - 1e-5
LOG_LO = math.log(CLAMP_LO)
LOG_HI = math.log(CLAMP_HI)


def log_gate(z: torch.Tensor) -> torch.Tensor:
    """Log clamp(sigmoid(z), 1e-5, 1-1e-5): the reference's clamped gate, in log space."""
    return F.logsigmoid(z).clamp(LOG_LO, LOG_HI)


# ============================================================================ split-feature banks


class LinearBank:
    """Oblique splits f_s(x) = w_s . x[feat_s] + b_s for S splits.

    ``feat`` is ``None`` (every split sees all p features) or a LongTensor [S, k] of feature indices
    (forest: a random subset or a square image patch per split).
    """

    kind = "linear"
    row_chunk = 1 << 16

    def __init__(self, w, b, feat=None):
        self.w, self.b, self.feat = w, b, feat

    # -- construction
    @staticmethod
    def init(n, p, gen, k=None, image_shape=None, patch=None, diagonal_patch=False):
        """N fresh splits: reference init (uniform +-1/sqrt(k) weights and bias, both / ||w||)."""
        feat = None
        if patch is not None:
            h, w_ = image_shape[-2], image_shape[-1]
            ph = min(int(patch), h, w_)
            if diagonal_patch:  # the reference sampler: one start in [0, W - w - 1] for both axes
                r0 = torch.randint(0, max(1, min(h, w_) - ph), (n,), generator=gen)
                c0 = r0
            else:
                r0 = torch.randint(0, h - ph + 1, (n,), generator=gen)
                c0 = torch.randint(0, w_ - ph + 1, (n,), generator=gen)
            rr = r0[:, None, None] + torch.arange(ph)[None, :, None]
            cc = c0[:, None, None] + torch.arange(ph)[None, None, :]
            feat = (rr * w_ + cc).reshape(n, ph * ph)
        elif k is not None and k < p:
            feat = torch.argsort(torch.rand(n, p, generator=gen), dim=1)[:, :k]
            feat, _ = torch.sort(feat, dim=1)
        kk = p if feat is None else feat.shape[1]
        bound = 1.0 / math.sqrt(kk)
        w = (torch.rand(n, kk, generator=gen) * 2 - 1) * bound
        b = (torch.rand(n, generator=gen) * 2 - 1) * bound
        norm = w.norm(dim=1).clamp_min(1e-12)
        return LinearBank(w / norm[:, None], b / norm, feat)

    def params(self):
        """Return the bank's trainable tensors ``[w, b]``."""
        return [self.w, self.b]

    def set_params(self, ps):
        """Replace the bank's trainable tensors with ``ps`` (as :meth:`params` orders them)."""
        self.w, self.b = ps

    def select(self, idx):
        """Return a new bank of the splits ``idx`` (their tensors copied)."""
        idx = torch.as_tensor(idx, dtype=torch.long)
        return LinearBank(
            self.w[idx].clone(),
            self.b[idx].clone(),
            None if self.feat is None else self.feat[idx].clone(),
        )

    @staticmethod
    def cat(banks):
        """Return one bank of the splits of ``banks``, in order."""
        feats = [bk.feat for bk in banks]
        return LinearBank(
            torch.cat([bk.w for bk in banks]),
            torch.cat([bk.b for bk in banks]),
            None if feats[0] is None else torch.cat(feats),
        )

    def __len__(self):
        return self.w.shape[0]

    # -- evaluation
    def f_all(self, X):
        """[B, S]: every split on every sample."""
        if self.feat is None:
            return X @ self.w.T + self.b
        dense = torch.zeros(self.w.shape[0], X.shape[1], dtype=X.dtype).scatter(
            1, self.feat, self.w
        )
        return X @ dense.T + self.b

    def f_allT(self, X):
        """[S, B]: every split on every sample, node-major."""
        if self.feat is None:
            return torch.addmm(self.b[:, None], self.w, X.T)
        dense = torch.zeros(self.w.shape[0], X.shape[1], dtype=X.dtype).scatter(
            1, self.feat, self.w
        )
        return torch.addmm(self.b[:, None], dense, X.T)

    def f_rows(self, X, n_idx, s_idx):
        """[R]: split s_idx[r] on sample n_idx[r]."""
        if self.feat is None:
            xs = X[n_idx]
        else:
            xs = X[n_idx[:, None], self.feat[s_idx]]
        return (xs * self.w[s_idx]).sum(1) + self.b[s_idx]

    def reg_loss(self, lap):
        """Return sum_s w_s^T M w_s (weights only, as the reference's SpatialRegularizer)."""
        return ((self.w @ lap) * self.w).sum()

    def reg_per_split(self, lap):
        """Return each split's spatial penalty ``w_s^T M w_s`` (weights only)."""
        return ((self.w @ lap) * self.w).sum(1)


class _Conv1(torch.autograd.Function):
    """First convolution of the split CNNs (one input channel, no input gradient).

    Same values as ``F.conv2d``; the backward computes the weight gradient as one convolution of
    the input with the output gradient, batch as channels (oneDNN's weight-gradient kernel for a
    single input channel was ~4x slower on one CPU thread).
    """

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x)
        return F.conv2d(x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gw = F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
        return None, gw.contiguous(), g.sum((0, 2, 3))


def conv1_single_channel(x, weight, bias):
    """``F.conv2d(x, weight, bias)`` for x [B, 1, H, W] without a gradient wrt x."""
    if x.requires_grad or not (weight.requires_grad or bias.requires_grad):
        return F.conv2d(x, weight, bias)
    return _Conv1.apply(x, weight, bias)


class CNNBank:
    """A small CNN per split (Sect. 3.4).

    Conv5x5x3 -> pool2 -> relu -> conv5x5x6 -> pool2 -> relu -> fc 96->50 -> relu -> linear 50->1.
    All splits are evaluated at once with grouped convolutions.
    """

    kind = "cnn"
    row_chunk = 2048  # samples per no-grad evaluation (bounds the conv activations' memory)
    names = ("c1w", "c1b", "c2w", "c2b", "f1w", "f1b", "w", "b")

    def __init__(self, ps, image_shape):
        self.ps = list(ps)
        self.image_shape = tuple(image_shape)

    @staticmethod
    def init(n, p, gen, image_shape=None, **_):
        """Return ``n`` fresh split CNNs for images of ``image_shape``.

        Uniform +-1/sqrt(fan-in) init.
        """
        h, w_ = image_shape[-2], image_shape[-1]
        fh, fw = ((h - 4) // 2 - 4) // 2, ((w_ - 4) // 2 - 4) // 2
        if fh < 1 or fw < 1:
            raise ValueError(f"image_shape {image_shape} is too small for the split CNN")
        nflat = 6 * fh * fw

        def u(shape, fan_in):
            bound = 1.0 / math.sqrt(fan_in)
            return (torch.rand(*shape, generator=gen) * 2 - 1) * bound

        c1w, c1b = u((n, 3, 1, 5, 5), 25), u((n, 3), 25)
        c2w, c2b = u((n, 6, 3, 5, 5), 75), u((n, 6), 75)
        f1w, f1b = u((n, 50, nflat), nflat), u((n, 50), nflat)
        w, b = u((n, 50), 50), u((n,), 50)
        norm = w.norm(dim=1).clamp_min(1e-12)
        return CNNBank([c1w, c1b, c2w, c2b, f1w, f1b, w / norm[:, None], b / norm], image_shape)

    def params(self):
        """Return the bank's trainable tensors (:attr:`names` order)."""
        return self.ps

    def set_params(self, ps):
        """Replace the bank's trainable tensors with ``ps`` (:attr:`names` order)."""
        self.ps = list(ps)

    def select(self, idx):
        """Return a new bank of the splits ``idx`` (their tensors copied)."""
        idx = torch.as_tensor(idx, dtype=torch.long)
        return CNNBank([p[idx].clone() for p in self.ps], self.image_shape)

    @staticmethod
    def cat(banks):
        """Return one bank of the splits of ``banks``, in order."""
        return CNNBank(
            [torch.cat(z) for z in zip(*[bk.ps for bk in banks], strict=True)], banks[0].image_shape
        )

    def __len__(self):
        return self.ps[0].shape[0]

    def _forward(self, X, ps):
        c1w, c1b, c2w, c2b, f1w, f1b, w, b = ps
        S = c1w.shape[0]
        h, w_ = self.image_shape[-2], self.image_shape[-1]
        x = X.reshape(-1, 1, h, w_)
        z = conv1_single_channel(x, c1w.reshape(3 * S, 1, 5, 5), c1b.reshape(-1))
        z = F.relu(F.max_pool2d(z, 2))
        if S == 1 or not torch.is_grad_enabled():
            z = F.conv2d(z, c2w.reshape(6 * S, 3, 5, 5), c2b.reshape(-1), groups=S)
        else:  # one plain conv per split: oneDNN's grouped-conv backward was ~2x slower
            z = torch.cat(
                [F.conv2d(z[:, 3 * s : 3 * s + 3], c2w[s], c2b[s]) for s in range(S)], dim=1
            )
        z = F.relu(F.max_pool2d(z, 2))
        z = z.reshape(z.shape[0], S, -1)
        z = F.relu(torch.einsum("bsi,sji->bsj", z, f1w) + f1b)
        return (z * w).sum(-1) + b

    def f_all(self, X):
        """[B, S]: every split on every sample."""
        return self._forward(X, self.ps)

    def f_allT(self, X):
        """[S, B]: every split on every sample, node-major."""
        return self._forward(X, self.ps).T

    def f_rows(self, X, n_idx, s_idx):
        """[R]: split s_idx[r] on sample n_idx[r] (one forward per distinct split)."""
        out = torch.empty(len(n_idx), dtype=X.dtype)
        out = out.requires_grad_(False)
        pieces, where = [], []
        for s in torch.unique(s_idx).tolist():
            m = (s_idx == s).nonzero().squeeze(1)
            pieces.append(self._forward(X[n_idx[m]], [p[s : s + 1] for p in self.ps]).squeeze(1))
            where.append(m)
        order = torch.cat(where)
        vals = torch.cat(pieces)
        return torch.zeros(len(n_idx), dtype=X.dtype).index_put((order,), vals)

    def reg_loss(self, lap):
        """Return 0: the split CNNs have no spatial regulariser."""
        return torch.zeros(())

    def reg_per_split(self, lap):
        """Return zeros: the split CNNs have no spatial regulariser."""
        return torch.zeros(len(self))


def grid_laplacian(h: int, w: int) -> np.ndarray:
    """4-neighbour Laplacian of an h x w pixel grid (degree on the diagonal, -1 per neighbour)."""
    n = h * w
    L = np.zeros((n, n), dtype=np.float32)
    idx = np.arange(n).reshape(h, w)
    for a, b in ((idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])):
        a, b = a.ravel(), b.ravel()
        L[a, b] = -1
        L[b, a] = -1
        np.add.at(L, (a, a), 1)
        np.add.at(L, (b, b), 1)
    return L


# ============================================================================ vectorised Adam


class StackedAdam:
    """torch.optim.Adam on parameters with a leading split axis, one step counter per split.

    lr, betas, eps and L2 weight_decay as torch's; ``step(active)`` updates only the active splits.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.params = params
        self.lr, self.b1, self.b2, self.eps, self.wd = lr, betas[0], betas[1], eps, weight_decay
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = torch.zeros(params[0].shape[0], dtype=torch.float64)

    @torch.no_grad()
    def step(self, active=None):
        """Take one Adam step on every split, or only on the ``active`` ones."""
        if active is None:
            self.t += 1
            act = None
        else:
            self.t[active] += 1
            act = active
        t = self.t if act is None else self.t[act]
        bc1 = (1 - self.b1**t).to(self.params[0].dtype)
        bc2 = (1 - self.b2**t).to(self.params[0].dtype)
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            g = p.grad
            if g is None:
                continue
            if act is not None:
                g, pa, ma, va = g[act], p[act], m[act], v[act]
            else:
                pa, ma, va = p, m, v
            if self.wd:
                g = g + self.wd * pa
            ma = ma.mul(self.b1).add_(g, alpha=1 - self.b1)
            va = va.mul(self.b2).addcmul_(g, g, value=1 - self.b2)
            shape = (-1,) + (1,) * (p.dim() - 1)
            denom = (va / bc2.reshape(shape)).sqrt_().add_(self.eps)
            upd = (ma / bc1.reshape(shape)) / denom * self.lr
            if act is not None:
                m[act], v[act] = ma, va
                p[act] = pa - upd
            else:
                m.copy_(ma)
                v.copy_(va)
                p.sub_(upd)
            p.grad = None


class CompiledAdam:
    """:class:`StackedAdam` with the update compiled: the same values bit for bit.

    The same arguments and ``step(active)``; the update is
    :func:`treebench.methods.e2edt.kernels.adam_rows`, one call per parameter instead of ~10 torch
    operations. The parameters are float32 CPU tensors updated in place;
    the moments ``m``, ``v`` are float32 arrays [S, k] (k = 1 for a vector), ``t`` float64 [S].
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        from treebench.methods.e2edt import kernels as kn

        self.params = params
        self.lr, self.b1, self.b2, self.eps, self.wd = lr, betas[0], betas[1], eps, weight_decay
        self._arr = [_rows2d(p.detach()) for p in params]
        self.m = [np.zeros_like(a) for a in self._arr]
        self.v = [np.zeros_like(a) for a in self._arr]
        S = params[0].shape[0]
        self.t = np.zeros(S, dtype=np.float64)
        self._all = np.arange(S)
        self._bc = np.empty((2, S), dtype=np.float32)
        self._buf = np.empty(max(a.size for a in self._arr), dtype=np.float32)
        self.sqrt = kn.torch_sqrt()

    def step(self, active=None):
        """Take one Adam step on every split, or only on the ``active`` ones (compiled)."""
        from treebench.methods.e2edt import kernels as kn

        rows = self._all if active is None else np.asarray(active, dtype=np.int64)
        ps = self.params
        if len(ps) == 2 and ps[0].grad is not None and ps[1].grad is not None:  # one call
            (a1, a2), (m1, m2), (v1, v2) = self._arr, self.m, self.v
            kn.adam_step2(
                a1, np.ascontiguousarray(_rows2d(ps[0].grad)), m1, v1, a2,
                np.ascontiguousarray(_rows2d(ps[1].grad)), m2, v2, self.t, rows, self._bc,
                self.lr, self.b1, self.b2, self.eps, self.wd, self.sqrt, self._buf,
            )  # fmt: skip
            ps[0].grad = ps[1].grad = None
            return
        bc1, bc2 = self._bc[0, : len(rows)], self._bc[1, : len(rows)]
        kn.adam_tick(self.t, rows, self.b1, self.b2, bc1, bc2)
        for p, a, m, v in zip(self.params, self._arr, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = np.ascontiguousarray(_rows2d(p.grad))
            kn.adam_rows(
                a, g, m, v, rows, bc1, bc2, self.lr, self.b1, self.b2, self.eps, self.wd,
                self.sqrt, self._buf,
            )  # fmt: skip
            p.grad = None


def make_adam(params, compiled, **kw):
    """Return :class:`CompiledAdam` when it can serve the fit, else :class:`StackedAdam`.

    Compiled when ``compiled`` (the kernels serve the fit) and the kernels know torch's square root
    (:func:`treebench.methods.e2edt.kernels.torch_sqrt`); the same values either way.
    """
    if compiled:
        from treebench.methods.e2edt import kernels as kn

        if kn.torch_sqrt() is not None:
            return CompiledAdam(params, **kw)
    return StackedAdam(params, **kw)


def _rows2d(t):
    """Return a float32 CPU tensor as an array [rows, k] sharing its memory."""
    a = t.numpy()
    return a.reshape(a.shape[0], -1)


# ============================================================================ stumps (greedy)


def stump_batch_sizes(counts, batch_size, node_steps=None, node_min=1):
    """Minibatch rows of each stump.

    ``batch_size``, or with ``node_steps`` ceil(rows / node_steps) within [node_min, batch_size], so
    that a stump on few rows still gets ~node_steps steps per epoch.
    """
    counts = torch.as_tensor(counts, dtype=torch.long)
    if node_steps is None:
        return torch.full_like(counts, int(batch_size))
    return torch.clamp(-(-counts // int(node_steps)), min=int(node_min), max=int(batch_size))


def _shuffled_batches(s_of_row, n_stumps, batch_size, gen):
    """Per-stump shuffled minibatches.

    (order of rows, batch id of each ordered row, stump sizes); ``batch_size`` is a tensor of each
    stump's batch rows.
    """
    R = len(s_of_row)
    key = torch.rand(R, generator=gen, dtype=torch.float64)
    order = torch.argsort(s_of_row.double() * 2.0 + key)  # by stump, random within stump
    s_sorted = s_of_row[order]
    counts = torch.bincount(s_of_row, minlength=n_stumps)
    starts = torch.cumsum(counts, 0) - counts
    pos = torch.arange(R) - starts[s_sorted]
    bid = pos // batch_size[s_sorted]
    o2 = torch.argsort(bid * (n_stumps + 1) + s_sorted, stable=True)
    return order[o2], bid[o2], counts


def train_stumps(
    bank,
    X,
    y,
    sw,
    n_idx,
    s_idx,
    n_classes,
    epochs,
    gamma0,
    dgamma,
    batch_size,
    gen,
    weight_decay=0.0,
    lap=None,
    reg=0.0,
    lr=1e-3,
    node_steps=None,
    node_min=1,
):
    """Train S stumps (split + two leaves) with the EM scheme, each on its own rows.

    n_idx, s_idx : LongTensor [R] sample index and stump index of every row.
    node_steps, node_min : per-stump batches (:func:`stump_batch_sizes`); None = ``batch_size``
    rows. Returns (bank, gamma [S], pi_left [S, K], pi_right [S, K]).
    """
    S = len(bank)
    K = n_classes
    bs_s = stump_batch_sizes(torch.bincount(s_idx, minlength=S), batch_size, node_steps, node_min)
    ps = [p.detach().clone().requires_grad_(True) for p in bank.params()]
    bank.set_params(ps)
    gamma = torch.full((S,), float(gamma0), dtype=X.dtype)
    pi_l = torch.full((S, K), 1.0 / K, dtype=X.dtype)
    pi_r = torch.full((S, K), 1.0 / K, dtype=X.dtype)
    y_r = y[n_idx]
    w_r = sw[n_idx]
    opt = None
    chunk = bank.row_chunk
    fast = use_kernels(bank, X, lap, reg)
    if fast:  # compiled epochs: no [rows, k] gathered copies, no autograd, no per-batch sorting
        from treebench.methods.e2edt import kernels as kn

        _kernel_threads()
        X_np = X.numpy()
        feat_np = np.zeros((0, 0), np.int64) if bank.feat is None else bank.feat.numpy()
        n_np, s_np = n_idx.numpy(), s_idx.numpy()
        gamma_np = gamma.numpy()  # shares memory: sees the annealing
        gW_np, gb_np = np.zeros(ps[0].shape, np.float32), np.zeros(S, np.float32)
        # the same every epoch: the sort key's stump part, each stump's first row, batch rows
        s2 = s_idx.double() * 2.0
        counts = np.bincount(s_np, minlength=S)
        starts = np.cumsum(counts) - counts
        ar, bs_np = np.arange(len(n_idx)), bs_s.numpy()
        hr = torch.empty(len(n_idx), dtype=X.dtype)
        hl = torch.empty(len(n_idx), dtype=X.dtype)
        hr_np, hl_np, wr_np = hr.numpy(), hl.numpy(), w_r.numpy()
    key_leaf = s_idx * K + y_r

    for _epoch in range(epochs):
        if fast:  # the same epoch, compiled (E-step, batches, gradient in one pass per batch)
            with torch.no_grad():
                W_np, b_np = ps[0].detach().numpy(), ps[1].detach().numpy()
                kn.stump_estep(
                    X_np, W_np, b_np, feat_np, gamma_np, n_np, s_np, y_r.numpy(), pi_l.numpy(),
                    pi_r.numpy(), hr_np, hl_np,
                )  # fmt: skip
                if opt is not None:
                    key = torch.rand(len(n_idx), generator=gen, dtype=torch.float64)
                    order = torch.argsort(s2 + key).numpy()
                    so = s_np[order]
                    bid = (ar - starts[so]) // bs_np[so]
                    nb = int(bid.max()) + 1 if len(bid) else 0
                    o2, bounds = kn.stable_group(bid, nb)
                    order = order[o2]
                    penalty = reg > 0 and lap is not None  # its gradient: a torch matmul
                    if isinstance(opt, CompiledAdam) and not penalty:
                        kn.stump_msteps(  # every batch (gradient + Adam step) in one call
                            X_np, W_np, b_np, feat_np, gamma_np, n_np, s_np, order, bounds,
                            hr_np, hl_np, wr_np, gW_np, gb_np, opt.m[0], opt.v[0], opt.m[1],
                            opt.v[1], opt.t, opt.lr, opt.b1, opt.b2, opt.eps, opt.wd, opt.sqrt,
                        )  # fmt: skip
                    else:  # batch by batch
                        for t in range(nb):
                            rows = order[bounds[t] : bounds[t + 1]]
                            gW = torch.zeros_like(ps[0])
                            gb = torch.zeros_like(ps[1])
                            bsz = kn.stump_mstep(
                                X_np, W_np, b_np, feat_np, gamma_np, n_np, s_np, rows, hr_np,
                                hl_np, wr_np, S, gW.numpy(), gb.numpy(),
                            )  # fmt: skip
                            if penalty:  # only the active rows are stepped
                                gW += reg * (ps[0].detach() @ (lap + lap.T))
                            ps[0].grad, ps[1].grad = gW, gb
                            opt.step(torch.from_numpy(np.flatnonzero(bsz)))
        else:  # ---- E-step (no gradients), all rows
            with torch.no_grad():
                lg_r = torch.empty(len(n_idx), dtype=X.dtype)
                lg_l = torch.empty(len(n_idx), dtype=X.dtype)
                for a in range(0, len(n_idx), chunk):
                    sl = slice(a, a + chunk)
                    z = gamma[s_idx[sl]] * bank.f_rows(X, n_idx[sl], s_idx[sl])
                    lg_r[sl] = log_gate(z)
                    lg_l[sl] = log_gate(-z)
                hr = pi_r[s_idx, y_r] * lg_r.exp()
                hl = pi_l[s_idx, y_r] * lg_l.exp()
                tot = hr + hl
                tot = torch.where(tot > 0, tot, torch.ones_like(tot))
                hr, hl = hr / tot, hl / tot
        # ---- M-step for the splits (not in the first epoch)
        if opt is not None and not fast:
            order, bid, counts = _shuffled_batches(s_idx, S, bs_s, gen)
            nb = int(bid.max()) + 1 if len(bid) else 0
            bounds = torch.searchsorted(bid, torch.arange(nb + 1))
            for t in range(nb):
                rows = order[bounds[t] : bounds[t + 1]]
                sr = s_idx[rows]
                bsz = torch.bincount(sr, minlength=S).to(X.dtype)
                z = gamma[sr] * bank.f_rows(X, n_idx[rows], sr)
                active = torch.unique(sr)
                with torch.no_grad():  # d/dz of -w/|B_s| (h_r log clamp(s) + h_l log clamp(1-s))
                    ls = F.logsigmoid(z)
                    lsn = ls - z
                    sg = ls.exp()
                    g_z = hr[rows] * (1 - sg) * ((ls >= LOG_LO) & (ls <= LOG_HI)) - hl[
                        rows
                    ] * sg * ((lsn >= LOG_LO) & (lsn <= LOG_HI))
                    g_z = -g_z * w_r[rows] / bsz[sr]
                if reg > 0 and lap is not None:
                    reg_l = reg * bank.reg_per_split(lap)[active].sum()
                    torch.autograd.backward([z, reg_l], [g_z, None])
                else:
                    z.backward(g_z)
                opt.step(active)
        # ---- M-step for the leaves, closed form (h of this epoch's E-step)
        with torch.no_grad():
            cr = torch.zeros(S * K, dtype=X.dtype).index_add_(0, key_leaf, w_r * hr).reshape(S, K)
            cl = torch.zeros(S * K, dtype=X.dtype).index_add_(0, key_leaf, w_r * hl).reshape(S, K)
            for c, pi in ((cr, pi_r), (cl, pi_l)):
                _normalize_leaves(pi, c)
        if opt is None:
            opt = make_adam(ps, fast, lr=lr, weight_decay=weight_decay)
        gamma += dgamma
    bank.set_params([p.detach() for p in ps])
    return bank, gamma, pi_l, pi_r


# ============================================================================ whole trees


class Structure:
    """Level-order arrays of a set of trees (a forest).

    Node arrays (any node numbering, parent before child): tree, depth, split (split id or -1 for a
    leaf), left, right (node ids or -1).  The constructor lays the nodes out in breadth-first level
    order (level 0 = the roots of all trees; level d+1 = left, right child of every inner node of
    level d, in order), numbers the leaves in that order (``leaf``, ``leaf_nodes``) and stores, per
    level, the positions of its inner nodes and leaves and the split ids of its inner nodes
    (``levels``).  ``canonical()`` renumbers the splits in level order, so that the splits of one
    level are a contiguous range.  ``anc``/``dirn`` list every leaf's ancestors (split id per depth,
    -1 padding) and directions (+1 right, -1 left), for the per-leaf reference computation.
    """

    def __init__(self, tree, depth, split, left, right):
        self.tree = np.asarray(tree, dtype=np.int64)
        self.depth = np.asarray(depth, dtype=np.int64)
        self.split = np.asarray(split, dtype=np.int64)
        self.left = np.asarray(left, dtype=np.int64)
        self.right = np.asarray(right, dtype=np.int64)
        n = len(self.tree)
        is_leaf = self.split < 0
        self.roots = np.nonzero(self.depth == 0)[0]
        self.roots = self.roots[np.argsort(self.tree[self.roots], kind="stable")]
        self.n_trees = len(self.roots)
        self.n_splits = int((~is_leaf).sum())
        # breadth-first level order
        self.levels = []  # (inner_pos, split_ids, leaf_pos) per level
        order_nodes, leaf_nodes, split_bfs = [], [], []
        cur = self.roots
        while len(cur):
            inner = self.split[cur] >= 0
            self.levels.append(
                (np.nonzero(inner)[0], self.split[cur[inner]], np.nonzero(~inner)[0])
            )
            order_nodes.append(cur)
            leaf_nodes.append(cur[~inner])
            split_bfs.append(self.split[cur[inner]])
            par = cur[inner]
            cur = np.stack([self.left[par], self.right[par]], axis=1).reshape(-1)
        self.bfs_nodes = np.concatenate(order_nodes) if order_nodes else np.zeros(0, np.int64)
        self.leaf_nodes = np.concatenate(leaf_nodes) if leaf_nodes else np.zeros(0, np.int64)
        self.split_bfs = np.concatenate(split_bfs) if split_bfs else np.zeros(0, np.int64)
        self.leaf = np.full(n, -1, dtype=np.int64)
        self.leaf[self.leaf_nodes] = np.arange(len(self.leaf_nodes))
        self.n_leaves = len(self.leaf_nodes)
        self.leaf_tree = self.tree[self.leaf_nodes]
        self.leaf_depth = self.depth[self.leaf_nodes]
        self.max_depth = int(self.leaf_depth.max()) if self.n_leaves else 0
        # ancestors of every leaf (padded to max_depth)
        parent = np.full(n, -1, dtype=np.int64)
        went_right = np.zeros(n, dtype=np.int64)
        inner = np.nonzero(~is_leaf)[0]
        parent[self.left[inner]] = inner
        parent[self.right[inner]] = inner
        went_right[self.right[inner]] = 1
        D = max(self.max_depth, 1)
        anc = np.full((self.n_leaves, D), -1, dtype=np.int64)
        dirn = np.zeros((self.n_leaves, D), dtype=np.int64)
        cur = self.leaf_nodes.copy()
        for _ in range(D):
            par = parent[cur]
            has = par >= 0
            rows = np.nonzero(has)[0]
            d = self.depth[par[rows]]
            anc[rows, d] = self.split[par[rows]]
            dirn[rows, d] = 2 * went_right[cur[rows]] - 1
            cur = np.where(has, par, cur)
        self.anc, self.dirn = anc, dirn
        self._torch = None

    def canonical(self):
        """(structure with splits renumbered in level order, perm): new split j = old perm[j]."""
        perm = self.split_bfs.copy()
        new_id = np.empty(max(self.n_splits, 1), dtype=np.int64)
        new_id[perm] = np.arange(len(perm))
        split = np.where(self.split >= 0, new_id[np.maximum(self.split, 0)], -1)
        return Structure(self.tree, self.depth, split, self.left, self.right), perm

    def torch_levels(self):
        """Per level: (inner positions, split slice or index, leaf positions) as torch objects."""
        if self._torch is None:
            out = []
            for inner_pos, sids, leaf_pos in self.levels:
                if len(sids) and np.array_equal(sids, np.arange(sids[0], sids[0] + len(sids))):
                    sel = slice(int(sids[0]), int(sids[0]) + len(sids))
                else:
                    sel = torch.as_tensor(sids)
                out.append(
                    (torch.as_tensor(inner_pos), sel, torch.as_tensor(leaf_pos), len(leaf_pos) == 0)
                )
            self._torch = out
        return self._torch

    def tables(self):
        """Return the ancestor and direction tables as torch tensors."""
        anc = torch.as_tensor(self.anc)
        dirn = torch.as_tensor(self.dirn, dtype=torch.float32)
        return anc, dirn


def leaf_logprob(FzT, struct: Structure, hard_root=False):
    """Log mu [L, B] of all leaves (level order) from gamma-scaled split logits FzT [S, B].

    One pass down the levels (node-major layout, so every gather is a row gather): each split's two
    log-gates are computed once and added to its parent's path log-probability; no per-node module
    or loop.  ``hard_root`` replaces the gate of the depth-0 splits by the step function (the
    reference's pre-2022 "discrete" evaluation, which was hard only at the root).
    """
    B = FzT.shape[1]
    lp = FzT.new_zeros(struct.n_trees, B)
    outs = []
    for d, (inner_pos, sel, leaf_pos, all_inner) in enumerate(struct.torch_levels()):
        if len(leaf_pos):
            outs.append(lp if len(inner_pos) == 0 else lp.index_select(0, leaf_pos))
        if len(inner_pos) == 0:
            break
        z = FzT[sel]
        if hard_root and d == 0:
            right = z > 0
            gr = torch.where(right, 0.0, -math.inf)
            gl = torch.where(right, -math.inf, 0.0)
        else:
            ls = F.logsigmoid(z)  # log sigmoid(-z) = ls - z
            gr, gl = ls.clamp(LOG_LO, LOG_HI), (ls - z).clamp(LOG_LO, LOG_HI)
        base = lp if all_inner else lp.index_select(0, inner_pos)
        lp = torch.stack([base + gl, base + gr], dim=1).reshape(-1, B)
    return torch.cat(outs, dim=0)


def leaf_logprob_anc(FzT, anc, dirn):
    """Return the same as :func:`leaf_logprob` ([L, B]) leaf by leaf from the ancestor table.

    Checks.
    """
    valid = anc >= 0
    z = FzT[anc.clamp_min(0)] * dirn[:, :, None]  # [L, D, B]
    return torch.where(valid[:, :, None], log_gate(z), 0.0).sum(1)


def padded_leaf_index(struct: Structure):
    """[T, Lmax] leaf ids of each tree (padding -1), for per-tree normalisation of h."""
    T = struct.n_trees
    counts = np.bincount(struct.leaf_tree, minlength=T)
    Lmax = int(counts.max())
    out = np.full((T, Lmax), -1, dtype=np.int64)
    order = np.argsort(struct.leaf_tree, kind="stable")
    pos = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    out[struct.leaf_tree[order], pos] = order
    return torch.as_tensor(out)


def _normalize_leaves(pi, cnt):
    """Closed-form leaf M-step in place.

    Rows of ``pi`` = class counts ``cnt`` normalised (empty rows kept).
    """
    tot = cnt.sum(1, keepdim=True)
    ok = tot.squeeze(1) > 0
    pi[ok] = cnt[ok] / tot[ok]


def finetune(
    bank,
    struct: Structure,
    gamma,
    pi,
    X,
    y,
    sw,
    n_classes,
    epochs,
    dgamma,
    batch_size,
    gen,
    weight_decay=0.0,
    lap=None,
    reg=0.0,
    lr=1e-3,
    topk=None,
    h_budget=2**25,
    callback=None,
):
    """EM Finetune of all trees in ``struct`` (probabilistic routing of all data).

    Per epoch: E-step (responsibilities h, no gradients, all samples), Adam steps on the splits over
    shuffled minibatches (skipped in the first epoch), closed-form leaves from the same h, then
    gamma += dgamma.  h is stored densely ([N, L], exact) when N*L <= h_budget; otherwise only the
    ``k`` largest responsibilities per sample and tree are kept (k = h_budget / (N*T), >= 8) and the
    largest dropped mass is reported in ``info``.
    Returns (bank, gamma, pi, info).
    """
    if topk is None and use_kernels(bank, X, lap, reg):
        return _finetune_compiled(
            bank, struct, gamma, pi, X, y, sw, n_classes, epochs, dgamma, batch_size, gen,
            weight_decay=weight_decay, lap=lap, reg=reg, lr=lr, callback=callback,
        )  # fmt: skip
    N = X.shape[0]
    K = n_classes
    L = struct.n_leaves
    ps = [p.detach().clone().requires_grad_(True) for p in bank.params()]
    bank.set_params(ps)
    gamma = gamma.clone()
    pi = pi.clone()
    pad = padded_leaf_index(struct)  # [T, Lmax]
    T, Lmax = pad.shape
    dense = topk is None and N * L <= h_budget
    k = Lmax if topk is None else min(int(topk), Lmax)
    if not dense and topk is None:
        k = max(8, min(Lmax, h_budget // max(1, N * T)))
    pad_valid = pad >= 0
    padc = pad.clamp_min(0)
    leaf_tree = torch.as_tensor(struct.leaf_tree)
    chunk = max(1, min(N, bank.row_chunk, 2**22 // max(1, T * Lmax + 2 * L)))
    y1h = F.one_hot(y, K).to(X.dtype) * sw[:, None]
    opt = None
    info = {"h_topk": int(Lmax if dense else k), "h_dropped_max": 0.0}
    for epoch in range(epochs):
        # ---- E-step
        with torch.no_grad():
            if dense:
                h = torch.empty(N, L, dtype=X.dtype)
            else:
                h_val = torch.empty(N, T, k, dtype=X.dtype)
                h_idx = torch.empty(N, T, k, dtype=torch.long)
            logpi = pi.clamp_min(0).log()
            for a in range(0, N, chunk):
                xb = X[a : a + chunk]
                lh = (
                    leaf_logprob(bank.f_allT(xb) * gamma[:, None], struct)
                    + logpi[:, y[a : a + chunk]]
                ).T  # [b, L]
                if dense and T == 1:
                    h[a : a + chunk] = torch.softmax(lh, dim=1).nan_to_num(0.0)
                    continue
                padded = lh[:, padc].masked_fill(~pad_valid, -math.inf)  # [b, T, Lmax]
                if dense:
                    lse = torch.logsumexp(padded, dim=-1)
                    h[a : a + chunk] = (lh - lse[:, leaf_tree]).exp().nan_to_num(0.0)
                    continue
                hh = torch.softmax(padded, dim=-1).nan_to_num(0.0)
                v, i = torch.topk(hh, k, dim=-1)
                info["h_dropped_max"] = max(info["h_dropped_max"], float((1 - v.sum(-1)).max()))
                h_val[a : a + chunk] = v
                h_idx[a : a + chunk] = padc[torch.arange(T)[None, :, None], i]
            if not dense:
                h_val2 = h_val.reshape(N, -1)
                h_idx2 = h_idx.reshape(N, -1)
        # ---- M-step for the splits
        if opt is not None:
            perm = torch.randperm(N, generator=gen)
            for a in range(0, N, batch_size):
                rows = perm[a : a + batch_size]
                # loss = -(1/|B|) sum_n sw_n sum_l h_nl log clamp(mu_nl)  (+ spatial reg)
                FzT = bank.f_allT(X[rows]) * gamma[:, None]
                lmu = leaf_logprob(FzT, struct).clamp(LOG_LO, LOG_HI)  # [L, b]
                if dense:
                    ll = (h[rows].T * lmu).sum(0)
                else:
                    ll = (h_val2[rows] * torch.gather(lmu.T, 1, h_idx2[rows])).sum(1)
                loss = -(sw[rows] * ll).sum() / len(rows)
                if reg > 0 and lap is not None:
                    loss = loss + reg * bank.reg_loss(lap)
                loss.backward()
                opt.step()
        # ---- M-step for the leaves (closed form, this epoch's h)
        with torch.no_grad():
            if dense:
                cnt = (y1h.T @ h).T  # [L, K]
            else:
                wv = (h_val * sw[:, None, None]).reshape(-1)
                key = (h_idx * K + y[:, None, None]).reshape(-1)
                cnt = torch.zeros(L * K, dtype=X.dtype).index_add_(0, key, wv).reshape(L, K)
            _normalize_leaves(pi, cnt)
        if opt is None:
            opt = StackedAdam(ps, lr=lr, weight_decay=weight_decay)
        gamma += dgamma
        if callback is not None:
            callback(epoch)
        report("finetune epochs", epoch + 1, epochs)
    bank.set_params([p.detach() for p in ps])
    return bank, gamma, pi, info


def use_kernels(bank, X, lap=None, reg=0.0):
    """Return True when the compiled kernels of :mod:`.kernels` serve this fit.

    Linear splits, float32 CPU data, numba installed; spatial regularisation only for splits on all
    features.
    """
    from treebench.methods.e2edt.kernels import HAVE_NUMBA

    return (
        HAVE_NUMBA
        and KERNELS_ENABLED
        and bank.kind == "linear"
        and X.dtype == torch.float32
        and X.device.type == "cpu"
        and (reg <= 0 or lap is None or bank.feat is None)
    )


KERNELS_ENABLED = True  # tests switch this off to compare with the torch path
FUSE_FIRST_BATCH = True  # tests switch this off to compare with the unfused Finetune epoch


def _kernel_threads():
    # torch's intra-op count is the job's (import_torch(n_jobs)); set_numba_threads keeps it
    set_numba_threads(torch.get_num_threads())


def _dense_weights(bank, p):
    """[S, p] weights with zeros outside each split's feature subset (float32, no grad)."""
    w = bank.w.detach()
    if bank.feat is None:
        return w
    return torch.zeros(w.shape[0], p, dtype=w.dtype).scatter(1, bank.feat, w)


def _linear_grads(bank, X_rows, dZ, gamma, lap, reg):
    """Set .grad of the linear bank's (w, b) from dL/dz [B, S] (z = gamma (w.x + b))."""
    g = dZ.mul_(gamma[None, :])  # dZ is not used after
    gw = g.T @ X_rows  # [S, p]
    if bank.feat is not None:
        gw = torch.gather(gw, 1, bank.feat)
    if reg > 0 and lap is not None:
        w = bank.w.detach()
        gw = gw + reg * (w @ (lap + lap.T))
    bank.w.grad = gw
    bank.b.grad = g.sum(0)


def _finetune_compiled(
    bank,
    struct: Structure,
    gamma,
    pi,
    X,
    y,
    sw,
    n_classes,
    epochs,
    dgamma,
    batch_size,
    gen,
    weight_decay=0.0,
    lap=None,
    reg=0.0,
    lr=1e-3,
    callback=None,
):
    """:func:`finetune` for linear splits with the compiled per-sample kernels.

    Dense h, exact; the same EM loop, Adam and random batches as the torch path.
    """
    from treebench.methods.e2edt import kernels as kn

    _kernel_threads()
    N, p = X.shape
    K = n_classes
    L = struct.n_leaves
    T = struct.n_trees
    bsplit, bleft, bright, bleaf, btree = kn.bfs_arrays(struct)
    leaf_tree = np.ascontiguousarray(struct.leaf_tree, dtype=np.int64)
    w = bank.w.detach().clone()
    b = bank.b.detach().clone()
    bank = LinearBank(w, b, bank.feat)
    gamma = gamma.clone()
    pi = pi.clone()
    S = len(bank)
    chunk = max(1, min(N, 2**22 // max(1, S)))
    y_np = y.numpy()
    sw_np = sw.numpy().astype(np.float32)
    y1h = F.one_hot(y, K).to(X.dtype) * sw[:, None]
    h = torch.empty(N, L, dtype=X.dtype)
    h_np = h.numpy()
    opt = None
    # the M-step from the E-step's gates in the same pass (_fused_first_batch) when one minibatch
    # holds every row: with smaller batches the blocked pass would compute the gradient of whole
    # blocks of rows for a few batch rows each
    fuse = FUSE_FIRST_BATCH and N <= chunk and batch_size >= N and torch.get_num_threads() == 1
    probe = True
    for epoch in range(epochs):
        perm = None if opt is None else torch.randperm(N, generator=gen)
        first = 0  # rows of perm whose M-step is done
        with torch.no_grad():
            Wd = _dense_weights(bank, p)
            piT = pi.clamp_min(0).T.contiguous().numpy()
            if fuse and perm is not None:  # ---- E-step and the first minibatch's gradient
                rows = perm[:batch_size]
                dZ, ok = _fused_first_batch(
                    X, b, Wd, gamma, rows, y_np, piT, (bsplit, bleft, bright, bleaf, btree),
                    leaf_tree, T, h_np, sw_np, probe,
                )  # fmt: skip
                probe, fuse = False, ok
                _linear_grads(bank, X[rows], dZ, gamma, lap, reg)
                opt.step()
                first = len(rows)
            else:  # ---- E-step
                for a in range(0, N, chunk):
                    SG = torch.addmm(b, X[a : a + chunk], Wd.T).mul_(gamma).sigmoid_()
                    kn.tree_estep(
                        SG.numpy(), y_np[a : a + chunk], piT, bsplit, bleft, bright, bleaf, btree,
                        leaf_tree, h_np[a : a + chunk],
                    )  # fmt: skip
        # ---- M-step for the splits
        if opt is not None:
            for a in range(first, N, batch_size):
                rows = perm[a : a + batch_size]
                Xr = X[rows]
                with torch.no_grad():
                    SG = torch.addmm(b, Xr, _dense_weights(bank, p).T).mul_(gamma).sigmoid_()
                    dZ = torch.empty_like(SG)
                    kn.tree_mstep_grad(
                        SG.numpy(), h_np, rows.numpy(), sw_np[rows.numpy()],
                        1.0 / len(rows), bsplit, bleft, bright, bleaf, T, dZ.numpy(),
                    )  # fmt: skip
                    _linear_grads(bank, Xr, dZ, gamma, lap, reg)
                opt.step()
        # ---- M-step for the leaves (closed form, this epoch's h)
        with torch.no_grad():
            _normalize_leaves(pi, (y1h.T @ h).T)  # counts [L, K]
        if opt is None:
            opt = make_adam([w, b], True, lr=lr, weight_decay=weight_decay)
        gamma += dgamma
        if callback is not None:
            callback(epoch)
        report("finetune epochs", epoch + 1, epochs)
    return (
        bank,
        gamma,
        pi,
        {"h_topk": int(padded_leaf_index(struct).shape[1]), "h_dropped_max": 0.0},
    )


def _fused_first_batch(X, b, Wd, gamma, rows, y_np, piT, bfs, leaf_tree, T, h_np, sw_np, probe):
    """Run the E-step of all N rows and the first minibatch's M-step gradient from the same gates.

    The E-step fills ``h_np``; the gradient is dZ [B, S] of the minibatch ``rows``
    (:func:`treebench.methods.e2edt.kernels.tree_em_rows`): the values of :func:`tree_estep` and of
    :func:`tree_mstep_grad` on the batch's own gates, computed before any Adam step, so the weights
    are the E-step's.  Returns (dZ, whether to fuse again).

    The batch's gates ``addmm(b, X[rows], Wd.T) * gamma`` equal the E-step's rows (the product is
    rowwise on this BLAS at one thread; ``probe`` checks it on this fit's shapes once, and on a
    mismatch returns the unfused gradient and False).  torch's sigmoid is not quite elementwise: its
    vectorised body and scalar tail (the last numel mod 2 x vector width elements, a divisor of
    64) round differently.  The batch positions that hold either array's tail are recomputed from
    the logits: the batch's last r rows (r S = B S mod 64, so the tail falls on the same elements)
    as the batch's own sigmoid does, the E-step's last rows in the vectorised body (padded to a
    multiple of 64 elements); their gradient is :func:`tree_mstep_grad`'s.
    """
    from treebench.methods.e2edt import kernels as kn

    N, S = X.shape[0], Wd.shape[0]
    B = len(rows)
    rows_np = rows.numpy()
    q = 64 // math.gcd(S, 64)
    r_m, r_e = B % q, N % q
    e_pos = np.flatnonzero(rows_np[: B - r_m] >= N - r_e)
    fix = np.concatenate([e_pos, np.arange(B - r_m, B)])
    Z = torch.addmm(b, X, Wd.T).mul_(gamma)
    Zf = Z[torch.from_numpy(rows_np[fix])]
    SG = Z.sigmoid_()  # the E-step's gates, as the unfused E-step computes them
    parts = []
    if len(e_pos):
        z = Zf[: len(e_pos)].reshape(-1)
        parts.append(F.pad(z, (0, -len(z) % 64)).sigmoid_()[: len(z)].reshape(-1, S))
    if r_m:
        parts.append(Zf[len(e_pos) :].sigmoid_())
    SGf = torch.cat(parts) if parts else Zf
    ok = True
    if probe:
        want = torch.addmm(b, X[rows], Wd.T).mul_(gamma).sigmoid_()
        got = SG[rows]
        got[torch.from_numpy(fix)] = SGf
        ok = torch.equal(got, want)
    pos = np.full(N, -1, dtype=np.int64)
    if ok:
        pos[rows_np] = np.arange(B)
        pos[rows_np[fix]] = -1
    sw_b = sw_np[rows_np]
    dZ = torch.empty(B, S, dtype=X.dtype)
    dZ_np = dZ.numpy()
    bsplit, bleft, bright, bleaf, btree = bfs
    kn.tree_em_rows(
        SG.numpy(), y_np, piT, bsplit, bleft, bright, bleaf, btree, leaf_tree, h_np, pos, sw_b,
        1.0 / B, dZ_np,
    )  # fmt: skip
    if not ok:  # the unfused gradient from the batch's own gates
        kn.tree_mstep_grad(
            want.numpy(), h_np, rows_np, sw_b, 1.0 / B, bsplit, bleft, bright, bleaf, T, dZ_np
        )
    elif len(fix):
        dZf = np.empty((len(fix), S), dtype=np.float32)
        kn.tree_mstep_grad(
            SGf.numpy(), h_np, rows_np[fix], sw_b[fix], 1.0 / B, bsplit, bleft, bright, bleaf, T,
            dZf,
        )  # fmt: skip
        dZ_np[fix] = dZf
    return dZ, ok


@torch.no_grad()
def route_hard(bank, struct: Structure, X, row_chunk=None):
    """Deterministic routing: leaf id [N, T] of every sample in every tree (one path each).

    Linear splits on float32 CPU inputs use the compiled router of :mod:`treebench.methods._routing`
    (no [rows, p] gathered copies: the torch loop's cost grew faster than n on MNIST); other banks
    the torch loop :func:`route_hard_torch`.
    """
    if bank.kind == "linear" and X.dtype == torch.float32 and X.device.type == "cpu":
        from treebench.methods._routing import route_oblique

        feat = None if bank.feat is None else bank.feat.numpy()
        node, _ = route_oblique(
            X.numpy(),
            bank.w.detach().numpy(),
            bank.b.detach().numpy(),
            struct.split,
            struct.left,
            struct.right,
            struct.roots,
            feat=feat,
        )
        return torch.from_numpy(struct.leaf[node])
    return route_hard_torch(bank, struct, X, row_chunk)


@torch.no_grad()
def route_hard_torch(bank, struct: Structure, X, row_chunk=None):
    """Deterministic routing with torch gathers (reference; any bank)."""
    N = X.shape[0]
    T = struct.n_trees
    row_chunk = row_chunk or bank.row_chunk
    split = torch.as_tensor(struct.split)
    left = torch.as_tensor(struct.left)
    right = torch.as_tensor(struct.right)
    node = torch.as_tensor(struct.roots).repeat(N)  # rows: (n, t) n-major
    n_of = torch.arange(N).repeat_interleave(T)
    active = torch.nonzero(split[node] >= 0).squeeze(1)
    while len(active):
        for a in range(0, len(active), row_chunk):
            r = active[a : a + row_chunk]
            s = split[node[r]]
            f = bank.f_rows(X, n_of[r], s)
            node[r] = torch.where(f > 0, right[node[r]], left[node[r]])
        active = active[split[node[active]] >= 0]
    leaf = torch.as_tensor(struct.leaf)[node]
    return leaf.reshape(N, T)


@torch.no_grad()
def soft_proba(bank, struct: Structure, gamma, pi, X, hard_root=False, chunk=4096):
    """Mean over trees of sum_l pi_l mu_l(x) with probabilistic gates.

    Optionally hard at the root.
    """
    T = struct.n_trees
    chunk = max(1, min(chunk, bank.row_chunk, 2**22 // max(1, 2 * struct.n_leaves)))
    out = []
    for a in range(0, X.shape[0], chunk):
        FzT = bank.f_allT(X[a : a + chunk]) * gamma[:, None]
        mu = leaf_logprob(FzT, struct, hard_root=hard_root).exp()  # [L, b]
        out.append(mu.T @ pi / T)
    return torch.cat(out)


# ============================================================================ greedy growth


def _entropy(p):
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def _entropies(P):
    """Entropy of every row of P [m, K] (0 log 0 = 0), as :func:`_entropy` row by row."""
    return -torch.where(P > 0, P * P.clamp_min(1e-38).log(), 0.0).sum(1)


GAINS = ("reference", "weighted")


class Grower:
    """Greedy construction (Sect. 2.4) of ``n_trees`` trees on the same data.

    Level-wise to ``max_depth``, or best-first by information gain to ``max_leaves`` leaves per
    tree.

    All stumps that are due at the same time (one level of every tree, or the new children in
    best-first mode) are trained together by :func:`train_stumps`; each one only on its own
    deterministic data subset.  A stump whose deterministic split sends all its samples one way is
    retrained (fresh init) up to ``max_attempts`` times, then its node stays a leaf.
    """

    def __init__(
        self,
        make_bank,
        X,
        y,
        sw,
        n_classes,
        n_trees=1,
        max_depth=None,
        max_leaves=None,
        epochs=20,
        dgamma=0.1,
        gamma0=1.0,
        batch_size=1000,
        gen=None,
        max_attempts=5,
        weight_decay=0.0,
        lap=None,
        reg=0.0,
        lr=1e-3,
        log=None,
        gain="reference",
        node_steps=None,
        node_min=1,
    ):
        if gain not in GAINS:
            raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
        self.gain = gain
        self.make_bank, self.X, self.y, self.sw, self.K = make_bank, X, y, sw, n_classes
        self.n_trees, self.max_depth, self.max_leaves = n_trees, max_depth, max_leaves
        self.kw = dict(
            epochs=epochs,
            gamma0=gamma0,
            dgamma=dgamma,
            batch_size=batch_size,
            gen=gen,
            weight_decay=weight_decay,
            lap=lap,
            reg=reg,
            lr=lr,
            node_steps=node_steps,
            node_min=node_min,
        )
        self.gen, self.max_attempts, self.log = gen, max_attempts, log
        self.tree, self.depth, self.split, self.left, self.right = [], [], [], [], []
        self.dist, self.rows = [], []
        self.banks, self.gammas = [], []
        self.n_split = 0
        self.n_failed = 0
        self.n_stumps_trained = 0
        self.pending = {}  # node -> fitted stump waiting to be applied (best-first)

    def _add(self, tree, depth, dist, rows):
        self.tree.append(tree)
        self.depth.append(depth)
        self.split.append(-1)
        self.left.append(-1)
        self.right.append(-1)
        self.dist.append(dist)
        self.rows.append(rows)
        return len(self.tree) - 1

    def _fit(self, nodes):
        """Fit stumps for ``nodes``.

        Returns {node: (bank, gamma, pi_l, pi_r, gain, rows_l, rows_r)}.
        """
        y = self.y
        nodes = [n for n in nodes if len(self.rows[n]) > 0]
        if nodes:  # impure nodes only: min label != max label, one segment reduction
            seg = torch.repeat_interleave(
                torch.arange(len(nodes)), torch.tensor([len(self.rows[n]) for n in nodes])
            )
            yy = y[torch.cat([self.rows[n] for n in nodes])]
            lo = torch.full((len(nodes),), y.max().item()).scatter_reduce(0, seg, yy, "amin")
            hi = torch.full((len(nodes),), y.min().item()).scatter_reduce(0, seg, yy, "amax")
            impure = (lo != hi).tolist()
            nodes = [n for n, imp in zip(nodes, impure, strict=True) if imp]
        todo = nodes
        out = {}
        for _attempt in range(self.max_attempts):
            if not todo:
                break
            bank = self.make_bank(len(todo))
            n_idx = torch.cat([self.rows[n] for n in todo])
            s_idx = torch.repeat_interleave(
                torch.arange(len(todo)), torch.tensor([len(self.rows[n]) for n in todo])
            )
            bank, gamma, pi_l, pi_r = train_stumps(
                bank, self.X, y, self.sw, n_idx, s_idx, self.K, **self.kw
            )
            self.n_stumps_trained += len(todo)
            with torch.no_grad():
                go_r = self._goes_right(bank, n_idx, s_idx)
            n_r = torch.bincount(s_idx[go_r], minlength=len(todo)).tolist()
            n_l = torch.bincount(s_idx[~go_r], minlength=len(todo)).tolist()
            ends = np.cumsum([len(self.rows[n]) for n in todo]).tolist()  # rows grouped by stump
            h_par = _entropies(torch.stack([self.dist[n] for n in todo])).tolist()
            h_r, h_l = _entropies(pi_r).tolist(), _entropies(pi_l).tolist()
            failed = []
            for j, n in enumerate(todo):
                if n_r[j] == 0 or n_l[j] == 0:
                    failed.append(n)
                    continue
                sl = slice(ends[j - 1] if j else 0, ends[j])
                rows_j, go_j = n_idx[sl], go_r[sl]
                rr, rl = rows_j[go_j], rows_j[~go_j]
                if self.gain == "weighted":
                    gain = self._weighted_gain(rows_j, rl, rr)
                else:
                    tot = float(n_r[j] + n_l[j])
                    gain = h_par[j] - (n_r[j] / tot * h_r[j] + n_l[j] / tot * h_l[j])
                out[n] = ((bank, j), gamma[j : j + 1], pi_l[j], pi_r[j], gain, rl, rr)
            todo = failed
        self.n_failed += len(todo)
        return out

    def _weighted_gain(self, rows, rl, rr):
        """Information gain of a deterministic split in the CART sense.

        The node's share of the (weighted) training samples times the drop in entropy of the
        empirical class frequencies (node vs its two children).
        """
        K = self.K
        c = [
            torch.bincount(self.y[r], weights=self.sw[r].double(), minlength=K)
            for r in (rows, rl, rr)
        ]
        w = [float(ci.sum()) for ci in c]
        h = [float(_entropy(ci / wi)) if wi > 0 else 0.0 for ci, wi in zip(c, w, strict=True)]
        return w[0] / float(self.sw.sum()) * (h[0] - (w[1] * h[1] + w[2] * h[2]) / w[0])

    def _goes_right(self, bank, n_idx, s_idx):
        """Deterministic split f_s(x_n) > 0 of every row (n_idx[r], s_idx[r])."""
        if use_kernels(bank, self.X, self.kw["lap"], self.kw["reg"]):
            from treebench.methods.e2edt import kernels as kn

            out = np.empty(len(n_idx), dtype=np.float32)
            feat = np.zeros((0, 0), np.int64) if bank.feat is None else bank.feat.numpy()
            kn.stump_logits(
                self.X.numpy(), bank.w.numpy(), bank.b.numpy(), feat,
                np.ones(len(bank), np.float32), n_idx.numpy(), s_idx.numpy(), out,
            )  # fmt: skip
            return torch.from_numpy(out > 0)
        c = bank.row_chunk
        return torch.cat(
            [
                bank.f_rows(self.X, n_idx[a : a + c], s_idx[a : a + c]) > 0
                for a in range(0, len(n_idx), c)
            ]
        )

    def _apply(self, n, fitted):
        bank, gamma, pi_l, pi_r, _gain, rl, rr = fitted
        self.split[n] = self.n_split
        self.n_split += 1
        self.banks.append(bank)
        self.gammas.append(gamma)
        t, d = self.tree[n], self.depth[n]
        self.left[n] = self._add(t, d + 1, pi_l.clone(), rl)
        self.right[n] = self._add(t, d + 1, pi_r.clone(), rr)
        self.rows[n] = None
        return self.left[n], self.right[n]

    def _may_split(self, n):
        return self.max_depth is None or self.depth[n] < self.max_depth

    #: everything growing changes, besides the loop's own variables (:meth:`state`)
    _STATE = (
        "tree", "depth", "split", "left", "right", "dist", "rows", "banks", "gammas",
        "n_split", "n_failed", "n_stumps_trained", "pending",
    )  # fmt: skip

    def state(self, **loop) -> dict:
        """Return the grower between two steps of :meth:`grow`, for :meth:`grow` to resume from.

        With the loop's variables ``loop`` and the generator's state.
        """
        gen = None if self.gen is None else self.gen.get_state()
        return {**{k: getattr(self, k) for k in self._STATE}, "gen": gen, "loop": loop}

    def _restore(self, state: dict) -> dict:
        for k in self._STATE:
            setattr(self, k, state[k])
        if self.gen is not None:
            self.gen.set_state(state["gen"])
        return state["loop"]

    def _roots(self):
        N = self.X.shape[0]
        uni = torch.full((self.K,), 1.0 / self.K, dtype=self.X.dtype)
        return [self._add(t, 0, uni.clone(), torch.arange(N)) for t in range(self.n_trees)]

    def grow(self, save=None, resume=None):
        """Grow the trees, saving the state after each step and resuming from ``resume``.

        ``save(state)`` is called after each step (a level, or a round of best-first splits) with
        :meth:`state`, and ``resume``, such a state, goes on from it.
        """
        if self.max_leaves is None:  # level-wise
            if resume is None:
                frontier = self._roots()
            else:
                frontier = self._restore(resume)["frontier"]
            while frontier:
                cand = [n for n in frontier if self._may_split(n)]
                fitted = self._fit(cand)
                if self.log:
                    self.log(
                        f"level {self.depth[cand[0]] if cand else '-'}: {len(cand)} stumps, "
                        f"{len(fitted)} split"
                    )
                frontier = []
                for n in cand:
                    if n in fitted:
                        frontier.extend(self._apply(n, fitted[n]))
                if cand:
                    report("greedy levels", self.depth[cand[0]] + 1, self.max_depth)
                if save is not None and frontier:
                    save(self.state(frontier=frontier))
        else:  # best-first by information gain, per tree
            if resume is None:
                frontier = self._roots()
                self.pending.update(self._fit([n for n in frontier if self._may_split(n)]))
                n_leaves = [1] * self.n_trees
            else:
                n_leaves = list(self._restore(resume)["n_leaves"])
            while True:
                best = {}
                for n, f in self.pending.items():
                    t = self.tree[n]
                    if n_leaves[t] < self.max_leaves and (t not in best or f[4] > best[t][1]):
                        best[t] = (n, f[4])
                if not best:
                    break
                new = []
                for t, (n, g) in best.items():
                    if self.log:
                        self.log(
                            f"tree {t}: split node of {len(self.rows[n])} rows (gain {g:.4f}), "
                            f"{n_leaves[t] + 1} leaves"
                        )
                    new.extend(self._apply(n, self.pending.pop(n)))
                    n_leaves[t] += 1
                self.pending.update(self._fit([n for n in new if self._may_split(n)]))
                report("greedy leaves", sum(n_leaves), self.n_trees * self.max_leaves)
                if save is not None:
                    save(self.state(n_leaves=list(n_leaves)))
        for i in range(len(self.rows)):
            self.rows[i] = None
        return self

    def result(self):
        """Return the grown trees: ``(bank, structure, gamma, pi)`` in canonical split order."""
        struct = Structure(self.tree, self.depth, self.split, self.left, self.right)
        struct, perm = struct.canonical()
        bank = None
        if self.banks:  # (stump bank, row) per split -> one bank in canonical split order
            uniq, offset = {}, []
            for bk, _j in self.banks:
                if id(bk) not in uniq:
                    uniq[id(bk)] = (len(uniq), bk)
            sizes = [len(bk) for _i, bk in uniq.values()]
            starts = np.cumsum([0] + sizes[:-1])
            offset = [starts[uniq[id(bk)][0]] + j for bk, j in self.banks]
            allb = type(self.banks[0][0]).cat([bk for _i, bk in uniq.values()])
            bank = allb.select(np.asarray(offset, dtype=np.int64)[perm])
        gamma = torch.cat(self.gammas)[torch.as_tensor(perm)] if self.gammas else torch.zeros(0)
        pi = torch.stack([self.dist[n] for n in struct.leaf_nodes])
        return bank, struct, gamma, pi


def substructure(struct: Structure, trees):
    """Structure of the trees ``trees`` of ``struct``.

    (sub-structure, split ids, leaf ids) in the parent's numbering (split ids ascending = the
    sub-structure's split numbering).
    """
    keep = np.isin(struct.tree, trees)
    nodes = np.nonzero(keep)[0]
    remap = np.full(len(struct.tree), -1, dtype=np.int64)
    remap[nodes] = np.arange(len(nodes))
    splits = struct.split[nodes]
    split_ids = np.sort(splits[splits >= 0])
    smap = np.full(max(struct.n_splits, 1), -1, dtype=np.int64)
    smap[split_ids] = np.arange(len(split_ids))
    new_split = np.where(splits >= 0, smap[np.maximum(splits, 0)], -1)
    tree_map = {t: i for i, t in enumerate(sorted(set(struct.tree[nodes].tolist())))}
    sub = Structure(
        [tree_map[t] for t in struct.tree[nodes]],
        struct.depth[nodes],
        new_split,
        np.where(struct.left[nodes] >= 0, remap[np.maximum(struct.left[nodes], 0)], -1),
        np.where(struct.right[nodes] >= 0, remap[np.maximum(struct.right[nodes], 0)], -1),
    )
    leaf_ids = struct.leaf[nodes[sub.leaf_nodes]]
    return sub, split_ids, leaf_ids


#: the classes a fit's checkpoint holds instances of (the only ones its loading may build)
CHECKPOINT_CLASSES = (LinearBank, CNNBank, Structure)
