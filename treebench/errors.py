"""The base class of treebench's errors, so that a caller can catch them all at once."""


class TreebenchError(Exception):
    """Base of every error treebench raises on bad input or state (a config, a record, a file).

    Each error also keeps its built-in base (``ValueError``, ``KeyError``, ``OSError`` …), so code
    catching that goes on working. Stops of a sweep (:class:`treebench.faults.SweepStopped`, a
    SLURM time limit) are not errors and do not derive from it.
    """
