"""Which records a command reads: the user's own store first, the committed ledger when asked.

Listings (``status``, ``collect``, ``report``) show the local store and summarise the ledger in a
line; the ledger joins them with ``--ledger`` or when one ``--experiment`` is asked for. Verdicts
(``check``, ``report --experiment`` of a paper experiment) read the ledger's records, so local
runs (a demo, a ``profile=reduced`` try) never move a committed verdict; ``--with-store`` adds the
local store, and without a ledger (``TREEBENCH_LEDGER=off``, ``--no-ledger``) the store is all
there is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from treebench.results.ledger import Ledger, experiment_of


@dataclass(frozen=True)
class Scope:
    """The sources a command reads.

    ``store_dir`` (None: not read) and ``ledger`` (None: not read), with ``label`` naming them for a
    title ("store", "ledger", "ledger + store").
    """

    store_dir: Path | None
    ledger: Ledger | None

    @property
    def label(self) -> str:
        """Return the sources' names for a title."""
        parts = (["ledger"] if self.ledger is not None else []) + (
            ["store"] if self.store_dir is not None else []
        )
        return " + ".join(parts) or "nothing"


def listing_scope(
    store_dir: str | os.PathLike,
    ledger: Ledger | None,
    use_ledger: bool | None = None,
    experiment: str | None = None,
) -> Scope:
    """Return what a listing reads.

    The store, plus the ledger when ``use_ledger`` (None: when one ``experiment`` is asked for).
    """
    use = (experiment is not None) if use_ledger is None else use_ledger
    return Scope(Path(store_dir), ledger if use else None)


def verdict_scope(
    store_dir: str | os.PathLike, ledger: Ledger | None, with_store: bool = False
) -> Scope:
    """Return what a comparison with paper targets reads.

    The ledger; the store too with ``with_store``; the store alone when there is no ledger.
    """
    if ledger is None:
        return Scope(Path(store_dir), None)
    return Scope(Path(store_dir) if with_store else None, ledger)


def ledger_note(ledger: Ledger | None, command: str, experiment: str | None = None) -> str | None:
    """One line on the committed ledger a listing left out: its size and how to see it."""
    if ledger is None:
        return None
    files = ledger.files()
    if not files:
        return None
    exps = sorted({experiment_of(p) for p in files})
    if experiment is not None:
        return (
            f"the committed ledger is not shown ({len(ledger):,} records); "
            f"`treebench {command} --experiment {experiment} --ledger` adds it"
        )
    return (
        f"committed ledger: {len(ledger):,} records of {len(exps)} experiments, not shown "
        f"(`treebench {command} --ledger` adds them, `--experiment NAME` one of them, e.g. "
        f"{exps[0]})"
    )


def local_keys(store_dir: str | os.PathLike, experiment: str, compared) -> set[str]:
    """Return the run keys of the store's done records that would join the ``compared`` frame.

    Join, or replace a record of, the frame of ``experiment``.
    """
    from treebench.results.table import DONE_STATUSES, records_frame

    df = records_frame(store_dir, None) if Path(store_dir).is_dir() else None
    if df is None or df.empty:
        return set()
    theirs = set(compared["key"]) if len(compared) else set()
    mine = (df["experiment"] == experiment) | df["key"].isin(theirs)
    return set(df.loc[mine & df["status"].isin(DONE_STATUSES), "key"])


def unread_local_note(
    scope: Scope, store_dir: str | os.PathLike, experiment: str, compared, command: str
) -> str | None:
    """One line on the store's records a verdict left out (``scope`` without the store)."""
    if scope.store_dir is not None or scope.ledger is None:
        return None
    n = len(local_keys(store_dir, experiment, compared))
    if not n:
        return None
    return (
        f"{n} local record(s) of the store not compared (verdicts read the committed ledger): "
        f"`treebench {command} --with-store` adds them"
    )
