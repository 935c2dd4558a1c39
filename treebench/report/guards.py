"""The CI guards ratchet: a regression guard may only be made looser with a stated reason.

A guard file (``treebench/conf/papers/ci.yaml``) holds floors measured from our own runs. Comparing
a new version of it with an older one, a target is *loosened* when the new version lets a result
pass that the old one failed: a lower ``>=`` floor, a wider tolerance (full or reduced profile) or a
moved ``~`` band, ``check: false``, a lower ``require`` or a larger ``margin`` of a relation, a
different selection or metric. A loosened target must carry a new ``lowered: {from: <previous
value>, reason: "..."}`` next to it (``treebench check`` shows it in the row's note); a removed
target is always a violation (keep it with ``check: false`` and a reason instead).

``python -m treebench.report.guards [FILE]`` compares the working tree's file with its previous
committed version (:func:`previous_version`) and exits 1 on a violation.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

from treebench.report.targets import SIZE_FIELDS, Target, load_paper

_EPS = 1e-12
#: a relation's op made stricter (the only op changes that do not loosen it)
_STRICTER = {(">=", ">"), ("<=", "<")}


def guard_file(conf_dir: str | Path | None = None) -> Path:
    """Return the CI guard file, ``<conf>/papers/ci.yaml``."""
    from treebench.report.targets import papers_dir

    return papers_dir(conf_dir) / "ci.yaml"


def _band(t: Target) -> tuple[float, bool, float, bool]:
    """Return the passing interval of a value target, ``(lo, lo_closed, hi, hi_closed)``.

    In record units.

    Mirrors :func:`treebench.report.checks.check_value` (:meth:`Target.tolerance_abs`).
    """
    tol = t.tolerance_abs()
    lo, hi = t.value - tol, t.value + tol
    if t.op == "~":
        return lo, True, hi, True
    if t.op in (">=", ">"):
        return lo, t.op == ">=", math.inf, False
    return -math.inf, False, hi, t.op == "<="


def _wider(new: tuple, old: tuple) -> bool:
    """Whether interval ``new`` holds a point ``old`` does not."""
    (nlo, nlc, nhi, nhc), (olo, olc, ohi, ohc) = new, old
    below = nlo < olo - _EPS or (abs(nlo - olo) <= _EPS and nlc and not olc)
    above = nhi > ohi + _EPS or (abs(nhi - ohi) <= _EPS and nhc and not ohc)
    return below or above


def loosening(old: Target, new: Target) -> str:
    """How ``new`` passes more than ``old`` (a short phrase), or ``""`` when it does not.

    Parameters
    ----------
    old, new : Target
        Two versions of one target (same id).

    Returns
    -------
    str
        E.g. ``"floor 0.799 -> 0.769 (full profile)"``; empty when ``new`` is as strict or stricter.
    """
    if old.check and not new.check:
        return "no longer checked (check: false)"
    if new.fixed and not old.fixed:
        return f"now set by config, shown as info ({new.fixed})"
    if not new.check:
        return ""
    if old.kind != new.kind or old.metric != new.metric:
        return f"now a {new.kind} target on {new.metric} (was a {old.kind} target on {old.metric})"
    if new.kind == "value":
        same = (old.select, old.best_over, old.best, old.nearest) == (
            new.select,
            new.best_over,
            new.best,
            new.nearest,
        )
        if not same:
            return f"selects other rows ({new.select.label()}, was {old.select.label()})"
        if new.profile != old.profile or (new.runs or 0) < (old.runs or 0):
            return f"protocol profile {old.profile} -> {new.profile}, runs {old.runs} -> {new.runs}"
        a, b = _band(old), _band(new)
        if _wider(b, a):
            return f"passes {_fmt(b)}, was {_fmt(a)}"
        return ""
    if new.kind == "relation":
        if (old.lhs, old.rhs, old.rhs_value, old.per) != (new.lhs, new.rhs, new.rhs_value, new.per):
            return "compares other selections"
        if old.op != new.op and (old.op, new.op) not in _STRICTER:
            return f"op {old.op} -> {new.op}"
        if new.require < old.require - _EPS:
            return f"require {old.require:g} -> {new.require:g}"
        if new.margin > old.margin + _EPS:
            return f"margin {old.margin:g} -> {new.margin:g}"
        return ""
    fields = ("test", "groups", "lhs", "rhs", "alpha", "expect", "per")
    changed = [f for f in fields if getattr(old, f) != getattr(new, f)]
    return f"changed {', '.join(changed)}" if changed else ""


def _fmt(band: tuple) -> str:
    lo, lc, hi, hc = band
    if hi == math.inf:
        return f"{'>=' if lc else '>'} {lo:.4g}"
    if lo == -math.inf:
        return f"{'<=' if hc else '<'} {hi:.4g}"
    return f"[{lo:.4g}, {hi:.4g}]"


def _legacy(text: str) -> str:
    """Return an older guard file in today's schema.

    ``tolerance_reduced`` (a looser band for reduced runs, equal to ``tolerance`` in every CI guard)
    no longer exists, so it is dropped.
    """
    text = re.sub(r",\s*tolerance_reduced:\s*[-0-9.e]+", "", text)
    return re.sub(r"(?m)^\s*tolerance_reduced:.*\n", "", text)


def ratchet_violations(old_text: str, new_text: str, path: str | Path = "ci.yaml") -> list[str]:
    """Targets of ``new_text`` that are looser than in ``old_text`` without a new stated reason.

    Parameters
    ----------
    old_text, new_text : str
        Two versions of a guard file (YAML text).
    path : str or Path
        File name used in messages.

    Returns
    -------
    list of str
        One message per violation (empty: the new version only tightens, adds, or states why).

    Notes
    -----
    A loosening is accepted when the new target carries a ``lowered`` annotation that differs from
    the old one (a reason written for this change, not one left from an earlier lowering) and, if
    its ``from`` is given while the value moved, ``from`` is the previous value.
    """
    old = {t.id: t for t in load_paper(path, text=_legacy(old_text)).targets}
    new = {t.id: t for t in load_paper(path, text=new_text).targets}
    out = []
    for tid, o in old.items():
        n = new.get(tid)
        if n is None:
            if o.check and not _is_size_of_removed_entry(tid, old, new):
                out.append(
                    f"{tid}: removed (keep it with check: false and lowered: {{reason: ...}})"
                )
            continue
        how = loosening(o, n)
        if not how:
            continue
        if not n.lowered:
            out.append(f"{tid}: loosened without a reason: {how}; add lowered: {{from, reason}}")
        elif n.lowered == o.lowered:
            out.append(
                f"{tid}: loosened again ({how}) but 'lowered' is unchanged; state this reason"
            )
        elif (
            "from" in n.lowered
            and not _is_size_part(tid, new)
            and n.paper_value != o.paper_value
            and abs(n.lowered["from"] - o.paper_value) > _EPS
        ):
            out.append(
                f"{tid}: lowered.from is {n.lowered['from']:g} but the previous value was "
                f"{o.paper_value:g}"
            )
    return out


def _is_size_part(tid: str, targets: dict) -> bool:
    """Whether ``tid`` is the size part (``<id>/n_splits``) of a value entry with a metric."""
    base, _, last = tid.rpartition("/")
    return last in SIZE_FIELDS and targets[tid].metric == last and base in targets


def _is_size_of_removed_entry(tid: str, old: dict, new: dict) -> bool:
    """Return a size target whose whole entry went: reported once, on the entry."""
    return _is_size_part(tid, old) and tid.rpartition("/")[0] not in new


def _git(root: Path, *args: str) -> str | None:
    try:
        res = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def previous_version(path: str | Path) -> tuple[str | None, str]:
    """Return the committed version of ``path`` the working tree's file is compared with.

    Parameters
    ----------
    path : str or Path
        A file in a git work tree.

    Returns
    -------
    text : str or None
        ``HEAD``'s version when the working tree's file differs from it, else the version before the
        last commit that touched the file; ``None`` when there is none (no git, not tracked, the
        file was added by that commit, or a shallow clone without the parent).
    why : str
        Which version ``text`` is (e.g. ``"HEAD"``, ``"3fc3067~1"``), or why there is none.
    """
    path = Path(path).resolve()
    root_out = _git(path.parent, "rev-parse", "--show-toplevel")
    if root_out is None:
        return None, "not in a git work tree (or git is not installed)"
    root = Path(root_out.strip())
    rel = path.relative_to(root).as_posix()
    if _git(root, "ls-files", "--error-unmatch", rel) is None:
        return None, f"{rel} is not tracked by git"
    if _git(root, "diff", "--quiet", "HEAD", "--", rel) is None:  # exit 1: differs from HEAD
        text = _git(root, "show", f"HEAD:{rel}")
        return (text, "HEAD") if text is not None else (None, f"HEAD has no {rel}")
    last = (_git(root, "log", "-n", "1", "--format=%h", "--", rel) or "").strip()
    if not last:
        return None, f"no commit touches {rel}"
    text = _git(root, "show", f"{last}~1:{rel}")
    if text is None:
        return None, f"{last}~1 has no {rel} (file added there, or a shallow clone)"
    return text, f"{last}~1"


def check_ratchet(path: str | Path | None = None) -> tuple[list[str] | None, str]:
    """Compare the guard file in the working tree with its previous committed version.

    Parameters
    ----------
    path : str or Path, optional
        The guard file; default :func:`guard_file`.

    Returns
    -------
    violations : list of str or None
        ``None`` when there is no previous version to compare with.
    against : str
        The version compared with (see :func:`previous_version`), or why there is none.
    """
    path = Path(path) if path is not None else guard_file()
    old, against = previous_version(path)
    if old is None:
        return None, against
    return ratchet_violations(old, path.read_text(), path), against


def main(argv: list[str] | None = None) -> int:
    """``python -m treebench.report.guards [FILE]``: exit 1 when a guard was loosened silently."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else guard_file()
    violations, against = check_ratchet(path)
    if violations is None:
        print(f"{path}: nothing to compare with: {against}")
        return 0
    for v in violations:
        print(f"{path}: {v}")
    print(f"{path} vs {against}: {len(violations)} loosened guard(s) without a reason")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
