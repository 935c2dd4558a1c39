"""Checkpoints of long fits: a method saves its state now and then, a rerun of the run resumes it.

Like :mod:`treebench.methods.progress`, a context variable and no estimator parameter: run keys
and ``get_params`` stay as they are, and outside :func:`checkpointing` :func:`current` is None, so
estimators stay plain scikit-learn estimators. A method that can resume does::

    ck = checkpoint.current()
    state = ck.load(identity) if ck is not None else None
    if state is not None:
        ...  # restore, go on from state["it"]
    while ...:
        ...  # one unit of work (a snapshot chunk, an epoch)
        if ck is not None and ck.due():
            ck.save(make_state(), identity, at={"iterations": it})

``identity`` (a small dict: estimator class, parameters, data fingerprint) is stored beside the
state; a checkpoint whose identity differs is ignored, so a changed method or data never resumes
from a stale state. The runner enables checkpoints per run key (``<store>/_checkpoints/<key>.pt``,
removed once the run's record is written) and records ``resumed`` when a fit resumed.
"""

from __future__ import annotations

import hashlib
import io
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from treebench.files import atomic_write_bytes

#: default seconds between two saves of a fit (config key ``checkpoint_every``)
DEFAULT_EVERY = 120.0

_FORMAT = 1


class Checkpoint:
    """Where a fit saves and finds its state.

    Parameters
    ----------
    path : path-like
        The checkpoint file (written atomically with ``torch.save``).
    every : float
        Seconds between two saves: :meth:`due` is true once that long has passed since the last
        save (or since the checkpoint was made). 0 = at every call.
    spent : callable, optional
        Returns the seconds this attempt has spent so far (``{"cpu_seconds": ..., "wall_seconds":
        ...}``); each save stores them added to :attr:`earlier`, so a run resumed any number of
        times can count what every attempt spent up to its last save.
    """

    def __init__(self, path, every: float = DEFAULT_EVERY, spent=None):
        self.path = Path(path)
        self.every = float(every)
        self._spent = spent
        self._last = time.monotonic()
        #: ``at`` of the state :meth:`load` returned (e.g. ``{"iterations": 400}``), else None
        self.resumed_from: dict | None = None
        #: seconds the earlier attempts spent up to the save :meth:`load` resumed ({} if none)
        self.earlier: dict[str, float] = {}
        #: number of saves made through this object; seconds spent writing them
        self.n_saves, self.save_seconds = 0, 0.0

    def due(self) -> bool:
        """Return True when a save now would respect ``every``."""
        return time.monotonic() - self._last >= self.every

    def save(self, state: dict, identity: dict, at: dict | None = None) -> None:
        """Write ``state`` (tensors, arrays, plain values) atomically, tagged with ``identity``."""
        t0 = time.perf_counter()
        buf = io.BytesIO()
        payload = {"format": _FORMAT, "identity": identity, "at": at or {}, "state": state}
        if self._spent is not None:
            now = self._spent()
            payload["spent"] = {k: self.earlier.get(k, 0.0) + v for k, v in now.items()}
        _dump(payload, buf)
        atomic_write_bytes(self.path, buf.getvalue())
        self._last = time.monotonic()
        self.n_saves += 1
        self.save_seconds += time.perf_counter() - t0

    def load(self, identity: dict, allow: tuple[type, ...] = ()) -> dict | None:
        """Return the saved state when a checkpoint of the same ``identity`` exists, else None.

        The file is read without running code from it: it may hold tensors, numpy arrays and
        plain values, and instances of the classes in ``allow`` (the method's own state
        classes); a file naming any other global is refused with a warning and the fit starts
        over (a torn or foreign file likewise).
        """
        if not self.path.exists():
            return None
        try:
            payload = _load(io.BytesIO(self.path.read_bytes()), allow)
        except Exception as exc:  # a torn, foreign or crafted file: start over, nothing run
            warnings.warn(
                f"checkpoint {self.path} unreadable ({type(exc).__name__}: {exc}); fitting "
                "from the start",
                stacklevel=2,
            )
            return None
        if payload.get("format") != _FORMAT or payload.get("identity") != identity:
            return None
        self.resumed_from = dict(payload.get("at") or {})
        self.earlier = dict(payload.get("spent") or {})
        return payload["state"]

    def clear(self) -> None:
        """Remove the checkpoint file (the run's record is written)."""
        self.path.unlink(missing_ok=True)


