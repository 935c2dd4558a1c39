"""The package layering of docs/architecture.md: every module imports only its own or lower layers.

Imports are read with :mod:`ast` (module-level and function-level alike), so a lazy import that
points up a layer fails here as a top-level one would.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: lowest first; a package or top-level module of ``treebench`` (and the Hydra plugins) per layer
LAYERS = {
    "foundation": [
        "__init__",
        *("compiletime", "cputime", "errors", "faults", "files", "gcpause", "lifeline", "metrics"),
        "term",
        "graph",
    ],
    "config and data": ["config", "data", "schema", "suites"],
    "models and records": ["methods", "results"],
    "running": [
        *("api", "catalog", "overrides", "params", "progress", "resources", "runner", "slurm"),
        *("tuning", "warmup"),
    ],
    "reading results": ["bench", "inspect", "report"],
    "interface": ["app", "cli", "hydra_plugins", "launch"],
}
LEVEL = {unit: i for i, units in enumerate(LAYERS.values()) for unit in units}
NAMES = list(LAYERS)


def _unit(module: str) -> str:
    """Return the layer unit of a dotted module name.

    ``treebench.<unit>...`` or ``hydra_plugins``.
    """
    parts = module.split(".")
    if parts[0] == "hydra_plugins":
        return "hydra_plugins"
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> dict[str, Path]:
    out = {}
    for top in ("treebench", "hydra_plugins"):
        for p in sorted((ROOT / top).rglob("*.py")):
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            out[name] = p
    return out


def _imports(module: str, path: Path) -> set[str]:
    """Return the treebench modules ``module`` imports (absolute and relative imports resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package
                for _ in range(node.level - 1):
                    head = head.rpartition(".")[0]
                base = f"{head}.{base}" if base else head
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] in ("treebench", "hydra_plugins")}


def test_every_package_has_a_layer():
    units = {_unit(m) for m in _modules()}
    assert not units - set(LEVEL), f"not in a layer of docs/architecture.md: {units - set(LEVEL)}"


def test_no_module_imports_a_higher_layer():
    up = []
    for module, path in _modules().items():
        src = _unit(module)
        for target in sorted(_imports(module, path)):
            dst = _unit(target)
            if dst in LEVEL and LEVEL[dst] > LEVEL[src]:
                up.append(f"{module} ({NAMES[LEVEL[src]]}) imports {target} ({NAMES[LEVEL[dst]]})")
    assert not up, "imports pointing up a layer:\n" + "\n".join(up)


def test_the_layering_catches_an_arrow_up(tmp_path):
    """The check itself: an import of a higher layer is seen, also inside a function."""
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from treebench.report.tables import summary_table\n")
    (target,) = _imports("treebench.methods.m", p) - {"treebench.report.tables.summary_table"}
    assert LEVEL[_unit(target)] > LEVEL["methods"]


@pytest.mark.parametrize("layer", NAMES)
def test_the_architecture_page_names_each_layer(layer):
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert layer in text
    for unit in LAYERS[layer]:
        if unit != "__init__":
            assert f"`{unit}`" in text, f"docs/architecture.md does not name {unit}"
