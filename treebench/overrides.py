"""Command-line overrides checked and normalised before Hydra sees them.

``~`` in a value, and a ``+key=`` that would add a top-level key treebench never reads (a typo such
as ``+treads=1``).
"""

from __future__ import annotations

import dataclasses
import os
import re

from treebench.errors import TreebenchError

_VALUE_HOME = re.compile(r"^(\+{0,2}[A-Za-z_][\w.]*=)~(/.*)?$")
_NEW_TOP = re.compile(r"^\+{1,2}([A-Za-z_]\w*)(?:[.=]|$)")


class OverrideError(ValueError, TreebenchError):
    """An override that would be ignored or misread, naming the fix."""


def expand_home(args: list[str]) -> list[str]:
    """``key=~/x`` -> ``key=$HOME/x``.

    The shell leaves a ``~`` after ``key=`` alone (a dotted key is not a shell variable) and Hydra's
    grammar rejects it.
    """
    out = []
    for a in args:
        m = _VALUE_HOME.match(a)
        out.append(m.group(1) + os.path.expanduser("~" + (m.group(2) or "")) if m else a)
    return out


def top_level_keys() -> set[str]:
    """Return the names an override may add at the config's root.

    The schema's keys, the config groups (``+experiment=...``) and ``hydra``.
    """
    from pathlib import Path

    from treebench.config import CONF_DIR
    from treebench.schema import TreebenchConf

    groups = {p.name for p in Path(CONF_DIR).iterdir() if p.is_dir() and p.name != "papers"}
    return {f.name for f in dataclasses.fields(TreebenchConf)} | groups | {"hydra"}


def check_new_keys(args: list[str]) -> None:
    """Refuse ``+name=...`` / ``++name...`` for a top-level ``name`` treebench does not know.

    It would be added to the config and silently ignored.
    """
    from treebench.methods.base import suggest

    known = top_level_keys()
    for a in args:
        m = _NEW_TOP.match(a)
        if m and m.group(1) not in known:
            name = m.group(1)
            raise OverrideError(
                f"{a!r} adds a top-level key {name!r} that treebench never reads, so it would be "
                f"ignored.{suggest(name, sorted(known))} Top-level keys: {', '.join(sorted(known))}"
            )
