"""The schema of a paper target file (``treebench/conf/papers/<paper>.yaml``), as pydantic models.

The models check the file as written (keys, types, allowed values, what goes together);
:mod:`treebench.report.targets` turns a checked file into :class:`~treebench.report.targets.Target`
objects (defaults, units, size fields). :func:`describe` words a validation error as
"<field> <problem>" for the :class:`~treebench.report.targets.TargetError` naming the file and
entry.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    ValidationError,
    model_validator,
)

KINDS = ("value", "relation", "stat")
OPS = ("~", ">=", "<=", ">", "<")
UNITS = ("percent", "fraction", "count", "seconds")
PROFILES = ("full", "reduced")
STAT_TESTS = ("friedman", "nemenyi", "wilcoxon", "spearman")
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


def _number(v: Any) -> float:
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or (isinstance(v, float) and math.isnan(v))
    ):
        raise ValueError(f"must be a number, got {v!r}")
    return float(v)


def _columns(v: Any) -> tuple:
    v = (v,) if isinstance(v, str) else (v or ())
    if not isinstance(v, list | tuple) or not all(isinstance(b, str) and b for b in v):
        raise ValueError(f"must list columns (e.g. [n_estimators, max_depth]), got {v!r}")
    return tuple(v)


def _non_negative(v: float | None) -> float | None:
    if v is not None and v < 0:
        raise ValueError(f"must be >= 0, got {v:g}")
    return v


def _require(v: Any) -> float:
    if v in ("all", "every"):
        return 1.0
    if v in ("most", "majority"):
        return 0.5 + 1e-9
    v = _number(v)
    if not 0 < v <= 1:
        raise ValueError(f"must be in (0, 1], 'all' or 'most', got {v:g}")
    return v


Number = Annotated[float, PlainValidator(_number)]
NonNegative = Annotated[float, PlainValidator(lambda v: _non_negative(_number(v)))]
Text = Annotated[str, BeforeValidator(lambda v: "" if v is None else str(v))]
Name = Annotated[str, BeforeValidator(lambda v: v if v is None else str(v)), Field(min_length=1)]
Column = Annotated[str, Field(strict=True, min_length=1)]
Columns = Annotated[tuple, PlainValidator(_columns)]
Require = Annotated[float, PlainValidator(_require)]
Per = Annotated[tuple, BeforeValidator(lambda v: (v,) if isinstance(v, str) else tuple(v or ()))]


class _Model(BaseModel):
    """Unknown keys are an error listing the allowed ones."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = {f.alias or n for n, f in cls.model_fields.items()}
            unknown = set(data) - allowed
            if unknown:
                raise ValueError(f"unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
        return data

    def given(self, key: str, default: Any = None) -> Any:
        """Return the field's value if the file states it, else ``default``."""
        return getattr(self, key) if key in self.model_fields_set else default


class Lowered(_Model):
    """Why a regression guard was made looser: ``{from: <previous value>, reason: "..."}``."""

    from_: Number | None = Field(None, alias="from")
    reason: Text = ""

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, data: Any) -> Any:
        if not isinstance(data, dict) or set(data) - {"from", "reason"}:
            raise ValueError(f"must be {{from: <previous value>, reason: ...}}, got {data!r}")
        return data

    @model_validator(mode="after")
    def _reason(self) -> Lowered:
        if not self.reason.strip():
            raise ValueError("needs a non-empty 'reason' (why the guard may be looser)")
        return self

    def as_dict(self) -> dict:
        """Return the entry as the paper file writes it."""
        return {
            "reason": self.reason.strip(),
            **({} if self.from_ is None else {"from": self.from_}),
        }


class SelectorIn(_Model):
    """Which result rows a number refers to (a bare string is a method name)."""

    method: Name
    dataset: str | None = None
    where: dict[str, Any] = {}
    experiment: str | None = None
    largest: Column | None = None
    best_over: Columns = ()
    best: Literal["min", "max"] | None = None
    best_by: Column | None = None

    @model_validator(mode="before")
    @classmethod
    def _method_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"method": data}
        if not isinstance(data, dict):
            raise ValueError(f"a selector must be a mapping with 'method', got {data!r}")
        return data

    @model_validator(mode="after")
    def _best(self) -> SelectorIn:
        if self.best_over and self.best is None:
            raise ValueError("'best_over' needs best: min or max")
        if not self.best_over and (self.best is not None or self.best_by is not None):
            raise ValueError("'best' and 'best_by' only go with 'best_over'")
        return self


