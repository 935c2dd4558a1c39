"""Paper targets as data: ``treebench/conf/papers/<paper>.yaml`` loaded and validated.

A paper file holds the paper's numbers (``kind: value``), its claims comparing two selections
(``kind: relation``) and its significance claims (``kind: stat``), with per-target defaults and the
tolerances set for its method; a *selector* picks the result rows each compares. Nothing here knows
a method's or a dataset's name: everything is data. The file format, field by field:
``docs/architecture.md`` ("Paper files").

The file's schema is :mod:`treebench.report.target_schema` (pydantic models); this module turns a
validated file into :class:`Target` objects and words errors as "<file>: <entry>: <field>
<problem>".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from treebench.config import load_yaml
from treebench.errors import TreebenchError
from treebench.report.target_schema import (  # noqa: F401 - KINDS ... SIZE_FIELDS re-exported
    ENTRIES,
    KINDS,
    OPS,
    PROFILES,
    SIZE_FIELDS,
    STAT_TESTS,
    UNITS,
    Defaults,
    PaperFile,
    RelationEntry,
    SelectorIn,
    StatEntry,
    ValueEntry,
    ValueOf,
    describe,
)


class TargetError(ValueError, TreebenchError):
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
    fixed: str | None = ""  # set by the config (why): info, never a pass; None: measured
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
    structural: str = ""  # why the check cannot fail whatever the runs give: info, never a pass
    # kind: relation
    lhs: Selector | None = None
    rhs: Selector | None = None
    rhs_value: float | None = None  # relation against a constant (record units) instead of ``rhs``
    rhs_of: str | None = None  # the value target whose number ``rhs_value`` is (``value_of``)
    rhs_label: str = ""  # how that number reads in a verdict, e.g. "sndf 2.92 % (f6/sndf/letter)"
    per: tuple = ("dataset",)  # () = one block: the mean over all selected rows
    require: float = 1.0  # share of pairs that must hold (1.0 = every one)
    margin: float = 0.0
    claim: str = ""
    blocks: int | None = None  # blocks the paper's claim spans; fewer measured = reduced
    short_of: str | None = None  # column: until the paper's size has run, the largest smaller one
    at: str | None = None  # size column: compare the sides' curves at the rhs configs' sizes
    # kind: stat
    test: str | None = None
    groups: tuple = ()
    alpha: float = 0.05
    expect: str = "significant"  # or "not_significant"; "any": a trend's sign alone (spearman)
    x: str | None = None  # spearman: the per-block column (e.g. n_features) ...
    best_of: str | None = None  # ... against the value of this column with the best mean metric
    sign: str | None = None  # ... correlated with this sign (negative | positive)
    paper_statistic: float | None = None
    paper_p: float | None = None

    def tolerance_abs(self) -> float:
        """Absolute tolerance in record units.

        The largest of ``tolerance``, ``tolerance_sd`` paper SDs and ``rtol`` times the value.
        """
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
    runs: int | None = None  # the paper's runs per number (``defaults.runs``)
    runs_unstated: str = ""  # without ``runs``: what the paper says of its runs
    items: dict[str, dict] = field(default_factory=dict)  # item -> {partly, outside_paper}

    def for_experiment(self, name: str) -> list[Target]:
        """Return the targets of experiment ``name``."""
        return [t for t in self.targets if t.experiment == name]

    def runs_text(self) -> str:
        """Return the paper's run count as the report states it."""
        if self.runs is not None:
            return f"{self.runs} runs per number"
        if self.runs_unstated:
            return f"not stated: {self.runs_unstated.strip().rstrip('.')}"
        return "not stated (the paper file says nothing of its runs)"


def item_label(table, source, experiment) -> str:
    """Return the paper item (table, figure or in-text claim) a target belongs to.

    Its ``table``, else its ``source`` without a trailing parenthesis, else its experiment.
    """
    label = table if isinstance(table, str) and table else source
    return re.sub(r"\s*\(.*\)$", "", str(label or "")) or str(experiment)


# --------------------------------------------------------------------------------------------- load


