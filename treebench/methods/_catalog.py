"""Which methods exist and for which tasks, without importing them.

The registrations' source index (:mod:`treebench.methods._index`), and the registry's word
(:mod:`treebench.methods.base`) only where the source cannot tell. ``treebench list`` and ``run``'s
name checks read it.
"""

from __future__ import annotations

import importlib

from treebench.methods._index import TASKS, scan


def method_names() -> list[str]:
    """Return the sorted names of every method the packages register, read from the source.

    As :func:`~treebench.methods.base.available_methods` gives them, importing only modules whose
    registrations the source does not resolve.
    """
    index = scan()
    if index.opaque:
        from treebench.methods.base import available_methods

        return available_methods()
    return sorted(index.tasks)


def method_tasks(name: str) -> tuple[str, ...]:
    """Return the tasks ``name`` is registered for, read from the source (``treebench list``).

    Raises
    ------
    KeyError
        When no method package registers ``name``.
    """
    index = scan()
    if name not in index.tasks and index.opaque:  # only importing them tells: the registry's word
        from treebench.methods.base import get_entry

        for module in index.opaque:
            importlib.import_module(module)
        return get_entry(name).tasks
    found = index.tasks[name]
    return tuple(t for t in TASKS if t in found)