class ValueOf(_Model):
    """``{value_of: <target id>}``.

    The number another value target of the same file prints (e.g. a published baseline's), so a
    claim against it does not copy the number.
    """

    value_of: Name


def _kind_of_rhs(v: Any) -> str:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return "number"
    return "value_of" if isinstance(v, dict) and "value_of" in v else "selector"


#: a relation's right-hand side: a selector, a constant in record units, or another target's number
Rhs = Annotated[
    Annotated[Number, Tag("number")]
    | Annotated[ValueOf, Tag("value_of")]
    | Annotated[SelectorIn, Tag("selector")],
    Discriminator(_kind_of_rhs),
]


class Defaults(_Model):
    """``defaults``: values every target takes unless it states its own."""

    metric: str | None = None
    tolerance: NonNegative | None = None
    tolerance_sd: NonNegative | None = None
    rtol: NonNegative | None = None
    runs: Annotated[int, Field(strict=True, ge=1)] | None = None
    profile: Literal[PROFILES] = "full"
    op: Literal[OPS] | None = None
    units: Literal[UNITS] | None = None
    size_rtol: Number = 0.1  # sizes (nodes, leaves, splits, depths) within 10 %
    size_check: bool = True
    experiment: str | None = None
    check: bool = True
    alpha: Number | None = None
    best: Literal["max", "min"] | None = None
    require: Require | None = None


class _Entry(_Model):
    """What every target carries."""

    id: Name
    experiment: Name
    source: Text = ""
    metric: str | None = None
    check: bool | None = None
    note: Text = ""
    lowered: Lowered | None = None
    deviation: Text = ""
    why: Text = ""
    #: why the check cannot fail, whatever the runs give (a value the construction implies, a
    #: structural relation, a count pooled over every configuration, a rank test whose N lets it
    #: fail only if every sign agrees): shown as ``info: structural``, never a pass
    structural: Text = ""


class SizeIn(_Model):
    """A size field written with its own annotations: ``{value, fixed, measured, lowered}``."""

    value: Number
    fixed: Text = ""
    #: the size is an outcome of the fit here (e.g. unlimited trees), not set by the config: the
    #: experiment's ``fixed`` note for this metric does not apply, the size is checked
    measured: bool = False
    lowered: Lowered | None = None
    #: as a target's ``structural``: why this size cannot fail (info, never a pass)
    structural: Text = ""
    #: why the paper's size cannot be matched here (the protocol that made it is not stated): info
    unmatched: Text = ""

    @model_validator(mode="after")
    def _fixed_or_measured(self):
        if self.fixed and self.measured:
            raise ValueError("a size is either 'fixed' (set by config) or 'measured', not both")
        return self

    @model_validator(mode="before")
    @classmethod
    def _number_or_mapping(cls, data: Any) -> Any:
        return data if isinstance(data, dict) else {"value": data}


class ValueEntry(_Entry):
    """``kind: value``: a number of the paper for one method on one dataset."""

    kind: Literal["value"] = "value"
    runs: Annotated[int, Field(strict=True, ge=1)] | None = None
    fixed: Text = ""
    table: str | None = None
    dataset: Name
    method: Name
    where: dict[str, Any] = {}
    value: Number | None = None
    sd: Number | None = None
    units: Literal[UNITS] | None = None
    op: Literal[OPS] | None = None
    tolerance: NonNegative | None = None
    tolerance_sd: NonNegative | None = None
    rtol: NonNegative | None = None
    best_over: Columns = ()
    best: Literal["max", "min"] | None = None
    best_by: str | None = None
    nearest: Annotated[dict[str, Number], Field(max_length=1)] = {}
    size: dict[Literal[SIZE_FIELDS], SizeIn] = {}
    n_splits: SizeIn | None = None
    n_leaves: SizeIn | None = None
    n_nodes: SizeIn | None = None
    n_trees: SizeIn | None = None
    depth: SizeIn | None = None
    mean_depth: SizeIn | None = None
    split_evals: SizeIn | None = None
    n_splits_per_tree: SizeIn | None = None

    @model_validator(mode="after")
    def _has_a_number(self) -> ValueEntry:
        if self.value is None and not self.sizes():
            raise ValueError("missing 'value' (or a size field such as n_splits)")
        return self

    def sizes(self) -> dict[str, SizeIn]:
        """Return every size bound of the target by size field."""
        out = dict(self.size)
        out.update({k: getattr(self, k) for k in SIZE_FIELDS if getattr(self, k) is not None})
        return out