def _err(path, where: str, msg: str) -> TargetError:
    return TargetError(f"{path}: {where}: {msg}")


def _validate(model, data, path, where: str = ""):
    """``model`` validated from ``data``.

    A :class:`TargetError` naming the file, the entry (``where``) and the field otherwise.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, msg = describe(exc)[0]
        if not where:
            raise _err(path, field or "top level", msg) from None
        if field:  # "value must be a number", "lhs: unknown keys [...]"
            msg = f"{field} {msg}" if msg.startswith("must ") else f"{field}: {msg}"
        raise _err(path, where, msg) from None


def _column(k: str) -> str:
    """Return a selector's column name.

    Bare names are method params (``teacher`` → ``param.teacher``).
    """
    return k if "." in k or k in ("profile", "split") else f"param.{k}"


def _selector(s: SelectorIn, experiment: str, metric: str | None = None, **given) -> Selector:
    best_by = s.best_by or metric
    if s.best_over and not best_by:
        raise ValueError("'best_over' needs 'best_by' (a metric column)")
    return Selector(
        method=s.method,
        dataset=s.dataset or given.get("dataset"),
        where={_column(k): v for k, v in (s.where or given.get("where") or {}).items()},
        experiment=s.experiment or experiment,
        largest=None if s.largest is None else _column(s.largest),
        best_over=tuple(_column(b) for b in s.best_over),
        best_by=best_by if s.best_over else None,
        best=s.best if s.best_over else "min",
    )


def _records(units: str, v: float | None) -> float | None:
    """Return a number as the file writes it in record units (percent → fraction)."""
    return None if v is None else (v / 100.0 if units == "percent" else v)


def _common(e, d: Defaults, paper: str, metric: str) -> dict:
    """Return the fields every kind of target takes from its entry (else ``defaults``)."""
    return {
        "id": e.id,
        "paper": paper,
        "experiment": e.experiment,
        "source": e.source,
        "metric": metric,
        "runs": e.given("runs", d.runs),
        "profile": d.profile,
        "fixed": getattr(e, "fixed", ""),
        "deviation": e.deviation,
        "why": e.why,
        "check": bool(e.given("check", d.check)),
        "note": e.note,
        "lowered": e.lowered.as_dict() if e.lowered else {},
        "structural": e.structural,
    }


def _value_targets(e: ValueEntry, d: Defaults, common: dict, file_units: str) -> list[Target]:
    units = e.given("units", d.units) or file_units
    tol = e.given("tolerance", d.tolerance)
    base = Target(
        **common,
        kind="value",
        select=_selector(
            SelectorIn(method=e.method, dataset=e.dataset, where=e.where), e.experiment
        ),
        value=_records(units, e.value),
        sd=_records(units, e.sd),
        paper_value=e.value,
        paper_sd=e.sd,
        units=units,
        op=e.given("op", d.op) or "~",
        tolerance=_records(units, tol) or 0.0,
        tolerance_sd=e.given("tolerance_sd", d.tolerance_sd) or 0.0,
        rtol=e.given("rtol", d.rtol) or 0.0,
        best_over=tuple(_column(b) for b in e.best_over),
        best=e.given("best", d.best) or "max",
        best_metric=e.best_by,  # pick the best config by this column (default: metric)
        nearest=dict(e.nearest),
        table=e.table,
    )
    out = [base] if e.value is not None else []
    for k, size in e.sizes().items():  # one count target per size field, e.g. the paper's #S
        out.append(
            replace(
                base,
                id=f"{base.id}/{k}",
                metric=k,
                value=size.value,
                sd=None,
                paper_value=size.value,
                paper_sd=None,
                units="count",
                op="~",
                tolerance=0.0,
                tolerance_sd=0.0,
                rtol=float(d.size_rtol),
                best_metric=base.metric,
                check=bool(d.size_check) and base.check and not size.unmatched,
                fixed=None if size.measured else size.fixed,
                lowered=size.lowered.as_dict() if size.lowered else {},
                structural=size.structural or base.structural,
                deviation=f"size not matchable: {size.unmatched}"
                if size.unmatched
                else base.deviation,
            )
        )
    return out


def _relation_target(e: RelationEntry, d: Defaults, common: dict) -> Target:
    at = {"dataset": e.dataset}  # a dataset at the relation level applies to both sides
    const = isinstance(e.rhs, float)
    ref = isinstance(e.rhs, ValueOf)  # resolved by _resolve_value_of once the file is loaded
    if e.short_of and not isinstance(e.lhs.where.get(e.short_of), (int, float)):
        raise ValueError(
            f"short_of: {e.short_of!r} needs a number in lhs 'where' (the paper's size)"
        )
    if e.at and (const or ref or e.short_of):
        raise ValueError("'at' compares two curves: it needs an rhs selector and no 'short_of'")
    return Target(
        **common,
        kind="relation",
        lhs=_selector(e.lhs, e.experiment, common["metric"], **at),
        rhs=None if const or ref else _selector(e.rhs, e.experiment, common["metric"], **at),
        rhs_value=e.rhs if const else None,
        rhs_of=e.rhs.value_of if ref else None,
        op=e.op,
        per=e.per,
        require=e.given("require", d.require) or 1.0,
        margin=e.margin or 0.0,
        claim=e.claim,
        table=e.table,
        blocks=e.blocks,
        short_of=_column(e.short_of) if e.short_of else None,
        at=e.at,
    )


def _stat_target(e: StatEntry, d: Defaults, common: dict) -> Target:
    metric = common["metric"]
    groups = tuple(_selector(g, e.experiment, metric) for g in e.groups or ())
    lhs = _selector(e.lhs, e.experiment, metric) if e.lhs is not None else None
    rhs = _selector(e.rhs, e.experiment, metric) if e.test == "wilcoxon" else None
    if e.test == "nemenyi" and lhs.label() not in [g.label() for g in groups]:
        raise ValueError(f"nemenyi lhs {lhs.label()} must be one of the groups")
    if e.test == "friedman":
        lhs = None
    return Target(
        **common,
        kind="stat",
        test=e.test,
        groups=groups,
        lhs=lhs,
        rhs=rhs,
        alpha=e.given("alpha", d.given("alpha", 0.05)),
        expect=e.expect,
        x=e.x,
        best_of=e.best_of,
        sign=e.sign,
        blocks=e.blocks,
        paper_statistic=e.statistic,
        paper_p=e.p,
        claim=e.claim,
        per=e.per,
    )


def _targets(path, i: int, e, f: PaperFile, paper: str) -> list[Target]:
    """Return the targets of entry ``i`` of the file."""
    where = f"targets[{i}]" + (
        f" (id {e.get('id')})" if isinstance(e, dict) and e.get("id") else ""
    )
    if not isinstance(e, dict):
        raise _err(path, where, "each target must be a mapping")
    d = f.defaults
    if d.experiment:
        e = {"experiment": d.experiment, **e}
    kind = e.get("kind", "value")
    if kind not in ENTRIES:
        raise _err(path, where, f"kind must be one of {KINDS}, got {kind!r}")
    entry = _validate(ENTRIES[kind], e, path, where)
    metric = entry.given("metric", d.metric)
    if not metric:
        raise _err(path, where, "missing 'metric' (and no defaults.metric)")
    common = _common(entry, d, paper, metric)
    try:
        if kind == "value":
            return _value_targets(entry, d, common, f.units)
        if kind == "relation":
            return [_relation_target(entry, d, common)]
        return [_stat_target(entry, d, common)]
    except ValueError as exc:
        raise _err(path, where, str(exc)) from None


def _resolve_value_of(t: Target, targets: list[Target], path) -> Target:
    """``t`` with ``rhs: {value_of: id}`` turned into that value target's number (record units).

    The two must speak of the same metric, so that the number means what the claim compares.
    """
    if t.rhs_of is None:
        return t
    ref = next((r for r in targets if r.id == t.rhs_of and r.kind == "value"), None)
    if ref is None or ref.value is None:
        raise _err(path, f"target {t.id}", f"rhs value_of {t.rhs_of!r} is not a value target here")
    if ref.metric != t.metric:
        raise _err(
            path,
            f"target {t.id}",
            f"compares {t.metric} but value_of {t.rhs_of!r} is a {ref.metric}: give the relation "
            f"metric: {ref.metric}",
        )
    unit = " %" if ref.units == "percent" else ""
    label = f"{ref.select.method} {ref.paper_value:g}{unit} ({ref.id})"
    return replace(t, rhs_value=ref.value, rhs_label=label)


def load_paper(path: str | Path, text: str | None = None) -> PaperSpec:
    """Load and validate one paper file; raise :class:`TargetError` naming the bad entry.

    ``text``, when given, is parsed instead of the file's content (e.g. an older version from git).
    """
    path = Path(path)
    try:
        data = load_yaml(path.read_text() if text is None else text)
    except yaml.YAMLError as exc:
        raise TargetError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TargetError(f"{path}: must be a mapping with 'paper' and 'targets'")
    f = _validate(PaperFile, data, path)
    paper = f.paper or path.stem
    targets = [t for i, e in enumerate(f.targets) for t in _targets(path, i, e, f, paper)]
    experiments = {k: v or {} for k, v in (data.get("experiments") or {}).items()}
    targets = [  # a metric the experiment's config sets: shown as info, never a pass
        replace(t, fixed=fixed)
        if t.fixed == ""  # None: measured, never set by config
        and (fixed := (experiments.get(t.experiment, {}).get("fixed") or {}).get(t.metric))
        else t
        for t in targets
    ]
    seen = set()
    for t in targets:
        if t.id in seen:
            raise _err(path, f"target {t.id}", "duplicate id")
        seen.add(t.id)
    targets = [_resolve_value_of(t, targets, path) for t in targets]
    known = {item_label(t.table, t.source, t.experiment) for t in targets}
    for name in f.items:
        if name not in known:
            raise _err(
                path, f"items.{name}", f"no target belongs to it; the items are {sorted(known)}"
            )
    return PaperSpec(
        paper=paper,
        title=str(f.title or paper),
        path=path,
        units=f.units,
        targets=targets,
        experiments=experiments,
        unavailable={str(k): v for k, v in f.unavailable.items()},
        notes=f.notes,
        runs=f.defaults.runs,
        runs_unstated=f.runs_unstated,
        items={k: v.model_dump() for k, v in f.items.items()},
    )


def papers_dir(conf_dir: str | Path | None = None) -> Path:
    """Return the paper files' directory, ``<conf>/papers``."""
    if conf_dir is None:
        from treebench.config import CONF_DIR

        conf_dir = CONF_DIR
    return Path(conf_dir) / "papers"


