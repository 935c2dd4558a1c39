"""Drawing of decision graphs.

Graphviz DOT text, SVG/PNG via ``dot`` or matplotlib, weight images.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

from treebench.errors import TreebenchError
from treebench.graph.model import DecisionGraph, GraphEnsemble
from treebench.inspect.explain import leaf_parts, node_class, oblique_terms, split_text

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
NEUTRAL = "#dddddd"
SOFT_NOTE = "soft routing: right (no) with probability sigmoid(test)"


def dot_binary() -> str | None:
    """Path of Graphviz's ``dot`` program, or ``None``."""
    return shutil.which("dot")


# ----------------------------------------------------------------------------- shared helpers


def visible_nodes(g: DecisionGraph, max_depth: int | None = None):
    """Nodes within ``max_depth`` tests of the root (breadth first) and those cut below them."""
    depth = {g.root: 0}
    frontier = [g.root]
    cut = set()
    while frontier:
        nxt = []
        for i in frontier:
            if g.left[i] < 0:
                continue
            if max_depth is not None and depth[i] >= max_depth:
                cut.add(i)
                continue
            for c in (int(g.left[i]), int(g.right[i])):
                if c not in depth:
                    depth[c] = depth[i] + 1
                    nxt.append(c)
        frontier = nxt
    return depth, cut


#: nodes a readable drawing (``max_depth="auto"``, ``treebench show``'s default) shows, a
#: complete depth-5 tree: larger models are cut at the depth that fits, stated in the picture
READABLE_NODES = 63
#: pixels a matplotlib drawing may take (RGBA: 4 bytes each, plus the PNG encoder's copy);
#: a larger figure is drawn at a lower resolution, down to :data:`MIN_DPI`, else refused
MAX_PIXELS = 60_000_000
DPI, MIN_DPI = 110, 24


def readable_depth(g: DecisionGraph, max_nodes: int = READABLE_NODES) -> int | None:
    """Return the largest depth whose drawing shows at most ``max_nodes`` nodes (at least 1).

    None when the whole graph fits.
    """
    depth, _ = visible_nodes(g)
    if len(depth) <= max_nodes:
        return None
    d = 1
    while len(visible_nodes(g, d + 1)[0]) <= max_nodes:
        d += 1
    return d


def resolve_depth(g: DecisionGraph, max_depth) -> tuple[int | None, str]:
    """Return the depth to draw ``g`` to (None: all) and the line saying what is shown.

    ``max_depth`` ``"auto"`` picks :func:`readable_depth`, None draws everything, an int is the
    user's cap.
    """
    if max_depth == "auto":
        max_depth = readable_depth(g)
    if max_depth is None:
        return None, ""
    shown = len(visible_nodes(g, max_depth)[0])
    n = int(g.reachable().sum())
    if shown >= n:
        return max_depth, ""
    return max_depth, (
        f"drawn to depth {max_depth} of {g.depth()}: {shown:,} of {n:,} nodes "
        "(`treebench show --full` or --max-depth N draws more)"
    )


def edge_flow(g: DecisionGraph, i: int, right: bool) -> float | None:
    """Training samples that go from node ``i`` to its right (or left) child."""
    if g.n_right is not None and g.n_samples is not None:
        return float(g.n_right[i] if right else g.n_samples[i] - g.n_right[i])
    if g.n_samples is not None:
        return float(g.n_samples[int(g.right[i] if right else g.left[i])])
    return None


def node_color(model, g, i) -> tuple[str, float]:
    """(hex colour of the dominant class, purity in [0, 1]) of node ``i``."""
    k = node_class(model, g, i)
    if k is None:
        return NEUTRAL, 0.0
    if g.class_counts is not None and g.class_counts[i].sum() > 0:
        p = g.class_counts[i] / g.class_counts[i].sum()
    else:
        v = np.maximum(g.value[i], 0)
        p = v / v.sum() if v.sum() > 0 else np.zeros_like(v)
    K = len(p)
    purity = float((p.max() - 1.0 / K) / (1 - 1.0 / K)) if K > 1 else 1.0
    return PALETTE[k % len(PALETTE)], max(0.0, min(1.0, purity))


def _blend(hex_color: str, alpha: float) -> str:
    c = np.array([int(hex_color[j : j + 2], 16) for j in (1, 3, 5)], dtype=float)
    mix = 255 - (255 - c) * (0.15 + 0.85 * alpha)
    return "#" + "".join(f"{int(round(v)):02x}" for v in mix)