class RelationEntry(_Entry):
    """``kind: relation``: a claim comparing two selections (or one with a constant)."""

    kind: Literal["relation"]
    lhs: SelectorIn
    rhs: Rhs
    op: Literal[OPS[1:]] = ">="
    per: Per = ("dataset",)
    require: Require | None = None
    margin: Number | None = 0.0
    claim: Text = ""
    dataset: str | None = None
    where: dict[str, Any] = {}
    table: str | None = None
    blocks: int | None = None  # blocks (``per``) the paper's claim spans; fewer measured = reduced
    runs: Annotated[int, Field(strict=True, ge=1)] | None = (
        None  # the paper's runs behind each mean
    )
    # a param the sides' ``where`` set to a size the paper ran (e.g. n_estimators: 80): until that
    # size has run, the claim is checked at the largest smaller size the lhs has, labelled reduced
    short_of: str | None = None
    # a size column (e.g. n_splits): the claim compares curves at equal size, a pair per rhs config
    at: Column | None = None


class StatEntry(_Entry):
    """``kind: stat``: a significance claim, or a trend over blocks.

    A significance claim: Friedman, Nemenyi, Wilcoxon. A trend (Spearman): per block, the
    ``best_of`` value with the best mean metric against the block's ``x``; ``sign`` says the
    direction the paper claims, ``expect: any`` that the sign alone is claimed.
    """

    kind: Literal["stat"]
    test: Literal[STAT_TESTS]
    groups: list[SelectorIn] | None = None
    lhs: SelectorIn | None = None
    rhs: SelectorIn | None = None
    alpha: Number | None = None
    expect: Literal["significant", "not_significant", "any"] = "significant"
    statistic: Number | None = None
    p: Number | None = None
    claim: Text = ""
    per: Per = ("dataset",)
    x: Column | None = None
    best_of: Column | None = None
    sign: Literal["negative", "positive"] | None = None
    blocks: int | None = None
    runs: Annotated[int, Field(strict=True, ge=1)] | None = None

    @model_validator(mode="after")
    def _groups(self) -> StatEntry:
        if self.test in ("friedman", "nemenyi"):
            if self.groups is None or len(self.groups) < 3:
                raise ValueError(f"{self.test} needs 'groups': a list of >= 3 selectors")
            if self.test == "nemenyi" and self.lhs is None:
                raise ValueError("nemenyi needs 'lhs': the group compared with the others")
        elif self.test == "spearman":
            if self.lhs is None or not (self.x and self.best_of and self.sign):
                raise ValueError("spearman needs 'lhs', 'x', 'best_of' and 'sign'")
        elif self.lhs is None or self.rhs is None:
            raise ValueError("wilcoxon needs 'lhs' and 'rhs' selectors")
        if self.expect == "any" and self.test != "spearman":
            raise ValueError("expect: any (the sign alone) is for test: spearman")
        return self


ENTRIES: dict[str, type[_Entry]] = {
    "value": ValueEntry,
    "relation": RelationEntry,
    "stat": StatEntry,
}


