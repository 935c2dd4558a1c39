"""Model inspection.

Rendering, rules and feature importances of decision graphs (the model and its JSON are
:mod:`treebench.graph`, re-exported here as the documented entry point).
"""

from treebench.graph import DecisionGraph, GraphEnsemble, apply_transform, export_graph, load_graph

__all__ = ["DecisionGraph", "GraphEnsemble", "apply_transform", "export_graph", "load_graph"]