def _dump(obj, buf) -> None:
    """``torch.save`` (tensors, generator states), or pickle where torch is not installed."""
    try:
        import torch
    except ImportError:  # numpy-only methods (One-Stage) without the torch extra
        import pickle

        pickle.dump(obj, buf, protocol=pickle.HIGHEST_PROTOCOL)
    else:
        torch.save(obj, buf)


#: the only globals a checkpoint may name besides torch's tensors and plain containers: numpy's
#: array and scalar reconstruction (arrays, RNG states); anything else is refused unexecuted
_ALLOWED = {
    (mod, name)
    for mod in ("numpy._core.multiarray", "numpy.core.multiarray")
    for name in ("scalar", "_reconstruct")
} | {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("builtins", "bytes"),
}


def _dtype_classes() -> list:
    """Numpy's dtype classes (``numpy.dtypes.Float32DType`` ...) but the object one."""
    try:
        from numpy import dtypes
    except ImportError:  # numpy < 1.25 pickles dtypes as numpy.dtype only
        return []
    return [
        c
        for n, c in vars(dtypes).items()
        if n.endswith("DType") and isinstance(c, type) and n != "ObjectDType"
    ]


def _numpy_globals() -> list:
    import numpy as np

    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray
    return [multiarray.scalar, multiarray._reconstruct, np.ndarray, np.dtype, *_dtype_classes()]


def _load(buf, allow: tuple[type, ...] = ()):
    """Return the payload of a checkpoint file, read without running code from it.

    ``torch.load`` with ``weights_only=True`` and numpy's arrays allowed, or (without torch) an
    unpickler that resolves only :data:`_ALLOWED` globals. A file naming anything else raises
    ``UnpicklingError``.
    """
    try:
        import torch
    except ImportError:
        return _SafeUnpickler(buf, allow).load()
    with torch.serialization.safe_globals([*_numpy_globals(), bytes, *allow]):
        return torch.load(buf, weights_only=True)


def _safe_unpickler(allow: tuple[type, ...]):
    import pickle

    own = {(c.__module__, c.__qualname__) for c in allow}

    class SafeUnpickler(pickle.Unpickler):
        def find_class(self, module, name):
            dtype_class = (
                module == "numpy.dtypes" and name.endswith("DType") and "Object" not in name
            )
            if (module, name) not in _ALLOWED | own and not dtype_class:
                raise pickle.UnpicklingError(
                    f"{module}.{name} is not allowed in a checkpoint (only arrays and plain values)"
                )
            return super().find_class(module, name)

    return SafeUnpickler


def _SafeUnpickler(buf, allow: tuple[type, ...] = ()):  # noqa: N802 - pickle imported lazily
    return _safe_unpickler(allow)(buf)


_CURRENT: ContextVar[Checkpoint | None] = ContextVar("treebench_checkpoint", default=None)


def current() -> Checkpoint | None:
    """Return the checkpoint of the fit running in this context, or None (no checkpoints)."""
    return _CURRENT.get()


@contextmanager
def checkpointing(ck: Checkpoint | None) -> Iterator[Checkpoint | None]:
    """Make ``ck`` the :func:`current` checkpoint inside the block (in this thread)."""
    token = _CURRENT.set(ck)
    try:
        yield ck
    finally:
        _CURRENT.reset(token)


def identity(est, *arrays: Any, **extra: Any) -> dict:
    """Return what a checkpoint of ``est``'s fit must match.

    Its class, its parameters (not ``n_jobs`` or ``verbose``, which do not change the fit), the
    :func:`fingerprint` of the data ``arrays`` as fitted, and any ``extra`` facts the fit depends
    on.
    """
    params = est.get_params(deep=False)
    params.pop("n_jobs", None)
    params.pop("verbose", None)
    return {
        "estimator": f"{type(est).__module__}.{type(est).__qualname__}",
        "params": repr(sorted(params.items())),
        "data": fingerprint(*arrays),
        **extra,
    }


def fingerprint(*arrays: Any) -> str:
    """Return a short digest of arrays' shapes, dtypes and bytes.

    It names the data a checkpoint belongs to.
    """
    import numpy as np

    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        if a is None:
            h.update(b"none")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.view(np.uint8).reshape(-1) if a.dtype != object else repr(a.tolist()).encode())
    return h.hexdigest()
