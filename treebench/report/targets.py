"""Paper targets as data: ``treebench/conf/papers/<paper>.yaml`` loaded and validated.

A paper file holds

* ``paper``, ``title``, ``units`` (``percent`` or ``fraction``: how the file writes rates such as
  accuracy; percent values are divided by 100 on load so they compare with the records' fractions),
* ``defaults`` for every target (``metric``, ``tolerance``, ``tolerance_sd``, ``rtol``, ``runs``,
  ``profile`` ...): the tolerances are the ones the method's issue set, never widened for a run
  that made fewer seeds or a reduced profile -- such a number is shown as ``info`` with what it
  lacked ("reduced: 3 of 10 runs"), never as a pass;
  a metric is a record column or one derived from them (``treebench.report.select.DERIVED``, e.g.
  ``test_error``, or ``test_score`` = accuracy on classification rows and R² on regression rows),
* ``unavailable``: dataset → why it cannot be run (e.g. not in the data mirror),
* ``experiments``: per experiment name, the report layout (``tables``, ``figures``, ``stats``),
* ``targets``: a list of numbers (``kind: value``, the default), claims comparing two selections
  (``kind: relation``) and significance claims (``kind: stat``). A relation compares per block
  (``per``, default per dataset; ``per: []`` = one block, the mean over all selected rows); its
  ``rhs`` may be a number (a constant in record units, e.g. 0.4 for 40 % of nodes pruned).

A *selector* picks result rows: ``method``, optional ``dataset``, ``where`` (column → value, e.g.
``param.teacher: rf``; a list value means "any of"), ``profile`` and ``largest`` (a column, e.g.
``n_estimators``: keep only the rows with its largest value in each block, so that runs of
different sizes are not averaged together) and ``best_over`` (columns, e.g. ``[n_estimators,
max_depth]``, with ``best: min|max`` and optional ``best_by``, default the target's metric: keep only
the rows of the configuration with the best mean ``best_by`` in each block, as a paper that reports
the best of a grid does). Nothing here knows a method's or
a dataset's name: everything is data.

Any target may carry ``lowered: {from: <previous value>, reason: "..."}``: why a regression guard was
made looser (``treebench.report.guards`` refuses a loosened guard without one); ``check`` shows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

KINDS = ("value", "relation", "stat")
OPS = ("~", ">=", "<=", ">", "<")
UNITS = ("percent", "fraction", "count", "seconds")
PROFILES = ("full", "reduced")
STAT_TESTS = ("friedman", "nemenyi", "wilcoxon")
#: size fields a value target may carry next to its metric (paper "#S", "nodes", ...)
SIZE_FIELDS = (
    "n_splits",
    "n_leaves",
    "n_nodes",
    "n_trees",
    "depth",
    "mean_depth",
    "split_evals",
    "n_splits_per_tree",
)


class TargetError(ValueError):
    """A paper target file is malformed; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Selector:
    """Which result rows a number refers to."""

    method: str
    dataset: str | None = None
    where: dict = field(default_factory=dict)
    experiment: str | None = None
    largest: str | None = None  # column: keep the rows with its largest value (per block)
    best_over: tuple = ()  # columns: keep the rows of the config with the best mean (per block)
    best_by: str | None = None  # the column that mean is of
    best: str = "min"  # "min" or "max" of that mean

    def label(self) -> str:
        """Human name: the method plus its ``where`` values, e.g. ``redt[teacher=rf]``."""
        parts = [f"{k.split('.', 1)[-1]}={_fmt_where(v)}" for k, v in sorted(self.where.items())]
        if self.largest:
            parts.append(f"largest {self.largest.split('.', 1)[-1]}")
        if self.best_over:
            cols = "/".join(c.split(".", 1)[-1] for c in self.best_over)
            parts.append(f"best {cols} by {self.best} {self.best_by}")
        return f"{self.method}[{', '.join(parts)}]" if parts else self.method


def _fmt_where(v) -> str:
    return "|".join(map(str, v)) if isinstance(v, list) else str(v)


