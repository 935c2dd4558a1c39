"""The decision-graph model below the methods.

What every method's ``to_graph()`` builds, what :mod:`treebench.inspect` draws and explains, and its
JSON load/save (imports only NumPy).

The names below are looked up on first use: a method importing :mod:`treebench.graph.flat` (a
run's startup) does not load the model.
"""

__all__ = [
    "DecisionGraph",
    "GraphEnsemble",
    "NotExportableError",
    "apply_transform",
    "export_graph",
    "load_graph",
]


def load_graph(path):
    """Load a model saved with :meth:`GraphEnsemble.save` (``.json`` or ``.json.gz``)."""
    from treebench.graph.model import GraphEnsemble

    return GraphEnsemble.load(path)


def __getattr__(name: str):
    """Import the model's classes and ``export_graph`` when first asked for.

    The classes come from :mod:`treebench.graph.model`, ``export_graph`` from
    :mod:`treebench.graph.export`.
    """
    if name == "export_graph":
        from treebench.graph.export import export_graph

        return export_graph
    if name in ("DecisionGraph", "GraphEnsemble", "NotExportableError", "apply_transform"):
        from treebench.graph import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