def node_label(model, g, i, max_terms=3, image=False) -> str:
    """Text of node ``i``.

    Its test (``w.x + b <= 0`` when the weights are drawn as an image) or leaf output, and its
    training statistics.
    """
    n = ""
    if g.n_samples is not None:
        n = f"\nn={int(round(g.n_samples[i]))}"
        if (
            g.class_counts is not None
            and model.task == "classification"
            and g.left[i] >= 0
            and len(model.classes) <= 5
        ):
            n += " [" + ", ".join(f"{c:.0f}" for c in g.class_counts[i]) + "]"
    if g.left[i] < 0:
        head, stats = leaf_parts(model, g, i)
        return f"{head}\n{stats}" if stats else head
    if image and g.oblique:
        b = float(g.bias[i])
        return f"w.x {'-' if b < 0 else '+'} {abs(b):.3g} <= 0" + n
    text = split_text(model, g, i, right=False, max_terms=max_terms)
    if g.oblique:  # one term per line keeps the boxes narrow
        text = text.replace(" + ", "\n+ ").replace(" - ", "\n- ")
    return text + n


def weight_images(model: GraphEnsemble, g: DecisionGraph, out_dir, prefix="w") -> dict[int, Path]:
    """One small PNG per oblique split showing its weights as an image (needs ``image_shape``).

    Red = positive, blue = negative weight (model space, i.e. on the standardised pixels). A sample
    goes to the "no" branch (right) when the weighted sum plus bias is > 0.
    """
    if not g.oblique or model.image_shape is None:
        return {}
    shape = [s for s in model.image_shape if s > 1][-2:]
    if int(np.prod(shape)) != model.n_features:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i in np.flatnonzero((g.left >= 0) & g.reachable()):
        w, _ = oblique_terms(model, g, int(i), raw=False)
        lim = float(np.abs(w).max()) or 1.0
        fig = plt.figure(figsize=(0.9, 0.9), dpi=72)
        ax = fig.add_axes([0, 0, 1, 1])
        ax.imshow(w.reshape(shape), cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        ax.axis("off")
        p = out_dir / f"{prefix}_n{int(i)}.png"
        fig.savefig(p)
        plt.close(fig)
        paths[int(i)] = p
    return paths


# ----------------------------------------------------------------------------- DOT


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(
    model: GraphEnsemble,
    index: int = 0,
    max_depth: int | str | None = None,
    images: dict[int, Path] | None = None,
    max_terms: int = 3,
    name: str = "G",
) -> str:
    """Graphviz DOT text of graph ``index``.

    Nodes coloured by dominant class (shade = purity), edge width proportional to the training
    samples on the edge, shared children drawn once.

    ``images`` maps node ids to PNG files (oblique weights shown as images), referenced relative
    to the DOT file's directory.
    """
    g = model.graphs[index]
    max_depth, cap = resolve_depth(g, max_depth)
    depth, cut = visible_nodes(g, max_depth)
    total = float(g.n_samples[g.root]) if g.n_samples is not None and g.n_samples[g.root] else None
    lines = [
        f"digraph {name} {{",
        '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.25, ranksep=0.35];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.6];',
    ]
    caption = [c for c in (cap, g.soft and SOFT_NOTE) if c]
    if caption:
        lines.append(f'  labelloc="t"; label={_q(chr(10).join(caption))};')
    for i in sorted(depth):
        color, purity = node_color(model, g, i)
        attrs = {
            "label": _q(node_label(model, g, i, max_terms, image=bool(images and i in images))),
            "fillcolor": _q(_blend(color, purity) if color != NEUTRAL else color),
        }
        if g.left[i] < 0:
            attrs["shape"] = "box"
        else:
            attrs["shape"] = "box"
            attrs["style"] = '"filled"'
        if images and i in images:
            attrs["image"] = _q(images[i].name if images[i].is_absolute() else str(images[i]))
            attrs["imagepos"] = _q("tc")
            attrs["labelloc"] = "b"
            attrs["height"] = "1.6"
        lines.append(f"  n{i} [" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "];")
    for i in sorted(depth):
        if g.left[i] < 0:
            continue
        if i in cut:
            lines.append(f'  c{i} [label="...", shape=plaintext, style=""];')
            lines.append(f"  n{i} -> c{i} [style=dashed];")
            continue
        for right, lab in ((False, "yes"), (True, "no")):
            c = int(g.right[i] if right else g.left[i])
            flow = edge_flow(g, i, right)
            pw = 1.0 if flow is None or not total else 0.5 + 7.0 * flow / total
            lines.append(f'  n{i} -> n{c} [label="{lab}", penwidth={pw:.2f}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_dot(dot_path: Path, fmt: str = "svg") -> Path | None:
    """Render a DOT file with Graphviz; ``None`` when Graphviz's ``dot`` is not installed.

    Through the ``graphviz`` Python package when installed, else the ``dot`` program directly.
    """
    exe = dot_binary()
    if exe is None:
        return None
    out = dot_path.with_suffix(f".{fmt}")
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:  # runs dot in the DOT file's folder (relative image paths)
        graphviz.render("dot", fmt, str(dot_path), outfile=str(out))
    else:
        subprocess.run(
            [exe, f"-T{fmt}", str(dot_path.name), "-o", out.name],
            check=True,
            cwd=dot_path.parent,
            capture_output=True,
            timeout=120,
        )
    return out


# ----------------------------------------------------------------------------- matplotlib


def _layout(g: DecisionGraph, depth: dict, cut: set):
    """(x, level) of the visible nodes.

    Terminal nodes left to right in depth-first order, inner nodes above the mean of their children;
    a shared child sits at its longest-path level.
    """
    order = [i for i in g.topo_order() if i in depth]
    level = dict.fromkeys(order, 0)
    for i in order:
        if g.left[i] >= 0 and i not in cut:
            for c in (int(g.left[i]), int(g.right[i])):
                if c in level:
                    level[c] = max(level[c], level[i] + 1)
    x, nxt = {}, [0.0]
    seen = set()

    def visit(i):
        stack = [i]
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            if g.left[j] < 0 or j in cut:
                x[j] = nxt[0]
                nxt[0] += 1.0
            else:
                stack += [int(g.right[j]), int(g.left[j])]

    visit(g.root)
    for i in reversed(order):
        if i not in x:
            kids = [x[c] for c in (int(g.left[i]), int(g.right[i])) if c in x]
            x[i] = float(np.mean(kids)) if kids else nxt[0]
    return x, level


class DrawingTooLarge(ValueError, TreebenchError):
    """A drawing that would not fit :data:`MAX_PIXELS` even at :data:`MIN_DPI`."""


def figure_dpi(width_in: float, height_in: float, n_nodes: int) -> int:
    """Return the resolution a ``width_in`` x ``height_in`` inch figure is drawn at.

    :data:`DPI`, lower when that would pass :data:`MAX_PIXELS`; raises :class:`DrawingTooLarge`
    (naming the fix) when even :data:`MIN_DPI` would.
    """
    area = width_in * height_in
    dpi = min(DPI, int((MAX_PIXELS / area) ** 0.5))
    if dpi < MIN_DPI:
        gb = area * DPI**2 * 4 * 2 / 1e9
        raise DrawingTooLarge(
            f"drawing {n_nodes:,} nodes would take a {width_in * DPI:,.0f} x "
            f"{height_in * DPI:,.0f}-pixel picture (about {gb:,.1f} GB to draw); draw fewer "
            "levels (--max-depth N) or install Graphviz (`dot`), which writes SVG"
        )
    return dpi


def draw_matplotlib(
    model: GraphEnsemble,
    path,
    index: int = 0,
    max_depth: int | str | None = None,
    images: dict[int, Path] | None = None,
    max_terms: int = 3,
    title=None,
):
    """Draw graph ``index`` with matplotlib (no Graphviz needed) to ``path`` (.png or .svg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.offsetbox import AnnotationBbox, OffsetImage

    g = model.graphs[index]
    max_depth, cap = resolve_depth(g, max_depth)
    depth, cut = visible_nodes(g, max_depth)
    x, level = _layout(g, depth, cut)
    n_cols = max(x.values()) + 1 if x else 1
    n_lvls = max(level.values()) + 1 if level else 1
    img_h = 0.9 if images else 0.0
    labels = {
        i: node_label(model, g, i, max_terms, image=bool(images and i in images)) for i in depth
    }
    longest = max((len(ln) for t in labels.values() for ln in t.splitlines()), default=10)
    fig_w = max(5.0, max(1.5, 0.055 * longest + 0.35) * n_cols)
    n_lines = max((t.count("\n") + 1 for t in labels.values()), default=2)
    fig_h = max(2.5, (0.9 + 0.13 * n_lines + img_h) * n_lvls + 0.4)
    dpi = figure_dpi(fig_w, fig_h, len(depth))  # before any drawing: refuse or downsize
    fig, ax = plt.subplots(figsize=(fig_w, fig_h))
    ax.set_xlim(-0.7, n_cols - 0.3)
    ax.set_ylim(-(n_lvls - 0.4), 0.6)
    ax.axis("off")
    total = float(g.n_samples[g.root]) if g.n_samples is not None and g.n_samples[g.root] else None
    for i in depth:
        if g.left[i] < 0:
            continue
        xi, yi = x[i], -level[i]
        if i in cut:
            ax.annotate("...", (xi, yi - 0.55), ha="center", fontsize=9)
            continue
        for right, lab in ((False, "yes"), (True, "no")):
            c = int(g.right[i] if right else g.left[i])
            flow = edge_flow(g, i, right)
            lw = 1.0 if flow is None or not total else 0.4 + 7.0 * flow / total
            xc, yc = x[c], -level[c]
            ax.plot([xi, xc], [yi, yc], color="#555555", lw=lw, zorder=1, solid_capstyle="round")
            ax.text(
                (xi + xc) / 2,
                (yi + yc) / 2,
                lab,
                fontsize=6,
                color="#333333",
                ha="center",
                va="center",
                zorder=2,
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none"},
            )
    for i in depth:
        color, purity = node_color(model, g, i)
        fc = _blend(color, purity) if color != NEUTRAL else color
        label = labels[i]
        ax.text(
            x[i],
            -level[i],
            label,
            ha="center",
            va="center",
            fontsize=6.5,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.3", "fc": fc, "ec": "#333333", "lw": 0.6},
        )
        if images and i in images:
            arr = plt.imread(str(images[i]))
            ab = AnnotationBbox(
                OffsetImage(arr, zoom=0.55), (x[i], -level[i] + 0.42), frameon=False, zorder=4
            )
            ax.add_artist(ab)
    title = "\n".join(t for t in (title, cap) if t)
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return Path(path)


# ----------------------------------------------------------------------------- one call


def render(
    model: GraphEnsemble,
    out_dir,
    name: str = "graph",
    max_graphs: int = 3,
    max_depth: int | str | None = None,
    formats=("svg",),
    engine: str = "auto",
    max_terms: int = 3,
) -> dict:
    """Write ``<name>_<m>.dot`` for the first ``max_graphs`` graphs and draw them.

    ``max_depth``: None draws every node, an int that many levels, ``"auto"`` the levels that
    keep a drawing readable (:func:`readable_depth`; the cut is stated in the picture).
    ``engine="auto"``: Graphviz ``dot`` when installed, else matplotlib (``<name>_<m>.png``);
    ``"dot"`` / ``"matplotlib"`` force one. Oblique splits on image data also get one weight image
    per node under ``<name>_<m>_weights/``. Returns ``{"dot": [...], "images": [...],
    "engine": ..., "hint": str or None}``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    res = {"dot": [], "images": [], "engine": None, "hint": None, "cut": []}
    use_dot = engine == "dot" or (engine == "auto" and dot_binary() is not None)
    if engine == "dot" and dot_binary() is None:
        raise RuntimeError("engine='dot' but Graphviz's dot program is not installed")
    for m in range(min(max_graphs, len(model.graphs))):
        stem = f"{name}_{m}"
        cut = resolve_depth(model.graphs[m], max_depth)[1]
        if cut:
            res["cut"].append(f"graph {m} {cut}")
        imgs = weight_images(model, model.graphs[m], out_dir / f"{stem}_weights", prefix="w")
        rel = {i: p.relative_to(out_dir) for i, p in imgs.items()}
        dot_path = out_dir / f"{stem}.dot"
        dot_path.write_text(to_dot(model, m, max_depth=max_depth, images=rel, max_terms=max_terms))
        res["dot"].append(dot_path)
        if use_dot:
            for fmt in formats:
                res["images"].append(render_dot(dot_path, fmt))
            res["engine"] = "dot"
        else:
            title = f"{model.meta.get('method') or ''} graph {m}"
            res["images"].append(
                draw_matplotlib(
                    model,
                    out_dir / f"{stem}.png",
                    m,
                    max_depth=max_depth,
                    images=imgs,
                    max_terms=max_terms,
                    title=title,
                )
            )
            res["engine"] = "matplotlib"
    if not use_dot:
        res["hint"] = (
            f"Graphviz 'dot' not found; drew PNGs with matplotlib. For Graphviz "
            f"output install it (e.g. apt-get install graphviz) and run "
            f"`dot -Tsvg {name}_0.dot -o {name}_0.svg` in {out_dir}"
        )
    return res


def plot_importances(model: GraphEnsemble, path, top: int = 20):
    """Feature importances as a bar chart (top ``top``), or as a heatmap for image inputs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from treebench.inspect.explain import feature_importances

    imp, names = feature_importances(model)
    shape = [s for s in (model.image_shape or []) if s > 1][-2:]
    if shape and len(imp) == int(np.prod(shape)):
        fig, ax = plt.subplots(figsize=(3, 3))
        im = ax.imshow(imp.reshape(shape), cmap="viridis", interpolation="nearest")
        ax.axis("off")
        fig.colorbar(im, ax=ax, fraction=0.046)
    else:
        order = np.argsort(-imp, kind="stable")[:top][::-1]
        fig, ax = plt.subplots(figsize=(4.5, 0.6 + 0.25 * len(order)))
        ax.barh([names[j] for j in order], imp[order], color="#4c72b0")
        ax.set_xlabel("importance")
    ax.set_title(f"{model.meta.get('method') or 'model'} feature importance", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