@dataclass(frozen=True)
class Target:
    """One checkable claim of a paper."""

    id: str
    paper: str
    experiment: str
    kind: str
    source: str
    metric: str
    # kind: value
    select: Selector | None = None
    value: float | None = None  # in record units (fractions for rates)
    sd: float | None = None
    paper_value: float | None = None  # as printed in the paper
    paper_sd: float | None = None
    units: str = "fraction"
    op: str = "~"
    tolerance: float = 0.0
    tolerance_sd: float = 0.0  # or this many paper SDs, where larger (record units via ``sd``)
    rtol: float = 0.0
    runs: int | None = None  # the paper's runs per number (seeds x folds); fewer = reduced
    profile: str = "full"  # the profile that is this file's protocol (CI guards: reduced)
    fixed: str = ""  # the value is set by the config (why): shown as info, never a pass
    best_over: tuple = ()  # params the paper picked the best of (per dataset)
    best: str = "max"
    best_metric: str | None = None  # metric the best config is picked by (default: ``metric``)
    nearest: dict = field(default_factory=dict)  # {column: value}: the config whose mean is closest
    check: bool = True  # False: shown in reports, never fails ``check``
    table: str | None = None  # paper table/figure layout this number belongs to
    note: str = ""
    deviation: str = ""  # why ours may differ from the paper (shown beside a FAIL or info row)
    why: str = ""  # why it is not run (shown beside a skipped row)
    lowered: dict = field(default_factory=dict)  # {"reason": ..., "from": ...}: why it was loosened
    # kind: relation
    lhs: Selector | None = None
    rhs: Selector | None = None
    rhs_value: float | None = None  # relation against a constant (record units) instead of ``rhs``
    per: tuple = ("dataset",)  # () = one block: the mean over all selected rows
    require: float = 1.0  # share of pairs that must hold (1.0 = every one)
    margin: float = 0.0
    claim: str = ""
    # kind: stat
    test: str | None = None
    groups: tuple = ()
    alpha: float = 0.05
    expect: str = "significant"  # or "not_significant"
    paper_statistic: float | None = None
    paper_p: float | None = None

    def tolerance_abs(self) -> float:
        """Absolute tolerance in record units: the largest of ``tolerance``, ``tolerance_sd`` paper
        SDs and ``rtol`` times the value."""
        by_sd = self.tolerance_sd * self.sd if self.sd is not None else 0.0
        return max(self.tolerance, by_sd, self.rtol * abs(self.value or 0.0))

    def scale(self) -> float:
        """Factor from record units to the paper's printed units (100 for percent)."""
        return 100.0 if self.units == "percent" else 1.0

    def lowered_note(self) -> str:
        """``lowered from 0.85: <reason>`` when the target carries ``lowered``, else ``""``."""
        if not self.lowered:
            return ""
        old = self.lowered.get("from")
        return f"lowered{'' if old is None else f' from {old:g}'}: {self.lowered['reason']}"


@dataclass
class PaperSpec:
    """A loaded paper file."""

    paper: str
    title: str
    path: Path
    units: str
    targets: list[Target]
    experiments: dict[str, dict]
    unavailable: dict[str, str]
    notes: str = ""

    def for_experiment(self, name: str) -> list[Target]:
        return [t for t in self.targets if t.experiment == name]


# --------------------------------------------------------------------------------------------- load

_TOP = {
    "paper",
    "title",
    "units",
    "defaults",
    "unavailable",
    "experiments",
    "targets",
    "notes",
    "source",
}
_VALUE_KEYS = {
    "id",
    "kind",
    "experiment",
    "source",
    "table",
    "dataset",
    "method",
    "where",
    "metric",
    "value",
    "sd",
    "units",
    "op",
    "tolerance",
    "tolerance_sd",
    "rtol",
    "runs",
    "fixed",
    "deviation",
    "why",
    "best_over",
    "best",
    "best_by",
    "check",
    "note",
    "lowered",
    "size",
    "nearest",
    *SIZE_FIELDS,
}
_REASONS = {"deviation", "why"}
_REL_KEYS = {
    "id",
    "kind",
    "experiment",
    "source",
    "lhs",
    "rhs",
    "metric",
    "op",
    "per",
    "require",
    "margin",
    "claim",
    "check",
    "note",
    "lowered",
    "dataset",
    "where",
    "table",
    *_REASONS,
}
_STAT_KEYS = {
    "id",
    "kind",
    "experiment",
    "source",
    "test",
    "groups",
    "lhs",
    "rhs",
    "metric",
    "alpha",
    "expect",
    "statistic",
    "p",
    "check",
    "note",
    "lowered",
    "claim",
    "per",
    *_REASONS,
}
_DEFAULT_KEYS = {
    "metric",
    "tolerance",
    "tolerance_sd",
    "runs",
    "profile",
    "rtol",
    "op",
    "units",
    "size_rtol",
    "size_check",
    "experiment",
    "check",
    "alpha",
    "best",
    "require",
}
_SELECTOR_KEYS = {
    "method",
    "dataset",
    "where",
    "experiment",
    "largest",
    "best_over",
    "best",
    "best_by",
}
_EXPERIMENT_KEYS = {
    "title",
    "tables",
    "figures",
    "stats",
    "description",
    "metric",
    "fixed",
    "items",
}


