"""Tree in Tree (TnT) decision graphs, their bagging / AdaBoost ensembles and the NDG baseline."""

from treebench.methods.tnt.estimator import (
    NDGClassifier,
    TnTAdaBoostClassifier,
    TnTBaggingClassifier,
    TnTClassifier,
)
from treebench.methods.tnt.graph import graph_predict_nodes

__all__ = [
    "NDGClassifier",
    "TnTAdaBoostClassifier",
    "TnTBaggingClassifier",
    "TnTClassifier",
    "graph_predict_nodes",
]
