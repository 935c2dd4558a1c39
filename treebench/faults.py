"""Faults of the environment that end a sweep in one line.

A full disk or quota, no permission, a read-only filesystem (on the outputs, the store or a cache),
and SIGTERM; and the cleanup of the temporary files a killed process leaves.

A :class:`SweepStopped` is a BaseException, like KeyboardInterrupt: the runner's per-fold
``except Exception`` does not record it as the method's failure, Hydra's job wrapper does not turn
it into a traceback, and it crosses joblib's workers to ``treebench run``, which prints its one line
with the records kept and exits with :attr:`SweepStopped.exit_code`.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from pathlib import Path

#: errno -> (what happened, how to fix it)
_FIXES = {
    errno.ENOSPC: (
        "no space left on the device",
        "free space there, or set paths.outputs=<dir> (paths.store=<dir> for the store) on "
        "another filesystem",
    ),
    errno.EDQUOT: (
        "disk quota exceeded",
        "free space in your quota, or set paths.outputs=<dir> on another filesystem",
    ),
    errno.EACCES: (
        "permission denied",
        "make it writable for this user (chmod/chgrp), or set paths.outputs=<dir>",
    ),
    errno.EPERM: (
        "operation not permitted",
        "make it writable for this user (chmod/chgrp), or set paths.outputs=<dir>",
    ),
    errno.EROFS: (
        "read-only file system",
        "set paths.outputs=<dir> (paths.store=<dir>) on a writable filesystem",
    ),
}


class SweepStopped(BaseException):  # noqa: N818 - an end of the sweep, like KeyboardInterrupt
    """The sweep ends here; the message says why and what to do (records written so far stay)."""

    exit_code = 1


class EnvironmentFault(SweepStopped):
    """A write refused by the environment (full disk, quota, permission, read-only filesystem)."""

    exit_code = 3


class Terminated(SweepStopped):
    """SIGTERM: the sweep stops as at Ctrl-C."""

    exit_code = 128 + signal.SIGTERM


def env_fault(
    exc: BaseException, where: str | os.PathLike | None = None
) -> EnvironmentFault | None:
    """Return the :class:`EnvironmentFault` an ``OSError`` of the environment amounts to, else None.

    The message names the path (``where``, else the error's own file name) and the fix.
    """
    if isinstance(exc, EnvironmentFault):
        return exc
    if not isinstance(exc, OSError) or exc.errno not in _FIXES:
        return None
    what, fix = _FIXES[exc.errno]
    path = where or exc.filename or "?"
    return EnvironmentFault(f"cannot write {path}: {what}; {fix}")


def raise_env_fault(exc: BaseException, where: str | os.PathLike | None = None) -> None:
    """Raise :func:`env_fault` of ``exc`` (from None) when it is one; return otherwise."""
    fault = env_fault(exc, where)
    if fault is not None:
        raise fault from None


def terminate_on_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread (a no-op elsewhere)."""

    def handler(signum, frame):
        raise Terminated("terminated")

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        pass


# ----------------------------------------------------------------------------- temporary files

_HOST = socket.gethostname().split(".")[0].replace("-", "_")
#: a temporary file of another host (or of the format before pids) older than this is stale
STALE_AFTER_S = 3600.0


def temp_prefix() -> str:
    """Return ``.tmp-<host>-<pid>-``, the prefix of this process's temporary files.

    With it a later run can tell a dead process's leftovers (:func:`clean_stale_temps`) from a
    write in flight.
    """
    return f".tmp-{_HOST}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _stale(p: Path, now: float) -> bool:
    parts = p.name.split("-", 3)  # [".tmp", host, pid, random part]
    if len(parts) == 4 and parts[1] == _HOST and parts[2].isdigit():
        return int(parts[2]) != os.getpid() and not _alive(int(parts[2]))
    try:
        return now - p.stat().st_mtime > STALE_AFTER_S
    except OSError:
        return False


def clean_stale_temps(root: str | os.PathLike) -> int:
    """Remove the ``.tmp-*`` files a killed process left in a store (``<root>/*/``, ``<root>``).

    Those of a dead process of this host, and any older than :data:`STALE_AFTER_S`. Returns how many
    were removed (a file that cannot be removed is left).
    """
    root = Path(root)
    if not root.is_dir():
        return 0
    now, n = time.time(), 0
    for p in [*root.glob(".tmp-*"), *root.glob("*/.tmp-*")]:
        if _stale(p, now):
            try:
                p.unlink()
                n += 1
            except OSError:
                continue
    return n