def _err(path, where: str, msg: str) -> TargetError:
    return TargetError(f"{path}: {where}: {msg}")


def _number(path, where, name, v, allow_none=True) -> float | None:
    if v is None and allow_none:
        return None
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or (isinstance(v, float) and math.isnan(v))
    ):
        raise _err(path, where, f"{name} must be a number, got {v!r}")
    return float(v)


def _selector(
    path, where, d, defaults: dict, experiment: str | None = None, metric: str | None = None
) -> Selector:
    if isinstance(d, str):
        d = {"method": d}
    if not isinstance(d, dict):
        raise _err(path, where, f"a selector must be a mapping with 'method', got {d!r}")
    unknown = set(d) - _SELECTOR_KEYS
    if unknown:
        raise _err(
            path,
            where,
            f"unknown selector keys {sorted(unknown)}; allowed: {sorted(_SELECTOR_KEYS)}",
        )
    if not d.get("method") or not isinstance(d["method"], str):
        raise _err(path, where, "selector needs 'method' (a method name, e.g. cart)")
    w = d.get("where") or {}
    if not isinstance(w, dict):
        raise _err(
            path, where, f"'where' must map columns to values (e.g. param.teacher: rf), got {w!r}"
        )
    w = {_column(k): v for k, v in w.items()}
    largest = d.get("largest")
    if largest is not None and (not isinstance(largest, str) or not largest):
        raise _err(
            path, where, f"'largest' must name a column (e.g. n_estimators), got {largest!r}"
        )
    best_over = d.get("best_over") or ()
    if isinstance(best_over, str):
        best_over = (best_over,)
    if not isinstance(best_over, (list, tuple)) or not all(
        isinstance(b, str) and b for b in best_over
    ):
        raise _err(
            path,
            where,
            f"'best_over' must list columns (e.g. [n_estimators, max_depth]), got {best_over!r}",
        )
    best, best_by = d.get("best"), d.get("best_by") or metric
    if best_over:
        if best not in ("min", "max"):
            raise _err(path, where, f"'best_over' needs best: min or max, got {best!r}")
        if not isinstance(best_by, str) or not best_by:
            raise _err(path, where, "'best_over' needs 'best_by' (a metric column)")
    elif best is not None or d.get("best_by") is not None:
        raise _err(path, where, "'best' and 'best_by' only go with 'best_over'")
    return Selector(
        method=d["method"],
        dataset=d.get("dataset"),
        where=w,
        experiment=d.get("experiment") or experiment,
        largest=None if largest is None else _column(largest),
        best_over=tuple(_column(b) for b in best_over),
        best_by=best_by if best_over else None,
        best=best if best_over else "min",
    )


def _lowered(path, where, e: dict) -> dict:
    """The entry's ``lowered`` annotation, validated: ``reason`` (text) and optional ``from`` (number)."""
    low = e.get("lowered")
    if low is None:
        return {}
    if not isinstance(low, dict) or set(low) - {"from", "reason"}:
        raise _err(
            path, where, f"lowered must be {{from: <previous value>, reason: ...}}, got {low!r}"
        )
    reason = low.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise _err(path, where, "lowered needs a non-empty 'reason' (why the guard may be looser)")
    out = {"reason": reason.strip()}
    if low.get("from") is not None:
        out["from"] = _number(path, where, "lowered.from", low["from"], allow_none=False)
    return out


