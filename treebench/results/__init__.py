"""Results: the run-key store and the tidy table collected from it."""

from treebench.results.store import DONE_STATUSES, JobBusyError, Store, run_key
from treebench.results.table import collect, to_frame

__all__ = ["DONE_STATUSES", "JobBusyError", "Store", "collect", "run_key", "to_frame"]
