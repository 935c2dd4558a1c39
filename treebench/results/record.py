"""The run record, defined once: its parts as TypedDicts, its format version, and its field groups.

A record is the JSON object the runner writes per (job, fold) to the store and ``treebench ledger
add`` copies into the ledger; it stays a plain ``dict`` in memory (no conversion when 10,000 are
read, the ledger's bytes unchanged), and these TypedDicts say which fields it has, of which type.
:mod:`treebench.results.validate` checks a record against them when it is read or written.

Format versions (``record_format``)
-----------------------------------
1
    Every record written before the field existed: it has none, and it is read as it is (the
    committed ledger is never rewritten). Checked as such records always were: ``key``,
    ``status`` and the status's own result (``metrics``, ``reason`` or ``error``) are required,
    and the identity fields, the times, the metrics and the size, where present, have their
    types below (or are null): :data:`READ_CHECKED`.
2
    Written from now on: ``record_format: 2`` and every field its status class marks required.
    A write checks every field's type (nested parts too); a read checks that the required
    fields are there and that those of :data:`READ_CHECKED` are of their types.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from real annotations
from typing import Any, Literal, NotRequired, TypedDict

#: the format version this code writes; a record without ``record_format`` is version 1
RECORD_FORMAT = 2
FORMAT_FIELD = "record_format"
STATUSES = ("ok", "skipped", "failed")
DONE_STATUSES = ("ok", "skipped")


class Provenance(TypedDict):
    """Where and when a record was made (``provenance``)."""

    treebench_version: str
    finished_at: str
    host: str
    git_sha: NotRequired[str | None]
    python: NotRequired[str]
    packages: NotRequired[dict[str, str]]
    started_at: NotRequired[str]
    recorded_by: NotRequired[str]  # a record the SLURM driver wrote for a run a job lost


class RunProvenance(Provenance):
    """The provenance of a record the runner wrote (what was installed, from which commit)."""

    git_sha: str | None
    python: str
    packages: dict[str, str]
    started_at: str


class CrossValidation(TypedDict):
    """The folds a search scored its candidates on (``tuning.cv``): the training part only."""

    splitter: str
    n_splits: int
    shuffle: bool
    random_state: int | None
    on: str


class Tuning(TypedDict):
    """A tuned run's search (``tuning``, :func:`treebench.tuning.tune_fit`)."""

    strategy: str
    search_cv: str
    n_candidates: int
    factor: float | None
    cv: CrossValidation
    scoring: str
    space: dict[str, Any]
    best_params: dict[str, Any]
    best_score: float | None
    candidates: dict[str, Any]
    n_failed: int
    seconds: float


class Reference(TypedDict):
    """The size-matched baseline fitted beside the method (``reference``).

    See :func:`treebench.runner.fit_reference`.
    """

    method: str
    match: dict[str, str]
    measure: NotRequired[str]
    params: dict[str, Any]
    metrics: dict[str, float]
    size: dict[str, float]
    fit_seconds: float


#: where a resumed fit went on from, and what the attempts before it spent (``resumed``); the
#: functional form because ``from`` is a Python keyword
Resumed = TypedDict("Resumed", {"from": dict[str, Any], "earlier": NotRequired[dict[str, float]]})


class Checkpoints(TypedDict):
    """The checkpoints a resumable fit saved (``checkpoints``)."""

    saves: int
    seconds: float


class Cluster(TypedDict, total=False):
    """The SLURM job a lost run's ``failed`` record names (``cluster``, :mod:`treebench.slurm`)."""

    scheduler: str
    job_id: str
    state: str
    reason: str | None
    timeout_min: float | None
    time_limit: str | None
    sweep_dir: str | None


class _Identity(TypedDict):
    """What every record says it is: the run key and the job (method, dataset, seed, fold)."""

    key: str
    record_format: int
    status: str
    experiment: str
    method: str
    dataset: str
    seed: int
    fold: int
    # plan labels: other experiments holding the same run key, and the full plans of such
    also_experiments: NotRequired[list[str]]
    full_plan_of: NotRequired[list[str]]
    # the profile a copy filed under such a full plan ran under (never stored:
    # :func:`treebench.results.table.per_experiment` sets it on the table's copies)
    ran_profile: NotRequired[str]


class _Job(_Identity):
    """The fields of a record the runner wrote (:func:`treebench.runner.base_record`)."""

    profile: str
    task: str
    params: dict[str, Any]
    split: str
    overrides: list[str] | None
    provenance: RunProvenance
    wall_seconds: float
    cpu_seconds: float
    resumed: NotRequired[Resumed]
    checkpoints: NotRequired[Checkpoints]


class OkRecord(_Job):
    """A run that fitted and was measured (:func:`treebench.runner.run_fold`)."""

    status: Literal["ok"]
    metrics: dict[str, float]
    size: dict[str, float]
    info: dict[str, Any]
    split_id: str
    n_train: int
    n_test: int
    n_val: int
    n_features: int
    n_classes: int | None
    fit_seconds: float
    compile_seconds: float
    predict_seconds: float
    threads: int
    method_seed: int
    eval_set_in_fit: bool
    resolved_params: dict[str, str]
    tuning: NotRequired[Tuning]
    reference: NotRequired[Reference]
    model_path: NotRequired[str]  # with save_model=true (a local field: not in the ledger)
    model_error: NotRequired[str]


class SkippedRecord(_Job):
    """A run that could not run for a recorded reason (a task the method lacks, one class)."""

    status: Literal["skipped"]
    reason: str


class FailedRecord(_Identity):
    """A run that raised (the runner's record) or that a SLURM job lost (the driver's)."""

    status: Literal["failed"]
    error: str
    traceback: NotRequired[str]
    provenance: NotRequired[Provenance]
    cluster: NotRequired[Cluster]
    # the runner's failed record also has the job's fields (:class:`_Job`), unchecked here
    profile: NotRequired[str]
    task: NotRequired[str]
    params: NotRequired[dict[str, Any]]
    split: NotRequired[str]
    overrides: NotRequired[list[str] | None]
    wall_seconds: NotRequired[float]
    cpu_seconds: NotRequired[float]


#: a record of any status
Record = OkRecord | SkippedRecord | FailedRecord
#: the TypedDict of each status
BY_STATUS: dict[str, type] = {"ok": OkRecord, "skipped": SkippedRecord, "failed": FailedRecord}
#: the fields that say which run a record is (every record has them)
IDENTITY_FIELDS = tuple(sorted(_Identity.__required_keys__))
#: what a version-1 record must hold besides ``key`` and ``status``: its status's result
VERSION1_RESULT = {"ok": "metrics", "skipped": "reason", "failed": "error"}
#: the fields whose types a read checks (what counts, tables and summaries compute with); a
#: write checks every field
READ_CHECKED = (
    *("key", "status", "experiment", "method", "dataset", "seed", "fold", "metrics", "size"),
    *("reason", "error", "wall_seconds", "cpu_seconds", "fit_seconds", "predict_seconds"),
)
#: what must agree for two records of one key to be the same result (``Ledger.add``)
RESULT_FIELDS = ("status", "metrics", "size")
#: fields that only make sense on the machine that wrote them (left out of the ledger)
LOCAL_FIELDS = ("model_path",)


def record_format(rec: dict) -> int:
    """Return the format version of a parsed record: its ``record_format``, else 1."""
    return rec.get(FORMAT_FIELD, 1)


def profile_of_record(rec: dict) -> str:
    """Return the profile a record was made under; ``full`` when it has none.

    Records made before profiles have none.
    """
    p = rec.get("profile")
    return p if isinstance(p, str) and p else "full"
