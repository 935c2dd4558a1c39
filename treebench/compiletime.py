"""Seconds a block spends starting numba.

Importing it, compiling kernels or loading them from the on-disk cache.

A method's first fit in a process imports numba and compiles (or loads from the cache) its
kernels, seconds that later fits do not pay; the runner records them as ``compile_seconds``
beside ``fit_seconds`` so a table can show the fit without them. numba is imported by the
methods that need it, not here: an import hook times numba's import and then listens to its
compiler-lock events, so a job without numba never imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import time
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # compiler-lock sections open, in any thread
_since = 0.0
_total = 0.0  # seconds during which some thread was in (or waiting for) numba's compiler
_listening = False


def _on_event(ev) -> None:
    global _depth, _since, _total
    with _lock:
        if ev.is_start:
            if _depth == 0:
                _since = time.perf_counter()
            _depth += 1
        elif _depth:
            _depth -= 1
            if _depth == 0:
                _total += time.perf_counter() - _since


def _listen() -> None:
    """Register the listener on numba's compiler-lock event (once)."""
    global _listening
    if _listening:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev):
            _on_event(ev)

        def on_end(self, ev):
            _on_event(ev)

    event.register("numba:compiler_lock", _Listener())
    _listening = True


class _Loader(importlib.abc.Loader):
    """numba's own loader, then the listener."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        global _total
        t0 = time.perf_counter()
        try:
            self.loader.exec_module(module)
        finally:
            with _lock:
                _total += time.perf_counter() - t0
        _listen()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "numba":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Count compile seconds from now on: at once if numba is loaded, else when it is imported."""
    if "numba" in sys.modules:
        _listen()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def seconds() -> float:
    """Compile seconds counted so far in this process (an open section counts up to now)."""
    with _lock:
        return _total + (time.perf_counter() - _since if _depth else 0.0)


class CompileClock:
    """Compile seconds of a block: ``.seconds`` after it ends (see :func:`compile_clock`)."""

    seconds: float = 0.0


@contextmanager
def compile_clock():
    """Measure the block's seconds importing numba and compiling or loading kernels.

    0.0 when it does neither.
    """
    install()
    clock = CompileClock()
    t0 = seconds()
    try:
        yield clock
    finally:
        clock.seconds = seconds() - t0