def load_all(conf_dir: str | Path | None = None) -> list[PaperSpec]:
    """Every paper file under ``<conf>/papers``, sorted by name."""
    return [load_paper(p) for p in sorted(papers_dir(conf_dir).glob("*.yaml"))]


def paper_setting(method: str, dataset: str, papers: list[PaperSpec]) -> str | None:
    """Return a line naming the experiment that runs ``method`` on ``dataset`` as a paper did.

    With the paper's number, or None when no paper reports that pair (the CI guards do not count).
    """
    for spec in papers:
        if spec.paper == "ci":
            continue
        for t in spec.targets:
            s = t.select
            if t.kind != "value" or s is None or t.paper_value is None:
                continue
            if s.method == method and s.dataset == dataset:
                unit = "%" if t.units == "percent" else ""
                return (
                    f"paper setting: {spec.title.split(' (')[0]} reports {t.paper_value:g}{unit} "
                    f"{t.metric} ({t.source}) for {method} on {dataset}; run it with "
                    f"`treebench run -m experiment={t.experiment} dataset={dataset}`"
                )
    return None


def experiment_names(papers: list[PaperSpec]) -> list[str]:
    """Return the names of the experiments the papers check."""
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
    """Return a target's identity fields for tables."""
    return {
        "id": t.id,
        "paper": t.paper,
        "experiment": t.experiment,
        "kind": t.kind,
        "source": t.source,
        "metric": t.metric,
    }
