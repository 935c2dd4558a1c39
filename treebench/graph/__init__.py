"""The decision-graph model below the methods: what every method's ``to_graph()`` builds, what
:mod:`treebench.inspect` draws and explains, and its JSON load/save (imports only NumPy)."""

from treebench.graph.export import export_graph
from treebench.graph.model import DecisionGraph, GraphEnsemble, NotExportableError, apply_transform

__all__ = [
    "DecisionGraph",
    "GraphEnsemble",
    "NotExportableError",
    "apply_transform",
    "export_graph",
    "load_graph",
]


def load_graph(path) -> GraphEnsemble:
    """Load a model saved with :meth:`GraphEnsemble.save` (``.json`` or ``.json.gz``)."""
    return GraphEnsemble.load(path)
