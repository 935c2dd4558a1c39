"""One-Stage Tree's complete level-order tree: routing kernels, node values, reachability, pruning.

Node ``i`` of a complete depth-``D`` tree has children ``2i + 1`` (left) and ``2i + 2``; the first
``2**D - 1`` nodes are potential splits. A row's path is its node at every level; it stops at the
first node that is not a kept split. Shared by the estimator and its graph export.
"""

from __future__ import annotations

import numpy as np

# ----------------------------------------------------------------------------- tree helpers


def n_internal(depth: int) -> int:
    """Return the number of potential split nodes of a complete tree of ``depth``."""
    return 2**depth - 1


_NUMBA_ROUTE = None


def _split_z(A, ra, WdT, i):
    """Row ``ra`` of ``A`` times router ``i``: the logit difference every compiled pass routes by.

    Training, the gamma step and prediction sum it in this one order. The reference of the order:
    the compiled kernels compute the four accumulators as the four lanes of one vector
    (:func:`_lane_sums`), the same float32 products and sums.
    """
    p = A.shape[1]
    p4 = p - p % 4
    z0 = z1 = z2 = z3 = np.float32(0.0)  # four accumulators break the add dependency chain
    for j in range(0, p4, 4):
        z0 += A[ra, j] * WdT[i, j]
        z1 += A[ra, j + 1] * WdT[i, j + 1]
        z2 += A[ra, j + 2] * WdT[i, j + 2]
        z3 += A[ra, j + 3] * WdT[i, j + 3]
    for j in range(p4, p):
        z0 += A[ra, j] * WdT[i, j]
    return (z0 + z1) + (z2 + z3)


_LANES = {}


def _lane_sums(k: int):
    """Return a numba intrinsic ``f((a_1, w_1, ..., a_k, w_k), n4)`` of :func:`_split_z`'s sums.

    For each pair of contiguous float32 rows, it gives the four accumulators of :func:`_split_z`
    over the first ``4 * n4`` entries, as one ``(4 k,)`` tuple.

    Each accumulator is a lane of a 4-float vector (a vector multiply and add per block of four:
    IEEE lane-wise, so the same rounding as the scalar loop; numba does not vectorise that loop
    itself), and ``k`` rows are interleaved so their independent add chains overlap.
    """
    if k not in _LANES:
        from llvmlite import ir
        from numba import types
        from numba.core import cgutils
        from numba.extending import intrinsic

        @intrinsic
        def lanes(typingctx, arrs, n4):
            sig = types.UniTuple(types.float32, 4 * k)(arrs, n4)

            def codegen(context, builder, sig, args):
                vec = ir.VectorType(ir.FloatType(), 4)
                items = cgutils.unpack_tuple(builder, args[0])
                ptr = [
                    builder.bitcast(
                        context.make_array(sig.args[0][q])(context, builder, items[q]).data,
                        vec.as_pointer(),
                    )
                    for q in range(2 * k)
                ]
                zero = ir.Constant(vec, [0.0] * 4)
                acc = [cgutils.alloca_once_value(builder, zero) for _ in range(k)]
                with cgutils.for_range(builder, args[1]) as loop:
                    for q in range(k):
                        x = builder.load(builder.gep(ptr[2 * q], [loop.index]), align=4)
                        y = builder.load(builder.gep(ptr[2 * q + 1], [loop.index]), align=4)
                        builder.store(
                            builder.fadd(builder.load(acc[q]), builder.fmul(x, y)), acc[q]
                        )
                out = []
                for q in range(k):
                    v = builder.load(acc[q])
                    out += [
                        builder.extract_element(v, ir.Constant(ir.IntType(32), c)) for c in range(4)
                    ]
                return context.make_tuple(builder, sig.return_type, out)

            return sig, codegen

        _LANES[k] = lanes
    return _LANES[k]


_NUMBA_ROW = None


