"""Results: the run-key store, the committed ledger, and the tidy table collected from both."""

from treebench.results.ledger import Ledger, LedgerConflict
from treebench.results.store import DONE_STATUSES, JobBusyError, Store, run_key
from treebench.results.table import collect, to_frame

__all__ = [
    "DONE_STATUSES",
    "JobBusyError",
    "Ledger",
    "LedgerConflict",
    "Store",
    "collect",
    "run_key",
    "to_frame",
]
