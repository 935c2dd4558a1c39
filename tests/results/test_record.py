"""The record's definition (treebench.results.record) and its check by format version."""

import ast
import gzip
import json
import typing
from pathlib import Path

import pytest

import treebench
from tests.conftest import REPO, compose_config
from treebench.data import DataContext
from treebench.results import Ledger, Store
from treebench.results.record import (
    BY_STATUS,
    FORMAT_FIELD,
    RECORD_FORMAT,
    OkRecord,
    Record,
    record_format,
)
from treebench.results.validate import RecordError, record_problem
from treebench.runner import job_keys, run_job

PACKAGE = Path(treebench.__file__).parent


@pytest.fixture(scope="module")
def cart_record(tmp_path_factory):
    """Return a record the runner writes now (CART on iris, fold 0)."""
    root = tmp_path_factory.mktemp("record")
    cfg = compose_config(["method=cart", "dataset=iris", "seed=0", "threads=1", "fold=0"])
    store = Store(root / "store")
    run_job(cfg, store, DataContext(root / "data", None, True), log=lambda m: None)
    (key,) = job_keys(cfg)
    return json.loads(store.path(key).read_text())


def test_the_runner_writes_the_current_format_with_every_field_declared(cart_record):
    assert cart_record[FORMAT_FIELD] == RECORD_FORMAT and record_format(cart_record) == 2
    assert record_problem(cart_record, cart_record["key"]) is None
    declared = set(typing.get_type_hints(OkRecord))
    assert set(cart_record) <= declared  # the definition names every field the runner writes
    assert OkRecord.__required_keys__ <= set(cart_record)
    prov = typing.get_type_hints(OkRecord)["provenance"]
    assert set(cart_record["provenance"]) == prov.__required_keys__


def test_the_committed_ledger_is_version_1_read_as_is():
    """Its records carry no version and pass the check; reading does not rewrite a file."""
    led = Ledger(REPO / "results")
    before = {p.name: p.read_bytes() for p in led.files()}
    n = 0
    for p in led.files():
        with gzip.open(p, "rb") as f:
            for line in f:
                rec = json.loads(line)
                assert FORMAT_FIELD not in rec and record_format(rec) == 1
                n += 1
    assert len(led) == n and not led.problems
    assert {p.name: p.read_bytes() for p in led.files()} == before


def _minimal(status: str) -> dict:
    result = {"ok": {"metrics": {"test_accuracy": 0.9}}, "skipped": {"reason": "one class"}}
    return {"key": "k" * 24, "status": status, **result.get(status, {"error": "E: x"})}


@pytest.mark.parametrize("status", list(BY_STATUS))
def test_version_1_needs_its_result_and_version_2_every_required_field(status):
    rec = _minimal(status)
    assert record_problem(rec) is None
    why = record_problem({**rec, FORMAT_FIELD: 2})
    assert why.startswith(f"{status} record without ") and "dataset" in why


@pytest.mark.parametrize(
    ("change", "reason", "full"),
    [
        ({"seed": "0"}, "field 'seed' is str '0', not int", False),
        ({"seed": True}, "field 'seed' is bool True, not int", False),
        ({"metrics": {"test_accuracy": "0.9"}}, "metrics['test_accuracy'] is not a number", False),
        ({"size": {"n_leaves": [3]}}, "size['n_leaves'] is not a number", False),
        ({FORMAT_FIELD: 3}, "upgrade treebench", False),
        ({FORMAT_FIELD: "2"}, "not a format version", False),
        ({"status": "done"}, "status 'done' is not one of ok, skipped, failed", False),
        # a read leaves the fields no count or table uses to the write's full check
        ({"provenance": {"host": 3}}, "provenance: field 'host' is int 3, not str", True),
        ({"overrides": ["seed=0", 1]}, "overrides[1] is not str: 1", True),
        ({"tuning": {"cv": {"n_splits": "5"}}}, "tuning: cv: field 'n_splits' is str", True),
    ],
)
def test_a_field_of_another_type_is_named(change, reason, full):
    rec = {**_minimal("ok"), **change}
    assert reason in record_problem(rec, full=True)
    assert (record_problem(rec) is None) == full


def test_version_1_may_have_nulls_version_2_may_not(cart_record):
    assert record_problem({**_minimal("ok"), "wall_seconds": None, "n_train": None}) is None
    why = record_problem({**cart_record, "wall_seconds": None})
    assert why == "field 'wall_seconds' is NoneType None, not a number"
    prov = {k: v for k, v in cart_record["provenance"].items() if k != "git_sha"}
    assert (
        record_problem({**cart_record, "provenance": prov}, full=True) == "provenance: no git_sha"
    )
    assert record_problem({**cart_record, "info": {"x": None}, "provenance": {}}) is None  # read
    assert record_problem({k: v for k, v in cart_record.items() if k != "info"}).startswith(
        "ok record without info"
    )


def test_the_store_refuses_to_write_a_record_it_could_not_read_back(tmp_path, cart_record):
    store = Store(tmp_path / "store")
    bad = {**cart_record, "n_train": 1.5}
    with pytest.raises(RecordError, match=r"not written to .*: field 'n_train' is float 1.5"):
        store.write(bad)
    assert not store.path(bad["key"]).exists() and not list(store.root.rglob("*.json"))
    store.write(cart_record)
    assert store.get(cart_record["key"]) == cart_record


def _record_params(fn: ast.FunctionDef) -> set[str]:
    """Return the parameters of ``fn`` annotated as a record (``Record``, ``OkRecord`` ...)."""
    names = set()
    for a in fn.args.args + fn.args.kwonlyargs:
        text = ast.unparse(a.annotation) if a.annotation is not None else ""
        if "Record" in text.replace("RecordError", ""):
            names.add(a.arg)
    return names


def _fields_read(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    """Return the string keys ``fn`` reads from ``names`` (``rec["x"]``, ``rec.get("x")``)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id in names and isinstance(node.slice, ast.Constant):
                out.add(node.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in names
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            out.add(node.args[0].value)
    return out


def test_readers_of_a_typed_record_read_declared_fields():
    """A function taking a ``Record`` reads only fields the definition names.

    A typo or a field added without declaring it fails here.
    """
    declared = set().union(*(typing.get_type_hints(td) for td in typing.get_args(Record)))
    seen, unknown = 0, []
    for path in sorted(PACKAGE.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                names = _record_params(fn)
                if not names:
                    continue
                seen += 1
                read = _fields_read(fn, names)
                unknown += [f"{path.name}:{fn.name} reads {f!r}" for f in read - declared]
    assert seen >= 8, seen  # the store, ledger, table and runner readers are annotated
    assert not unknown, unknown