def _route_row():
    """Return the compiled (inlined) routers: ``(split_z, route_row, route_rows)``.

    ``split_z(A, ra, WdT, i)`` is :func:`_split_z`; ``route_row(Xa, WdT, depth, paths, r)``
    writes row ``r``'s full-depth path into ``paths[r, 1:]``; ``route_rows(Xa, WdT, depth,
    paths, lo, hi)`` does so for rows ``lo:hi``, four rows at a time (the same decisions).
    """
    global _NUMBA_ROW
    if _NUMBA_ROW is None:
        import numba

        one, four = _lane_sums(1), _lane_sums(4)
        jit = numba.njit(inline="always", nogil=True)

        @jit
        def tail(z0, z1, z2, z3, A, ra, WdT, i):
            p = A.shape[1]
            for j in range(p - p % 4, p):
                z0 += A[ra, j] * WdT[i, j]
            return (z0 + z1) + (z2 + z3)

        @jit
        def split_z(A, ra, WdT, i):
            z = one((A[ra], WdT[i]), A.shape[1] // 4)
            return tail(z[0], z[1], z[2], z[3], A, ra, WdT, i)

        @jit
        def route_row(Xa, WdT, depth, paths, r):
            i = 0
            for lvl in range(depth):
                i = 2 * i + 1 + (1 if split_z(Xa, r, WdT, i) <= 0 else 0)
                paths[r, lvl + 1] = i

        @jit
        def route_four(Xa, WdT, depth, paths, r):
            i0 = i1 = i2 = i3 = 0
            n4 = Xa.shape[1] // 4
            for lvl in range(depth):
                z = four(
                    (Xa[r], WdT[i0], Xa[r + 1], WdT[i1], Xa[r + 2], WdT[i2], Xa[r + 3], WdT[i3]),
                    n4,
                )
                a = tail(z[0], z[1], z[2], z[3], Xa, r, WdT, i0)
                b = tail(z[4], z[5], z[6], z[7], Xa, r + 1, WdT, i1)
                c = tail(z[8], z[9], z[10], z[11], Xa, r + 2, WdT, i2)
                e = tail(z[12], z[13], z[14], z[15], Xa, r + 3, WdT, i3)
                i0 = 2 * i0 + 1 + (1 if a <= 0 else 0)
                i1 = 2 * i1 + 1 + (1 if b <= 0 else 0)
                i2 = 2 * i2 + 1 + (1 if c <= 0 else 0)
                i3 = 2 * i3 + 1 + (1 if e <= 0 else 0)
                paths[r, lvl + 1] = i0
                paths[r + 1, lvl + 1] = i1
                paths[r + 2, lvl + 1] = i2
                paths[r + 3, lvl + 1] = i3

        @jit
        def route_rows(Xa, WdT, depth, paths, lo, hi):
            r = lo
            while r + 4 <= hi:
                route_four(Xa, WdT, depth, paths, r)
                r += 4
            for q in range(r, hi):
                route_row(Xa, WdT, depth, paths, q)

        _NUMBA_ROW = (split_z, route_row, route_rows)
    return _NUMBA_ROW


def _numba_route():
    """Compiled routers (numba, imported lazily): (serial, parallel)."""
    global _NUMBA_ROUTE
    if _NUMBA_ROUTE is None:
        import numba

        rows = _route_row()[2]

        def route(Xa, WdT, depth, paths):
            rows(Xa, WdT, depth, paths, 0, Xa.shape[0])

        def route_par(Xa, WdT, depth, paths):
            n = Xa.shape[0]
            for b in numba.prange((n + 255) // 256):  # blocks of rows, each routed as route's
                rows(Xa, WdT, depth, paths, 256 * b, min(n, 256 * b + 256))

        _NUMBA_ROUTE = (
            numba.njit(cache=True, nogil=True)(route),
            numba.njit(cache=True, nogil=True, parallel=True)(route_par),
        )
    return _NUMBA_ROUTE


_NUMBA_STOPS = None


def _stops_factory():
    import numba

    split_z = _route_row()[0]
    four = _lane_sums(4)

    @numba.njit(inline="always", nogil=True)
    def standardise(X, r, mean, scale, xa, q):
        for j in range(X.shape[1]):  # [x; 1] standardised as fit does: in float64, then float32
            xa[q, j] = np.float32((np.float64(X[r, j]) - mean[j]) / scale[j])

    @numba.njit(inline="always", nogil=True)
    def advance(z0, z1, z2, z3, xa, q, WdT, i):
        for j in range(xa.shape[1] - xa.shape[1] % 4, xa.shape[1]):
            z0 += xa[q, j] * WdT[i, j]
        return 2 * i + 1 + (1 if (z0 + z1) + (z2 + z3) <= 0 else 0)

    def stops(X, mean, scale, WdT, keep, depth, stop, level):
        n, d = X.shape
        xa = np.ones((4, d + 1), dtype=np.float32)
        n4 = (d + 1) // 4
        r = 0
        while r + 4 <= n:  # four rows at a time, each walking only the kept splits it passes
            for q in range(4):
                standardise(X, r + q, mean, scale, xa, q)
            i0 = i1 = i2 = i3 = 0
            lvl = 0
            while lvl < depth:
                m0, m1, m2, m3 = keep[i0], keep[i1], keep[i2], keep[i3]
                if not (m0 or m1 or m2 or m3):
                    break
                # a row that has stopped is evaluated at the root and the result dropped
                z = four(
                    (
                        xa[0],
                        WdT[i0 if m0 else 0],
                        xa[1],
                        WdT[i1 if m1 else 0],
                        xa[2],
                        WdT[i2 if m2 else 0],
                        xa[3],
                        WdT[i3 if m3 else 0],
                    ),
                    n4,
                )
                lvl += 1
                if m0:
                    i0 = advance(z[0], z[1], z[2], z[3], xa, 0, WdT, i0)
                    level[r] = lvl
                if m1:
                    i1 = advance(z[4], z[5], z[6], z[7], xa, 1, WdT, i1)
                    level[r + 1] = lvl
                if m2:
                    i2 = advance(z[8], z[9], z[10], z[11], xa, 2, WdT, i2)
                    level[r + 2] = lvl
                if m3:
                    i3 = advance(z[12], z[13], z[14], z[15], xa, 3, WdT, i3)
                    level[r + 3] = lvl
            stop[r], stop[r + 1], stop[r + 2], stop[r + 3] = i0, i1, i2, i3
            r += 4
        for q in range(r, n):
            standardise(X, q, mean, scale, xa, 0)
            i = 0
            lvl = 0
            while lvl < depth and keep[i]:
                i = 2 * i + 1 + (1 if split_z(xa, 0, WdT, i) <= 0 else 0)
                lvl += 1
            stop[q] = i
            level[q] = lvl

    return numba.njit(cache=True, nogil=True)(stops)


def stop_nodes(X, mean, scale, Wd: np.ndarray, keep: np.ndarray, depth: int):
    """Return the node where each row of raw features ``X`` stops, and its level.

    A row stops at the first node that is not a kept split. The same decisions as standardising
    ``[(X - mean) / scale; 1]`` to float32, then :func:`route_paths` and :func:`stop_positions`
    (the same operations in the same order), in one compiled pass: a row evaluates only the splits
    it passes, and neither the standardised copy nor the (n, depth + 1) paths are built
    (prediction's cost per split). ``X`` may be float32 or float64.
    """
    global _NUMBA_STOPS
    if _NUMBA_STOPS is None:
        _NUMBA_STOPS = _stops_factory()
    n = X.shape[0]
    stop, level = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    if n:
        _NUMBA_STOPS(
            np.ascontiguousarray(X),
            np.asarray(mean, dtype=np.float64),
            np.asarray(scale, dtype=np.float64),
            router_rows(Wd),
            np.ascontiguousarray(keep, dtype=np.bool_),
            depth,
            stop,
            level,
        )
    return stop, level


def router_rows(Wd: np.ndarray) -> np.ndarray:
    """Return ``Wd`` (d+1, n_int) as the compiled kernels read it.

    One contiguous float32 row per router.
    """
    return np.ascontiguousarray(Wd.T, dtype=np.float32)


def route_paths(
    Xa: np.ndarray, Wd: np.ndarray, depth: int, leaves_only: bool = False, n_threads: int = 1
) -> np.ndarray:
    """Deterministic (argmax) full-depth paths: node ids (level order) per row and level.

    The paths have shape (n, depth+1). ``Xa`` is ``[x; 1]`` (n, d+1) and ``Wd`` the logit
    differences ``w_0 - w_1`` (d+1, n_internal). Rows go left iff the difference is > 0 (Eq. 18).
    With ``leaves_only`` only the depth-``depth`` node of each row is returned, shape (n,). Each
    row evaluates only the ``depth`` routers on its path (compiled with numba, cached on disk), at
    every size: training, the gamma step and prediction route a row the same way.
    """
    n = Xa.shape[0]
    paths = np.zeros((n, depth + 1), dtype=np.int64)
    if n:
        args = (np.ascontiguousarray(Xa, dtype=np.float32), router_rows(Wd), depth, paths)
        route = _numba_route()
        if n_threads > 1 and n >= 4096:
            from treebench.methods._threads import set_numba_threads

            set_numba_threads(n_threads)
            route[1](*args)
        else:
            route[0](*args)
    return paths[:, depth] if leaves_only else paths


def node_values(
    leaf: np.ndarray, Y: np.ndarray, w: np.ndarray, depth: int, codes=None
) -> np.ndarray:
    """Closed-form node values (Eq. 17): weighted mean of ``Y`` over the rows reaching each node.

    ``Y`` is (n, k). ``leaf`` is each row's depth-``depth`` node under deterministic routing; the
    rows reaching an internal node are exactly those of the leaves below it, so sums are
    accumulated bottom up. A node no row reaches copies its parent's value (the root of an empty
    set gets zeros). ``codes`` (class index per row) may be given when ``Y`` is one-hot, to count
    with a single bincount.
    """
    return values_from_leaves(*leaf_stats(leaf, Y, w, depth, codes), depth)


def leaf_stats(leaf, Y, w, depth: int, codes=None, sign: float = 1.0):
    """Per-leaf weighted target sums (n_leaves, k) and weights (n_leaves,) of the rows in ``leaf``.

    ``sign=-1`` gives the negated statistics, to take rows out of running sums (:class:`LeafSums`).
    """
    k = Y.shape[1]
    n_int = 2**depth - 1
    li = leaf - n_int
    ww = w if sign == 1.0 else sign * w
    cnt = np.bincount(li, weights=ww, minlength=n_int + 1)
    if codes is not None:  # one-hot targets: one bincount
        code = li * k + codes
        sums = np.bincount(code, weights=ww, minlength=(n_int + 1) * k).reshape(-1, k)
    else:
        sums = np.empty((n_int + 1, k))
        for j in range(k):
            sums[:, j] = np.bincount(li, weights=Y[:, j] * ww, minlength=n_int + 1)
    return sums, cnt


def values_from_leaves(leaf_sums: np.ndarray, leaf_cnt: np.ndarray, depth: int) -> np.ndarray:
    """Node values (Eq. 17) from per-leaf weighted target sums and weights (:func:`leaf_stats`).

    Compiled (numba): a parent's sums are its two children's, its value their ratio, an empty node
    copies its parent's value; the numpy version of these loops cost ~0.4 ms a router step.
    """
    k = leaf_sums.shape[1]
    n_nodes = 2 ** (depth + 1) - 1
    V = np.zeros((n_nodes, k))
    _values_kernel()(
        np.ascontiguousarray(leaf_sums, dtype=np.float64),
        np.ascontiguousarray(leaf_cnt, dtype=np.float64),
        depth,
        V,
    )
    return V


def _values_loops(leaf_sums, leaf_cnt, depth, V):
    k = leaf_sums.shape[1]
    n_int = 2**depth - 1
    n_nodes = 2 * n_int + 1
    sums = np.zeros((n_nodes, k))
    cnt = np.zeros(n_nodes)
    sums[n_int:] = leaf_sums
    cnt[n_int:] = leaf_cnt
    for i in range(n_int - 1, -1, -1):  # parents = sum of their two children
        for j in range(k):
            sums[i, j] = sums[2 * i + 1, j] + sums[2 * i + 2, j]
        cnt[i] = cnt[2 * i + 1] + cnt[2 * i + 2]
    for i in range(n_nodes):  # top down: an empty node copies its parent's value
        if cnt[i] > 0:
            for j in range(k):
                V[i, j] = sums[i, j] / cnt[i]
        elif i > 0:
            for j in range(k):
                V[i, j] = V[(i - 1) // 2, j]


_NUMBA_VALUES = None


def _values_kernel():
    global _NUMBA_VALUES
    if _NUMBA_VALUES is None:
        import numba

        _NUMBA_VALUES = numba.njit(cache=True, nogil=True)(_values_loops)
    return _NUMBA_VALUES


_NUMBA_STEP = None


def _step_kernels():
    """Return the compiled per-step passes over all rows: ``(refresh, gamma_grad)``.

    Compiled with numba (imported lazily; cached on disk), both routing each row with
    :func:`route_paths`'s kernel.
    """
    global _NUMBA_STEP
    if _NUMBA_STEP is None:
        import numba

        route_rows = _route_row()[2]
        values = numba.njit(inline="always", nogil=True)(_values_loops)

        def refresh(Xa, WdT, depth, codes, Y, w, leaf, V):
            n, k = Xa.shape[0], Y.shape[1]
            n_int = WdT.shape[0]
            paths = np.zeros((n, depth + 1), dtype=np.int64)
            sums = np.zeros((n_int + 1, k))
            cnt = np.zeros(n_int + 1)
            route_rows(Xa, WdT, depth, paths, 0, n)
            for r in range(n):  # rows in order: the sums of leaf_stats' bincounts
                leaf[r] = paths[r, depth]
                li = leaf[r] - n_int
                cnt[li] += w[r]
                if codes.size:
                    sums[li, codes[r]] += w[r]
                else:
                    for j in range(k):
                        sums[li, j] += Y[r, j] * w[r]
            values(sums, cnt, depth, V)

        def gamma_grad(Xa, WdT, depth, keep, V, cls, codes, t, w, floor, flip, g):
            n = Xa.shape[0]
            paths = np.zeros((n, depth + 1), dtype=np.int64)
            L = np.zeros(V.shape)  # classification: -log(max(v, floor)) of every node and class
            if cls:
                for i in range(V.shape[0]):
                    for j in range(V.shape[1]):
                        L[i, j] = -np.log(max(V[i, j], floor))
            route_rows(Xa, WdT, depth, paths, 0, n)
            for r in range(n):
                s1 = depth  # first and second stop level (stop_positions)
                for lvl in range(depth):
                    if not keep[paths[r, lvl]]:
                        s1 = lvl
                        break
                s2 = depth
                for lvl in range(s1 + 1, depth):
                    if not keep[paths[r, lvl]]:
                        s2 = lvl
                        break
                c = codes[r] if cls else 0
                f = V[paths[r, s1], c]
                sub = V[paths[r, s2], c]
                if cls:  # loss and d loss / d f as _loss_and_grad
                    lf = L[paths[r, s1], c] * w[r]
                    dl = -w[r] / max(f, floor)
                    lsub = L[paths[r, s2], c] * w[r]
                else:
                    e = f - t[r]
                    lf = e * e * w[r]
                    dl = 2.0 * e * w[r]
                    e = sub - t[r]
                    lsub = e * e * w[r]
                for lvl in range(min(s1 + 1, depth)):  # the levels the row reaches
                    node = paths[r, lvl]
                    if lvl == s1:
                        g[node] += (lsub - lf) if flip else (sub - f) * dl
                        continue
                    v = V[node, c]
                    if flip:
                        if cls:
                            lnode = L[node, c] * w[r]
                        else:
                            e = v - t[r]
                            lnode = e * e * w[r]
                        g[node] += lf - lnode
                    else:
                        g[node] += (f - v) * dl
            for i in range(g.size):
                g[i] = g[i] / n

        _NUMBA_STEP = (
            numba.njit(cache=True, nogil=True)(refresh),
            numba.njit(cache=True, nogil=True)(gamma_grad),
        )
    return _NUMBA_STEP


class RefreshPass:
    """Node values (Eq. 17) of the rows ``Xa`` and each row's leaf, for routers given at each call.

    The rows, targets and weights are converted once (the pass runs after every router step).
    ``pass_(Wd, WdT=None) -> (V, leaf)``; see :func:`refresh_values`.
    """

    def __init__(self, Xa, Y, w, depth: int, codes=None, n_threads: int = 1):
        self.Xa = np.ascontiguousarray(Xa, dtype=np.float32)
        self.Y = np.ascontiguousarray(Y, dtype=np.float64)
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        self.depth, self.n_threads, self.codes_given = depth, n_threads, codes
        self.codes = (
            np.zeros(0, dtype=np.int64) if codes is None else np.asarray(codes, dtype=np.int64)
        )
        self.n_nodes = 2 ** (depth + 1) - 1

    def __call__(self, Wd, WdT=None):
        """Return the node values ``V`` and each row's leaf under the routers ``Wd``."""
        n, D = self.Xa.shape[0], self.depth
        if self.n_threads > 1 and n >= 4096:
            leaf = route_paths(self.Xa, Wd, D, True, self.n_threads)
            return node_values(leaf, self.Y, self.w, D, self.codes_given), leaf
        leaf = np.empty(n, dtype=np.int64)
        V = np.zeros((self.n_nodes, self.Y.shape[1]))
        WdT = router_rows(Wd) if WdT is None else WdT
        _step_kernels()[0](self.Xa, WdT, D, self.codes, self.Y, self.w, leaf, V)
        return V, leaf


def refresh_values(Xa, Wd, Y, w, depth: int, codes=None, n_threads: int = 1, WdT=None):
    """Node values (Eq. 17) of the rows ``Xa`` under the routers ``Wd`` and each row's leaf.

    One compiled pass routes every row and sums it into its leaf; the same numbers as
    ``node_values(route_paths(Xa, Wd, depth, True), Y, w, depth, codes)``, without its
    intermediate arrays (it runs after every router step). From 4,096 rows with ``n_threads > 1``
    the rows are routed in parallel first (same routing, same sums). ``WdT`` may give
    :func:`router_rows` of ``Wd``.
    """
    return RefreshPass(Xa, Y, w, depth, codes, n_threads)(Wd, WdT)


class GammaPass:
    """The gamma gradient (:func:`gamma_gradient`) of the rows ``Xa``.

    For the architecture, values and routers given at each call: the rows, targets and weights are
    converted once. ``pass_(keep, V, Wd, WdT=None) -> g``.
    """

    def __init__(self, Xa, t, w, depth: int, cls: bool, floor: float, flip: bool):
        t = np.asarray(t)
        self.Xa = np.ascontiguousarray(Xa, dtype=np.float32)
        self.codes = t.astype(np.int64) if cls else np.zeros(0, dtype=np.int64)
        self.t = t.astype(np.float64)
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        self.depth, self.cls, self.floor, self.flip = depth, cls, float(floor), flip

    def __call__(self, keep, V, Wd, WdT=None):
        """Return the gamma gradient ``g`` for the architecture ``keep``, values and routers."""
        g = np.zeros(keep.size)
        _step_kernels()[1](
            self.Xa,
            router_rows(Wd) if WdT is None else WdT,
            self.depth,
            np.ascontiguousarray(keep, dtype=np.bool_),
            np.ascontiguousarray(V, dtype=np.float64),
            self.cls,
            self.codes,
            self.t,
            self.w,
            self.floor,
            self.flip,
            g,
        )
        return g


def gamma_gradient(
    Xa, Wd, keep, V, depth: int, t, w, cls: bool, floor: float, flip: bool, WdT=None
):
    """Gradient of the mean validation loss w.r.t. the discrete ``gamma_bar`` (Eq. 15).

    One compiled pass over the rows (see ``_OneStageBase._gamma_grad`` for the two gradients).
    ``t`` holds class codes (``cls``) or the standardised targets; ``floor`` is ``prob_floor``.
    Each row's contributions are added to its path's nodes in the order of ``np.bincount`` over
    the row-major (row, level) paths. ``WdT`` may give :func:`router_rows` of ``Wd``.
    """
    return GammaPass(Xa, t, w, depth, cls, floor, flip)(keep, V, Wd, WdT)


class LeafSums:
    """Running per-leaf statistics of the training rows for ``step_rows="batch"``.

    Holds each row's leaf as last routed and the leaves' weighted target sums and weights; after a
    router step only the minibatch's rows are routed again and moved between leaves, so a step
    costs O(batch) instead of O(training rows). The other rows keep the leaf of their last routing
    (at most one epoch old: every row is in one minibatch an epoch, and :meth:`reset` routes all of
    them).
    """

    def __init__(self, Y, w, depth: int, codes=None):
        self.Y, self.w, self.depth, self.codes = Y, w, depth, codes  # :meth:`reset` routes first

    def reset(self, leaf: np.ndarray) -> None:
        """Exact statistics of every row from their leaves ``leaf`` (n,)."""
        self.leaf = np.array(leaf)
        self.sums, self.cnt = leaf_stats(self.leaf, self.Y, self.w, self.depth, self.codes)

    def move(self, rows: np.ndarray, leaf: np.ndarray) -> None:
        """Rows ``rows`` now reach ``leaf``: move those whose leaf changed."""
        moved = self.leaf[rows] != leaf
        if not moved.any():
            return
        r, new = rows[moved], leaf[moved]
        Y, w, codes = self.Y[r], self.w[r], None if self.codes is None else self.codes[r]
        out_s, out_c = leaf_stats(self.leaf[r], Y, w, self.depth, codes, sign=-1.0)
        in_s, in_c = leaf_stats(new, Y, w, self.depth, codes)
        self.sums += out_s + in_s
        self.cnt += out_c + in_c
        # sums of weights that cancel exactly with unit weights; with other weights a rounding
        # residue could make an empty leaf look reached: below 1e-9 of a row's weight is empty
        self.cnt[np.abs(self.cnt) < 1e-9] = 0.0
        self.leaf[r] = new

    def values(self) -> np.ndarray:
        """Return the node values (Eq. 17) from the running leaf statistics."""
        return values_from_leaves(self.sums, self.cnt, self.depth)


def center_router_biases(W: np.ndarray, Xa: np.ndarray, depth: int) -> np.ndarray:
    """Data-dependent router init: each hyperplane through the median of its node's rows (in place).

    ``W`` (d+1, n_int, 2) holds the two logits' weights per split node, the last row the biases;
    ``Xa`` is ``[x; 1]`` of the training rows. Level by level from the root, the rows are routed
    deterministically with the routers already centred above; for each node the direction
    ``w_0 - w_1`` is kept and the bias difference is set to minus the median of the rows'
    projections on it, so about half of the node's rows go to each side (rows exactly at the median
    go right). The two biases move by opposite halves (their mean is kept). Nodes no row reaches
    keep their biases. One vectorised step per level (sort by node, then projection).
    """
    n, dp1 = Xa.shape
    if n == 0:
        return W
    Xf = Xa[:, : dp1 - 1].astype(np.float64)
    Xa32 = np.asarray(Xa, dtype=np.float32)
    node = np.zeros(n, dtype=np.int64)
    for lvl in range(depth):
        lo, hi = 2**lvl - 1, 2 ** (lvl + 1) - 1
        Wd = W[:, lo:hi, 0] - W[:, lo:hi, 1]  # (d+1, nodes of the level)
        local = node - lo
        proj = np.einsum("ij,ij->i", Xf, Wd[: dp1 - 1, local].T)
        order = np.lexsort((proj, local))
        ps, ls = proj[order], local[order]
        cnt = np.bincount(ls, minlength=hi - lo)
        start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        has = np.flatnonzero(cnt)
        c, s0 = cnt[has], start[has]
        med = 0.5 * (ps[s0 + (c - 1) // 2] + ps[s0 + c // 2])
        ids = lo + has
        bdiff = W[dp1 - 1, ids, 0] - W[dp1 - 1, ids, 1]
        shift = 0.5 * (-med - bdiff)
        W[dp1 - 1, ids, 0] += shift
        W[dp1 - 1, ids, 1] -= shift
        # route on as route_paths does (float32 logit differences, right iff <= 0)
        Wd32 = (W[:, lo:hi, 0] - W[:, lo:hi, 1]).astype(np.float32)
        z = np.einsum("ij,ij->i", Xa32, Wd32[:, local].T)
        node = 2 * node + 1 + (z <= 0)
    return W


def stop_positions(keep_path: np.ndarray):
    """First and second stop level along each path.

    ``keep_path`` (n, depth) is ``gamma_bar`` of the internal node at each level of the path. A row
    stops at the first pruned node (or at depth ``depth``): ``s1``; ``s2`` is where it would stop
    if ``s1`` were a split (used for the gamma gradient of a pruned node; equals ``s1`` when
    ``s1 == depth``).
    """
    n, D = keep_path.shape
    S = np.concatenate([keep_path, np.zeros((n, 1), dtype=bool)], axis=1)
    s1 = np.argmin(S, axis=1)
    lv = np.arange(D + 1)
    T = S | (lv[None, :] <= s1[:, None])
    T[:, D] = False
    s2 = np.argmin(T, axis=1)
    return s1, s2


def reachable(keep: np.ndarray, depth: int) -> np.ndarray:
    """Split nodes (``keep`` = gamma_bar = 1) whose ancestors are all splits, level by level."""
    reach = keep.copy()
    for lvl in range(1, depth):
        ids = np.arange(2**lvl - 1, 2 ** (lvl + 1) - 1)
        reach[ids] &= reach[(ids - 1) // 2]
    return reach


def collapse_neutral_splits(paths: np.ndarray, used: np.ndarray, keep: np.ndarray, depth: int):
    """``keep`` without the splits that cannot change any prediction.

    ``paths`` are the full-depth deterministic paths of the training rows the node values were
    computed from (``used`` marks rows of positive weight). If every such row reaching a reachable
    split ``i`` ends at the same stop node, every node of ``i``'s subtree holds ``i``'s own value
    (the nodes on the way carry the same rows, the others are empty and copy their parent), so
    ``i`` is turned into a leaf without changing ``predict`` or ``predict_proba``. Typical for deep
    trees (Table 7), whose lower routers often receive no training rows on one side and so get no
    gamma gradient at all.
    """
    n_int = keep.size
    reach = reachable(keep, depth)
    p = paths[used]
    s1, _ = stop_positions(keep[p[:, :depth]])
    stop = p[np.arange(len(p)), s1]
    n_stops = (np.bincount(stop, minlength=2 * n_int + 1) > 0).astype(np.int64)
    for lvl in range(depth - 1, -1, -1):  # distinct non-empty stop nodes below each reachable split
        ids = np.arange(2**lvl - 1, 2 ** (lvl + 1) - 1)
        r = ids[reach[ids]]
        n_stops[r] = n_stops[2 * r + 1] + n_stops[2 * r + 2]
    return keep & ~(reach & (n_stops[:n_int] <= 1))


# ----------------------------------------------------------------------------- router step

_NUMBA_BACKWARD = None


def _backward_kernel(Z, noise, V, t, w, mix, depth, cls, floor, tau, y0, SUB, gz):
    B, n_int = Z.shape
    n_nodes = V.shape[0]
    a = np.empty(n_int)
    R = np.empty(n_nodes)
    reach = np.empty(n_int)
    for r in range(B):
        c = int(t[r]) if cls else 0  # the row's class (its column of V) or V's only column
        for i in range(n_int):  # the Gumbel-perturbed logit differences; right iff <= 0
            a[i] = (np.float64(Z[r, i]) + noise[r, i]) / tau
        for i in range(n_int, n_nodes):
            R[i] = V[i, c]
        for lvl in range(depth - 1, -1, -1):  # hard response of every node, bottom up
            for i in range(2**lvl - 1, 2 ** (lvl + 1) - 1):
                sub = R[2 * i + 1 + (1 if a[i] <= 0 else 0)]
                SUB[r, i] = sub
                R[i] = mix[i] * sub + (1.0 - mix[i]) * V[i, c]
        if cls:  # d loss / d f, as _loss_and_grad: clamped log loss or squared error
            dl = -w[r] / max(R[0], floor)
        else:
            dl = 2.0 * (R[0] - t[r]) * w[r]
        dlb = dl / B
        # reach weight along the hard sample (top down) and the logit-difference gradient
        reach[0] = 1.0
        for i in range(n_int):
            right = a[i] <= 0
            if 2 * i + 2 < n_int:
                ri = reach[i] * mix[i]
                reach[2 * i + 1] = ri * (0.0 if right else 1.0)
                reach[2 * i + 2] = ri * (1.0 if right else 0.0)
            diff = R[2 * i + 1] - R[2 * i + 2]
            delta = dlb * reach[i]
            if y0.shape[0]:  # the logistic given (scipy's expit)
                s = y0[r, i] * (1 - y0[r, i]) / tau
            elif reach[i] != 0.0:  # the logistic as scipy's expit, only where it counts
                y = 1.0 / (1.0 + np.exp(-a[i]))
                s = y * (1 - y) / tau
            else:  # delta is a zero: any finite positive factor gives the same zero
                s = 1.0
            gz[r, i] = delta * mix[i] * diff * s
            SUB[r, i] = delta * (SUB[r, i] - V[i, c])  # the gamma gradient's summand


def _logistic_loops(a, out):
    for k in range(a.size):
        out[k] = 1.0 / (1.0 + np.exp(-a[k]))


def router_backward():
    """Return the compiled forward and backward pass of the router step, or None.

    Compiled with numba (imported lazily; cached on disk).
    ``kernel(Z, noise, V, t, w, mix, depth, cls, floor, tau, y0, SUB, gz)`` fills, per row of the
    minibatch, the logit-difference gradients ``gz`` and the gamma-gradient summands ``SUB`` from
    the rows' logit differences ``Z`` (float32) and path noise, with the same floating-point
    operations in the same order as the numpy expressions it replaces (a fit is bit-identical).
    ``y0`` is scipy's ``expit`` of the perturbed logits, or an empty (0, 0) array: then the kernel
    evaluates the logistic itself, only where the gradient reaches (a row's sampled path, not
    all the routers). Whether its logistic is scipy's bit for bit is checked once on 2^16 values
    (:func:`compiled_logistic_exact`); if not, callers pass ``y0``.
    """
    global _NUMBA_BACKWARD
    if _NUMBA_BACKWARD is None:
        import numba

        _NUMBA_BACKWARD = numba.njit(cache=True, nogil=True)(_backward_kernel)
    return _NUMBA_BACKWARD


_LOGISTIC_EXACT = None


def compiled_logistic_exact() -> bool:
    """Whether the compiled ``1 / (1 + exp(-a))`` equals ``scipy.special.expit`` bit for bit.

    Checked on 2^16 values spanning the range of the perturbed logits, once per process.
    """
    global _LOGISTIC_EXACT
    if _LOGISTIC_EXACT is None:
        import numba
        from scipy.special import expit

        rng = np.random.default_rng(0)
        a = np.concatenate([rng.logistic(size=2**15) * 4, rng.standard_normal(2**15) * 40])
        a[:8] = [0.0, -0.0, 1e-300, -1e-300, 700.0, -700.0, 40.0, -40.0]
        out = np.empty_like(a)
        numba.njit(cache=True, nogil=True)(_logistic_loops)(a, out)
        _LOGISTIC_EXACT = bool(np.array_equal(out.view(np.int64), expit(a).view(np.int64)))
    return _LOGISTIC_EXACT


_NUMBA_ADAM = None


#: doubles per vector of the compiled Adam step (one AVX-512 register; two AVX2 ones elsewhere)
_ADAM_LANES = 8


def _adam_intrinsic():
    """Return a numba intrinsic for Adam's moment updates and step, eight lanes at a time.

    ``f(g, m, v, u, (b1, 1 - b1, b2, 1 - b2, lr, c1, c2, eps), n_blocks)``: Adam's moment updates
    (in place) and step ``u`` on the first ``8 * n_blocks`` entries of the flat float64 arrays,
    eight lanes at a time with the scalar loop's operations in its order (lane-wise IEEE multiply,
    add, divide and square root; numba leaves the loop scalar).
    """
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    L = _ADAM_LANES

    @intrinsic
    def adam_lanes(typingctx, g, m, v, u, consts, n_blocks):
        sig = types.void(g, m, v, u, consts, n_blocks)

        def codegen(context, builder, sig, args):
            vec = ir.VectorType(ir.DoubleType(), L)
            ptr = [
                builder.bitcast(
                    context.make_array(sig.args[q])(context, builder, args[q]).data,
                    vec.as_pointer(),
                )
                for q in range(4)
            ]

            def splat(x):
                out = ir.Constant(vec, ir.Undefined)
                for q in range(L):
                    out = builder.insert_element(out, x, ir.Constant(ir.IntType(32), q))
                return out

            b1, omb1, b2, omb2, lr, c1, c2, eps = map(splat, cgutils.unpack_tuple(builder, args[4]))
            sqrt = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vec, [vec]), f"llvm.sqrt.v{L}f64"
            )
            with cgutils.for_range(builder, args[5]) as loop:
                at = [builder.gep(p, [loop.index]) for p in ptr]
                G, M, V = (builder.load(at[q], align=8) for q in range(3))
                mm = builder.fadd(builder.fmul(M, b1), builder.fmul(omb1, G))
                vv = builder.fadd(builder.fmul(V, b2), builder.fmul(omb2, builder.fmul(G, G)))
                builder.store(mm, at[1], align=8)
                builder.store(vv, at[2], align=8)
                den = builder.fadd(builder.call(sqrt, [builder.fdiv(vv, c2)]), eps)
                builder.store(
                    builder.fdiv(builder.fmul(lr, builder.fdiv(mm, c1)), den), at[3], align=8
                )
            return context.get_dummy_value()

        return sig, codegen

    return adam_lanes


def _adam_pair_factory():
    import numba

    lanes = _adam_intrinsic()

    def adam_pair_loops(W, g0, m, v, lr, b1, b2, eps, c1, c2, Wd, WdT):
        A, N = g0.shape
        gf, mf, vf = g0.ravel(), m.ravel(), v.ravel()
        u = np.empty(A * N)
        nb = (A * N) // _ADAM_LANES
        lanes(gf, mf, vf, u, (b1, 1 - b1, b2, 1 - b2, lr, c1, c2, eps), nb)
        for k in range(nb * _ADAM_LANES, A * N):  # the rest: the same operations, scalar
            g = gf[k]
            mm = mf[k] * b1  # the numpy expressions' operations, in their order
            mm = mm + (1 - b1) * g
            vv = vf[k] * b2
            vv = vv + (1 - b2) * (g * g)
            mf[k] = mm
            vf[k] = vv
            u[k] = lr * (mm / c1) / (np.sqrt(vv / c2) + eps)
        for a in range(A):
            for i in range(N):
                W[a, i, 0] -= u[a * N + i]
                W[a, i, 1] += u[a * N + i]
                if Wd.shape[0]:  # the new logit differences, as wdiff and router_rows
                    z = np.float32(W[a, i, 0] - W[a, i, 1])
                    Wd[a, i] = z
                    WdT[i, a] = z

    return numba.njit(cache=True, nogil=True)(adam_pair_loops)


def adam_pair():
    """Return the compiled Adam step of a router pair (numba, lazily; cached on disk).

    ``kernel(W, g0, m, v, lr, b1, b2, eps, 1 - b1**t, 1 - b2**t, Wd, WdT)`` moves the first
    logits by ``-u`` and the second by ``+u``, ``u`` Adam's step from ``g0``, in place, and
    writes the new float32 logit differences into ``Wd`` (d+1, n_int) and ``WdT`` (n_int, d+1)
    unless they are empty.
    """
    global _NUMBA_ADAM
    if _NUMBA_ADAM is None:
        _NUMBA_ADAM = _adam_pair_factory()
    return _NUMBA_ADAM