class _Layout(BaseModel):
    """A report layout item: named keys checked, any others kept for the report."""

    model_config = ConfigDict(extra="allow")
    needs: ClassVar[tuple] = ()
    message: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _needed(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not all(data.get(k) for k in cls.needs):
            raise ValueError(cls.message)
        return data


class Figure(_Layout):
    """A figure of a paper: its name and axes."""

    needs = ("name", "x", "y")
    message = "a figure needs 'name', 'x' and 'y'"


class TableLayout(_Layout):
    """A table of a paper: its name and the targets' table label."""

    needs = ("name", "table")
    message = "a table layout needs 'name' and 'table' (the targets' table label)"


class StatLayout(BaseModel):
    """A statistical test of a paper: the test and the metric."""

    model_config = ConfigDict(extra="allow")
    test: Literal[STAT_TESTS]
    metric: Name

    @model_validator(mode="before")
    @classmethod
    def _needed(cls, data: Any) -> Any:
        if (
            not isinstance(data, dict)
            or data.get("test") not in STAT_TESTS
            or not data.get("metric")
        ):
            raise ValueError(f"a stats entry needs 'test' in {STAT_TESTS} and 'metric'")
        return data


class ExperimentLayout(_Model):
    """``experiments.<name>``: how the report lays out an experiment."""

    title: str | None = None
    tables: list[TableLayout] | None = None
    figures: list[Figure] | None = None
    stats: list[StatLayout] | None = None
    description: str | None = None
    metric: str | None = None
    fixed: dict[str, Annotated[str, Field(strict=True, min_length=1)]] | None = None
    items: Any = None

    @model_validator(mode="before")
    @classmethod
    def _empty(cls, data: Any) -> Any:
        return {} if data is None else data


class ItemIn(_Model):
    """``items.<item>``.

    What the report says of one item (a target's ``table``, else ``source``).
    """

    #: the part of the item the targets check, when they cover only part of it
    #: ("the CART curve only")
    partly: Text = ""
    #: what the item is when it is not the paper's (a project's acceptance check, the authors'
    #: demo): it leaves the paper's item count and is shown apart
    outside_paper: Text = ""


class PaperFile(_Model):
    """A paper file; its ``targets`` are checked one by one (:data:`ENTRIES`, by ``kind``)."""

    paper: str | None = None
    title: str | None = None
    units: Literal["percent", "fraction"] = "fraction"
    defaults: Defaults = Defaults()
    #: without ``defaults.runs``: what the paper says of its runs (which numbers state a run count,
    #: which do not), shown on the page
    runs_unstated: Text = ""
    items: dict[str, ItemIn] = {}
    unavailable: dict[str, Text] = {}
    experiments: dict[str, ExperimentLayout] = {}
    targets: list[Any] = []
    notes: Text = ""
    source: Any = None

    @model_validator(mode="before")
    @classmethod
    def _nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):  # ``key:`` with nothing after it is an empty section
            empty = ("defaults", "unavailable", "experiments", "targets", "items")
            return {k: v for k, v in data.items() if not (k in empty and v is None)}
        return data


def describe(exc: ValidationError) -> list[tuple[str, str]]:
    """``(where, problem)`` per error.

    Where is the field path inside the validated mapping (``lhs.method``,
    ``experiments.e.figures[0]``; empty for the mapping itself).
    """
    out = []
    for e in exc.errors():
        loc = [p for p in e["loc"] if p not in ("number", "selector")]  # union tags
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        where = where.replace(".from_", ".from")
        kind, ctx, got = e["type"], e.get("ctx") or {}, e.get("input")
        if kind in ("value_error", "assertion_error"):
            msg = str(ctx.get("error", e["msg"]))
        elif kind == "missing":
            where, msg = ".".join(where.split(".")[:-1]), f"missing '{loc[-1]}'"
        elif kind == "literal_error":
            msg = f"must be one of {ctx.get('expected')}, got {got!r}"
        elif kind in ("greater_than_equal", "less_than_equal"):
            op = ">=" if kind == "greater_than_equal" else "<="
            msg = f"must be {op} {ctx.get('ge', ctx.get('le'))}, got {got!r}"
        elif kind in ("int_type", "int_parsing", "int_from_float"):
            msg = f"must be an integer, got {got!r}"
        elif kind in ("string_type", "bool_type", "bool_parsing"):
            msg = f"must be a {'string' if kind == 'string_type' else 'boolean'}, got {got!r}"
        elif kind == "string_too_short":
            msg = "must not be empty"
        elif kind in ("dict_type", "model_type", "model_attributes_type"):
            msg = f"must be a mapping, got {got!r}"
        elif kind == "list_type":
            msg = f"must be a list, got {got!r}"
        else:
            msg = f"{e['msg'][0].lower()}{e['msg'][1:]}, got {got!r}"
        out.append((where, msg))
    return out
