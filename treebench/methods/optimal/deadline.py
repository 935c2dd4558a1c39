"""Run a native solver in a forked child that is killed at a wall-clock deadline.

GOSDT checks its ``time_limit`` only every 10,000 search iterations, so on a large instance it runs
far past it (measured: a 1 s limit stopped after 22 s; see ``docs/methods/gosdt.md``); native code
cannot be interrupted in-process. The child is forked (it inherits the arrays, nothing is serialised
on the way in), its stdout/stderr go to ``/dev/null`` (the solver prints its warnings from C++),
and its result comes back through a pipe as data only (:func:`encode`: JSON, numpy arrays as
``.npy`` bytes read with ``allow_pickle=False``), so nothing the child sends can run code in the
parent. The CPU seconds of the child are counted by the runner's clock (:mod:`treebench.cputime`
counts reaped children).
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import struct
import time
import traceback

import numpy as np

_LEN = struct.Struct("<Q")  # the length of each part of an encoded result


class DeadlineExceeded(Exception):
    """The child did not answer before the deadline and was killed."""


def encode(value) -> bytes:
    """Return ``value`` as bytes: its JSON, then its arrays as ``.npy`` files.

    ``value`` nests JSON types, numpy scalars and arrays of numeric or boolean dtype; in the JSON
    each array is replaced by ``{"__npy__": i}``.

    Raises
    ------
    TypeError
        Something else (an object array, an arbitrary object): it has no data-only form.
    """
    arrays: list[np.ndarray] = []

    def default(obj):
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise TypeError("an object array cannot be sent without pickling")
            arrays.append(obj)
            return {"__npy__": len(arrays) - 1}
        if isinstance(obj, np.generic):
            return obj.item()
        raise TypeError(f"{type(obj).__name__} cannot be sent back from the child as data")

    parts = [json.dumps(value, default=default).encode()]
    for a in arrays:
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        parts.append(buf.getvalue())
    return b"".join(_LEN.pack(len(p)) + p for p in parts)


def decode(payload: bytes):
    """Return the value :func:`encode` wrote (arrays loaded with ``allow_pickle=False``)."""
    parts, pos = [], 0
    while pos < len(payload):
        (n,) = _LEN.unpack_from(payload, pos)
        parts.append(payload[pos + _LEN.size : pos + _LEN.size + n])
        pos += _LEN.size + n
    arrays = [np.load(io.BytesIO(p), allow_pickle=False) for p in parts[1:]]

    def hook(d):
        return arrays[d["__npy__"]] if d.keys() == {"__npy__"} else d

    return json.loads(parts[0], object_hook=hook)


def call_with_deadline(fn, deadline_s: float | None, *args):
    """``fn(*args)`` in a forked child, killed after ``deadline_s`` wall seconds (None: no limit).

    Returns
    -------
    object
        What ``fn`` returned, sent through a pipe as data (:func:`encode`: JSON types and
        numeric numpy arrays; anything else is reported as an error of the child).

    Raises
    ------
    DeadlineExceeded
        The child was killed at the deadline.
    RuntimeError
        ``fn`` raised in the child (its traceback in the message).
    """
    if not hasattr(os, "fork"):  # pragma: no cover - Windows: no hard stop, the solver's own check
        return fn(*args)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            try:
                payload = encode({"status": "ok", "value": fn(*args)})
            except BaseException:  # noqa: BLE001 - reported to the parent
                payload = encode({"status": "error", "value": traceback.format_exc()})
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view) :]
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    end = None if deadline_s is None else time.monotonic() + float(deadline_s)
    killed = done = False
    try:
        while True:
            wait = None if end is None else max(0.0, end - time.monotonic())
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:
                killed = True
                break
            chunk = os.read(r, 1 << 20)
            if not chunk:
                done = True
                break
            chunks.append(chunk)
    finally:  # killed at the deadline, or the parent interrupted: no child is left behind
        os.close(r)
        if not done:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - ended meanwhile
                pass
        os.waitpid(pid, 0)
    if killed:
        raise DeadlineExceeded(f"killed after {deadline_s:.1f} s")
    if not chunks:
        raise RuntimeError("the solver's child process ended without a result")
    res = decode(b"".join(chunks))
    if res["status"] == "error":
        raise RuntimeError(f"the solver failed in its child process:\n{res['value']}")
    return res["value"]
