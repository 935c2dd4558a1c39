"""Model inspection: decision-graph export (JSON), rendering, rules and feature importances."""

from treebench.inspect.export import export_graph
from treebench.inspect.graph import DecisionGraph, GraphEnsemble, apply_transform

__all__ = ["DecisionGraph", "GraphEnsemble", "apply_transform", "export_graph", "load_graph"]


def load_graph(path) -> GraphEnsemble:
    """Load a model saved with :meth:`GraphEnsemble.save` (``.json`` or ``.json.gz``)."""
    return GraphEnsemble.load(path)
