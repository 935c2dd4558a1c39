"""File permissions and writable directories: records and caches readable by the user's group."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from treebench.errors import TreebenchError


def path_part(name) -> str:
    """``name`` made one safe path component (no separator, no ``..``, no leading dot).

    A dataset or method name that becomes a directory or file name stays inside its directory.
    """
    out = re.sub(r"[^A-Za-z0-9._+=-]", "_", str(name)).lstrip(".")
    return out or "_"


def current_umask() -> int:
    """Return the process umask.

    Read from ``/proc`` when possible: setting it to read it is not thread-safe.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Give a file made by :func:`tempfile.mkstemp` (mode 0600) the mode a plain ``open`` would.

    That is ``0o666 & ~umask``: with the usual umask 022 everyone can read the file, with 002 the
    group can also write it (a group-shared store on a cluster filesystem).
    """
    os.chmod(path, 0o666 & ~current_umask())


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically.

    A temp file beside it, fsync, umask mode, ``os.replace``.

    A reader sees the old file or the new one, never a part; the temp file is dot-named
    (``.tmp-*``), so globs of the directory's records skip it.
    """
    from treebench.faults import temp_prefix

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix(), suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        apply_umask(tmp)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def unwritable_reason(path: str | os.PathLike) -> str | None:
    """Why a directory cannot be created or written to, or None when it can.

    Nothing is left behind: the nearest existing ancestor of ``path`` must be a directory in which
    this user can create an entry (tried with an empty directory, removed at once).
    """
    p = Path(path).expanduser().absolute()
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable by this user"
    try:  # root passes access(), yet a read-only mount or /proc refuses: try, leaving nothing
        os.rmdir(tempfile.mkdtemp(dir=probe, prefix=".treebench-probe-"))
    except OSError as exc:
        return f"{probe} refuses new entries: {exc.strerror or exc}"
    return None


class OutputsError(OSError, TreebenchError):
    """The outputs (or store) directory cannot be written; the message says what to set."""


def check_outputs(path: str | os.PathLike, what: str = "outputs directory") -> None:
    """Raise :class:`OutputsError` with a one-paragraph explanation if ``path`` is not writable.

    Parameters
    ----------
    path : path-like
        The directory treebench writes records, logs and sweep summaries to.
    what : str
        How to name it in the message (``outputs directory``, ``store``).
    """
    reason = unwritable_reason(path)
    if reason is None:
        return
    raise OutputsError(
        f"Cannot write the {what} {Path(path).expanduser()} ({reason}). treebench keeps its "
        "records, run logs and sweep summaries there. Set TREEBENCH_OUTPUTS to a directory you can "
        "write (e.g. `export TREEBENCH_OUTPUTS=$HOME/treebench-outputs`), or pass "
        "paths.outputs=<dir> (paths.store=<dir> for the store alone) on the command line."
    )