def _column(k: str) -> str:
    """A selector's column name: bare names are method params (``teacher`` → ``param.teacher``)."""
    return k if "." in k or k in ("profile", "split") else f"param.{k}"


def _to_record_units(units: str, v: float | None) -> float | None:
    if v is None:
        return None
    return v / 100.0 if units == "percent" else v


def _check_entry(path, where, e: dict, d: dict, allowed: set, required: tuple) -> str:
    """Check an entry's keys and required fields; return its metric (entry, else defaults)."""
    unknown = set(e) - allowed
    if unknown:
        raise _err(path, where, f"unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
    for req in required:
        if not e.get(req):
            raise _err(path, where, f"missing '{req}'")
    metric = e.get("metric", d.get("metric"))
    if not metric:
        raise _err(path, where, "missing 'metric' (and no defaults.metric)")
    return metric


def _load_value(path, where, e: dict, d: dict, paper: str, file_units: str) -> list[Target]:
    metric = _check_entry(path, where, e, d, _VALUE_KEYS, ("id", "experiment", "method", "dataset"))
    op = e.get("op", d.get("op", "~"))
    if op not in OPS:
        raise _err(path, where, f"op must be one of {OPS}, got {op!r}")
    units = e.get("units", d.get("units", file_units))
    if units not in UNITS:
        raise _err(path, where, f"units must be one of {UNITS}, got {units!r}")
    best = e.get("best", d.get("best", "max"))
    if best not in ("max", "min"):
        raise _err(path, where, f"best must be 'max' or 'min', got {best!r}")
    best_over = e.get("best_over") or ()
    if isinstance(best_over, str):
        best_over = (best_over,)
    best_over = tuple(b if "." in b else f"param.{b}" for b in best_over)
    sel = _selector(
        path, where, {k: e[k] for k in ("method", "dataset", "where") if k in e}, d, e["experiment"]
    )
    nearest = e.get("nearest") or {}
    if not isinstance(nearest, dict) or len(nearest) > 1:
        raise _err(
            path,
            where,
            f"nearest must map one column to a value (e.g. n_splits: 1000), got {nearest!r}",
        )
    for k, v in nearest.items():
        _number(path, where, f"nearest.{k}", v, allow_none=False)
    value = (
        _number(path, where, "value", e.get("value"), allow_none=False) if "value" in e else None
    )
    sd = _number(path, where, "sd", e.get("sd"))
    tol = _number(path, where, "tolerance", e.get("tolerance", d.get("tolerance", 0.0)))
    tol_sd = _number(path, where, "tolerance_sd", e.get("tolerance_sd", d.get("tolerance_sd", 0.0)))
    rtol = _number(path, where, "rtol", e.get("rtol", d.get("rtol", 0.0)))
    for n, v in (("tolerance", tol), ("tolerance_sd", tol_sd), ("rtol", rtol)):
        if v is not None and v < 0:
            raise _err(path, where, f"{n} must be >= 0, got {v}")
    base = Target(
        id=str(e["id"]),
        paper=paper,
        experiment=str(e["experiment"]),
        kind="value",
        source=str(e.get("source", "")),
        metric=metric,
        select=sel,
        value=_to_record_units(units, value),
        sd=_to_record_units(units, sd),
        paper_value=value,
        paper_sd=sd,
        units=units,
        op=op,
        tolerance=_to_record_units(units, tol) or 0.0,
        tolerance_sd=tol_sd or 0.0,
        rtol=rtol or 0.0,
        **_protocol(path, where, e, d),
        best_over=best_over,
        best=best,
        best_metric=e.get("best_by"),  # pick the best config by this column (default: metric)
        nearest=dict(nearest),
        check=bool(e.get("check", d.get("check", True))),
        table=e.get("table"),
        note=str(e.get("note", "")),
        lowered=_lowered(path, where, e),
    )
    if value is None and not any(k in e for k in SIZE_FIELDS) and "size" not in e:
        raise _err(path, where, "missing 'value' (or a size field such as n_splits)")
    out = [base] if value is not None else []
    sizes = dict(e.get("size") or {})
    sizes.update({k: e[k] for k in SIZE_FIELDS if k in e})
    for k, v in sizes.items():
        if k not in SIZE_FIELDS:
            raise _err(path, where, f"unknown size field {k!r}; allowed: {SIZE_FIELDS}")
        own = {}  # a size given as {value, fixed, lowered} carries its own annotations
        if isinstance(v, dict):
            bad = set(v) - {"value", "fixed", "lowered"}
            if bad or "value" not in v:
                raise _err(path, where, f"{k} must be a number or {{value, fixed, lowered}}")
            own, v = v, v["value"]
        v = _number(path, where, k, v, allow_none=False)
        out.append(
            replace(
                base,
                id=f"{base.id}/{k}",
                metric=k,
                value=v,
                sd=None,
                paper_value=v,
                paper_sd=None,
                units="count",
                op="~",
                tolerance=0.0,
                tolerance_sd=0.0,
                rtol=float(d.get("size_rtol", 0.5)),
                best_metric=base.metric,
                check=bool(d.get("size_check", True)) and base.check,
                note=base.note,
                fixed=str(own.get("fixed", "")),
                lowered=_lowered(path, f"{where}.{k}", own),
            )
        )
    return out


def _protocol(path, where, e: dict, d: dict) -> dict:
    """The protocol and reason fields a target of any kind carries."""
    runs = e.get("runs", d.get("runs"))
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise _err(path, where, f"runs must be a positive integer, got {runs!r}")
    profile = d.get("profile", "full")
    if profile not in PROFILES:
        raise _err(path, "defaults.profile", f"must be one of {PROFILES}, got {profile!r}")
    return {
        "runs": runs,
        "profile": profile,
        "fixed": str(e.get("fixed", "")),
        "deviation": str(e.get("deviation", "")),
        "why": str(e.get("why", "")),
    }


def _load_relation(path, where, e: dict, d: dict, paper: str) -> Target:
    metric = _check_entry(path, where, e, d, _REL_KEYS, ("id", "experiment", "lhs", "rhs"))
    op = e.get("op", ">=")
    if op not in OPS[1:]:
        raise _err(path, where, f"relation op must be one of {OPS[1:]}, got {op!r}")
    per = e.get("per", ["dataset"])
    per = (per,) if isinstance(per, str) else tuple(per or ())
    require = e.get("require", d.get("require", 1.0))
    if require in ("all", "every"):
        require = 1.0
    elif require in ("most", "majority"):
        require = 0.5 + 1e-9
    require = _number(path, where, "require", require, allow_none=False)
    if not 0 < require <= 1:
        raise _err(path, where, f"require must be in (0, 1], 'all' or 'most', got {require}")
    lhs = _selector(path, where + ".lhs", e["lhs"], d, e["experiment"], metric)
    rhs_value = None
    if isinstance(e["rhs"], (int, float)) and not isinstance(e["rhs"], bool):
        rhs, rhs_value = None, float(e["rhs"])  # a constant, in record units
    else:
        rhs = _selector(path, where + ".rhs", e["rhs"], d, e["experiment"], metric)
    if e.get("dataset"):  # a dataset given at the relation level applies to both sides
        lhs = replace(lhs, dataset=lhs.dataset or e["dataset"])
        if rhs is not None:
            rhs = replace(rhs, dataset=rhs.dataset or e["dataset"])
    return Target(
        id=str(e["id"]),
        paper=paper,
        experiment=str(e["experiment"]),
        kind="relation",
        source=str(e.get("source", "")),
        metric=metric,
        lhs=lhs,
        rhs=rhs,
        rhs_value=rhs_value,
        op=op,
        per=per,
        require=require,
        margin=_number(path, where, "margin", e.get("margin", 0.0)) or 0.0,
        claim=str(e.get("claim", "")),
        check=bool(e.get("check", d.get("check", True))),
        note=str(e.get("note", "")),
        lowered=_lowered(path, where, e),
        table=e.get("table"),
        **_protocol(path, where, e, d),
    )


def _load_stat(path, where, e: dict, d: dict, paper: str) -> Target:
    metric = _check_entry(path, where, e, d, _STAT_KEYS, ("id", "experiment", "test"))
    if e["test"] not in STAT_TESTS:
        raise _err(path, where, f"test must be one of {STAT_TESTS}, got {e['test']!r}")
    expect = e.get("expect", "significant")
    if expect not in ("significant", "not_significant"):
        raise _err(
            path, where, f"expect must be 'significant' or 'not_significant', got {expect!r}"
        )
    if e["test"] in ("friedman", "nemenyi"):
        groups = e.get("groups")
        if not isinstance(groups, list) or len(groups) < 3:
            raise _err(path, where, f"{e['test']} needs 'groups': a list of >= 3 selectors")
        groups = tuple(
            _selector(path, f"{where}.groups[{i}]", g, d, e["experiment"], metric)
            for i, g in enumerate(groups)
        )
        lhs = rhs = None
        if e["test"] == "nemenyi":  # the claim: lhs differs from every other group
            if e.get("lhs") is None:
                raise _err(path, where, "nemenyi needs 'lhs': the group compared with the others")
            lhs = _selector(path, where + ".lhs", e["lhs"], d, e["experiment"], metric)
            if lhs.label() not in [g.label() for g in groups]:
                raise _err(path, where, f"nemenyi lhs {lhs.label()} must be one of the groups")
    else:
        if not e.get("lhs") or not e.get("rhs"):
            raise _err(path, where, "wilcoxon needs 'lhs' and 'rhs' selectors")
        groups = ()
        lhs = _selector(path, where + ".lhs", e["lhs"], d, e["experiment"], metric)
        rhs = _selector(path, where + ".rhs", e["rhs"], d, e["experiment"], metric)
    per = e.get("per", ["dataset"])
    return Target(
        id=str(e["id"]),
        paper=paper,
        experiment=str(e["experiment"]),
        kind="stat",
        source=str(e.get("source", "")),
        metric=metric,
        test=e["test"],
        groups=groups,
        lhs=lhs,
        rhs=rhs,
        alpha=_number(path, where, "alpha", e.get("alpha", d.get("alpha", 0.05))),
        expect=expect,
        paper_statistic=_number(path, where, "statistic", e.get("statistic")),
        paper_p=_number(path, where, "p", e.get("p")),
        claim=str(e.get("claim", "")),
        per=(per,) if isinstance(per, str) else tuple(per),
        check=bool(e.get("check", d.get("check", True))),
        note=str(e.get("note", "")),
        **_protocol(path, where, e, d),
        lowered=_lowered(path, where, e),
    )


def _check_experiments(path, exps) -> dict:
    if exps is None:
        return {}
    if not isinstance(exps, dict):
        raise _err(path, "experiments", "must map experiment names to report settings")
    for name, spec in exps.items():
        spec = spec or {}
        if not isinstance(spec, dict):
            raise _err(path, f"experiments.{name}", "must be a mapping")
        unknown = set(spec) - _EXPERIMENT_KEYS
        if unknown:
            raise _err(
                path,
                f"experiments.{name}",
                f"unknown keys {sorted(unknown)}; allowed: {sorted(_EXPERIMENT_KEYS)}",
            )
        fixed = spec.get("fixed") or {}
        if not isinstance(fixed, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v for k, v in fixed.items()
        ):
            raise _err(
                path,
                f"experiments.{name}.fixed",
                "must map a metric to why the config sets it (e.g. n_splits: 'target_splits')",
            )
        for i, fig in enumerate(spec.get("figures") or []):
            if (
                not isinstance(fig, dict)
                or not fig.get("name")
                or not fig.get("x")
                or not fig.get("y")
            ):
                raise _err(
                    path, f"experiments.{name}.figures[{i}]", "a figure needs 'name', 'x' and 'y'"
                )
        for i, tab in enumerate(spec.get("tables") or []):
            if not isinstance(tab, dict) or not tab.get("name") or not tab.get("table"):
                raise _err(
                    path,
                    f"experiments.{name}.tables[{i}]",
                    "a table layout needs 'name' and 'table' (the targets' table label)",
                )
        for i, st in enumerate(spec.get("stats") or []):
            if not isinstance(st, dict) or st.get("test") not in STAT_TESTS or not st.get("metric"):
                raise _err(
                    path,
                    f"experiments.{name}.stats[{i}]",
                    f"a stats entry needs 'test' in {STAT_TESTS} and 'metric'",
                )
        exps[name] = spec
    return exps


def load_paper(path: str | Path, text: str | None = None) -> PaperSpec:
    """Load and validate one paper file; raise :class:`TargetError` naming the bad entry.

    ``text``, when given, is parsed instead of the file's content (e.g. an older version from git).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text() if text is None else text)
    except yaml.YAMLError as exc:
        raise TargetError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TargetError(f"{path}: must be a mapping with 'paper' and 'targets'")
    unknown = set(data) - _TOP
    if unknown:
        raise _err(path, "top level", f"unknown keys {sorted(unknown)}; allowed: {sorted(_TOP)}")
    paper = data.get("paper") or path.stem
    units = data.get("units", "fraction")
    if units not in ("percent", "fraction"):
        raise _err(path, "units", f"must be 'percent' or 'fraction', got {units!r}")
    d = data.get("defaults") or {}
    if not isinstance(d, dict):
        raise _err(path, "defaults", "must be a mapping")
    bad = set(d) - _DEFAULT_KEYS
    if bad:
        raise _err(
            path, "defaults", f"unknown keys {sorted(bad)}; allowed: {sorted(_DEFAULT_KEYS)}"
        )
    entries = data.get("targets") or []
    if not isinstance(entries, list):
        raise _err(path, "targets", "must be a list")
    targets: list[Target] = []
    for i, e in enumerate(entries):
        where = f"targets[{i}]" + (
            f" (id {e.get('id')})" if isinstance(e, dict) and e.get("id") else ""
        )
        if not isinstance(e, dict):
            raise _err(path, where, "each target must be a mapping")
        e = {"experiment": d.get("experiment"), **e} if d.get("experiment") else e
        kind = e.get("kind", "value")
        if kind not in KINDS:
            raise _err(path, where, f"kind must be one of {KINDS}, got {kind!r}")
        if kind == "value":
            targets.extend(_load_value(path, where, e, d, paper, units))
        elif kind == "relation":
            targets.append(_load_relation(path, where, e, d, paper))
        else:
            targets.append(_load_stat(path, where, e, d, paper))
    experiments = _check_experiments(path, data.get("experiments"))
    targets = [
        replace(t, fixed=fixed)
        if not t.fixed
        and (fixed := (experiments.get(t.experiment, {}).get("fixed") or {}).get(t.metric))
        else t
        for t in targets
    ]
    seen = set()
    for t in targets:
        if t.id in seen:
            raise _err(path, f"target {t.id}", "duplicate id")
        seen.add(t.id)
    unavailable = data.get("unavailable") or {}
    if not isinstance(unavailable, dict):
        raise _err(path, "unavailable", "must map dataset names to reasons")
    return PaperSpec(
        paper=paper,
        title=str(data.get("title", paper)),
        path=path,
        units=units,
        targets=targets,
        experiments=experiments,
        unavailable={str(k): str(v) for k, v in unavailable.items()},
        notes=str(data.get("notes", "")),
    )


def papers_dir(conf_dir: str | Path | None = None) -> Path:
    if conf_dir is None:
        from treebench.config import CONF_DIR

        conf_dir = CONF_DIR
    return Path(conf_dir) / "papers"


def load_all(conf_dir: str | Path | None = None) -> list[PaperSpec]:
    """Every paper file under ``<conf>/papers``, sorted by name."""
    return [load_paper(p) for p in sorted(papers_dir(conf_dir).glob("*.yaml"))]


def experiment_names(papers: list[PaperSpec]) -> list[str]:
    names = set()
    for p in papers:
        names.update(p.experiments)
        names.update(t.experiment for t in p.targets)
    return sorted(names)


def for_experiment(papers: list[PaperSpec], name: str) -> tuple[list[Target], dict, dict[str, str]]:
    """Targets, merged report settings and unavailable datasets for one experiment across papers."""
    targets, spec, unavailable = [], {}, {}
    for p in papers:
        ts = p.for_experiment(name)
        targets.extend(ts)
        if name in p.experiments:
            for k, v in p.experiments[name].items():
                if isinstance(v, list):
                    spec.setdefault(k, []).extend(v)
                else:
                    spec.setdefault(k, v)
        if ts or name in p.experiments:
            unavailable.update(p.unavailable)
    return targets, spec, unavailable


def as_dict(t: Target) -> dict[str, Any]:
    """A target's identity fields for tables."""
    return {
        "id": t.id,
        "paper": t.paper,
        "experiment": t.experiment,
        "kind": t.kind,
        "source": t.source,
        "metric": t.metric,
    }
