"""Export entry point: a fitted estimator's decision graph through its own ``to_graph()``.

Each method builds its graph in its own package (``treebench/methods/<method>/export.py``); this
module only calls the protocol and annotates the result with training statistics.
"""

from __future__ import annotations

from treebench.graph.model import GraphEnsemble, NotExportableError

__all__ = ["NotExportableError", "export_graph"]


def export_graph(estimator, X=None, y=None, sample_weight=None) -> GraphEnsemble:
    """Return the decision graph(s) of a fitted estimator (``to_graph()``), annotated with ``X, y``.

    Training statistics (samples per node, class counts, impurity) that the model does not store
    are computed by routing ``X`` (normally the training data) when it is given.
    """
    to_graph = getattr(estimator, "to_graph", None)
    if to_graph is None:
        raise TypeError(f"{type(estimator).__name__} has no to_graph(): it cannot be exported")
    model = to_graph()
    if X is not None:
        model.annotate(X, y, sample_weight)
    return model
