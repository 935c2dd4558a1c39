"""Structure of flat trees and decision graphs: reachability, topological order, depth, compaction.

One node layout everywhere (TnT's graphs, scikit-learn trees, ReDT's soft-label CART, the
inspectable :class:`treebench.graph.model.DecisionGraph`): nodes ``0 .. n-1``, ``left[v] < 0``
marks a leaf, an internal node's children are ``left[v]`` / ``right[v]``; a node may have several
parents (a DAG). Routing samples through such a graph is :mod:`treebench.methods._routing`.
"""

from __future__ import annotations

from collections import deque

import numpy as np


def _i64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


def reachable(left, right, root: int = 0) -> np.ndarray:
    """Boolean mask of the nodes reachable from ``root`` (one vectorised step per level)."""
    left, right = _i64(left), _i64(right)
    seen = np.zeros(len(left), dtype=bool)
    frontier = np.array([root], dtype=np.int64)
    while frontier.size:
        frontier = frontier[~seen[frontier]]
        seen[frontier] = True
        inner = frontier[left[frontier] >= 0]
        frontier = np.unique(np.concatenate([left[inner], right[inner]]))
    return seen


def in_degree(left, right, root: int = 0) -> np.ndarray:
    """Return the number of parents of every node among the reachable ones.

    ``left == right`` counts twice.
    """
    left, right = _i64(left), _i64(right)
    inner = np.flatnonzero(reachable(left, right, root) & (left >= 0))
    return np.bincount(np.concatenate([left[inner], right[inner]]), minlength=len(left))


def topo_order(left, right, root: int = 0) -> np.ndarray:
    """Nodes reachable from ``root``, each after all of its parents (Kahn's algorithm, FIFO).

    The order is breadth-first: a node is queued when its last parent is taken, children left
    before right. TnT numbers its compacted graphs in this order.
    """
    lft, rgt = _i64(left).tolist(), _i64(right).tolist()
    indeg = in_degree(left, right, root).tolist()
    order = []
    q = deque([int(root)])
    while q:
        i = q.popleft()
        order.append(i)
        if lft[i] >= 0:
            for c in (lft[i], rgt[i]):
                indeg[c] -= 1
                if indeg[c] == 0:
                    q.append(c)
    return np.asarray(order, dtype=np.int64)


def node_depths(left, right, root: int = 0) -> np.ndarray:
    """Longest-path depth (number of tests from ``root``) of every node; -1 where unreachable.

    In a tree this is the ordinary depth. Level by level: a node is re-labelled every time a level
    reaches it, so in a DAG it keeps the deepest level, the longest path (the graph is acyclic).
    """
    left, right = _i64(left), _i64(right)
    depth = np.full(len(left), -1, dtype=np.int64)
    frontier = np.array([root], dtype=np.int64)
    d = 0
    while frontier.size:
        depth[frontier] = d
        inner = frontier[left[frontier] >= 0]
        frontier = np.unique(np.concatenate([left[inner], right[inner]]))
        d += 1
    return depth


def dag_depth(left, right, root: int = 0) -> int:
    """Longest root-to-leaf path (number of tests) of a tree or DAG."""
    return int(node_depths(left, right, root).max())


def waves(order, left, right) -> list[list[int]]:
    """Return the nodes of a topological ``order`` grouped by longest-path depth, shallowest first.

    Every wave comes after all waves holding a parent of its nodes; within a wave, nodes keep
    ``order``.
    """
    order = _i64(order)
    if not order.size:
        return []
    depth = node_depths(left, right, int(order[0]))[order]
    return [order[depth == d].tolist() for d in np.unique(depth)]


def compact(feature, threshold, left, right, value, root):
    """Keep only the nodes reachable from ``root``, renumbered in :func:`topo_order` (root = 0).

    Returns ``(feature, threshold, left, right, value)`` as int64 / float64 / int64 / int64 / int64.
    """
    o = topo_order(left, right, root)
    new = np.full(len(left), -1, dtype=np.int64)
    new[o] = np.arange(len(o))
    lft = _i64(left)[o]
    rgt = _i64(right)[o]
    leaf = lft < 0
    lft = np.where(leaf, -1, new[np.maximum(lft, 0)])
    rgt = np.where(leaf, -1, new[np.maximum(rgt, 0)])
    return (
        _i64(feature)[o],
        np.asarray(threshold, dtype=np.float64)[o],
        lft,
        rgt,
        _i64(value)[o],
    )
