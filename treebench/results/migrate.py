"""Records whose ``overrides`` name config files that no longer exist, rewritten to today's names.

A record keeps the overrides that composed it, so that composing them again gives its config and run
key back. Issue #27 merged config files: method variants became ``defaults:`` extensions or experiment
rows, ``*_reduced`` experiments the ``reduced`` profile of their experiment, shards one experiment file.
:func:`migrate_records` rewrites the old names and keeps a rewritten record only if its new overrides
give its stored key again (else :class:`MigrationError`, nothing changed); records without old names
are left as they are, so applying it twice changes nothing. ``treebench ledger migrate`` applies it to
the committed ledger, and :meth:`Ledger.add <treebench.results.ledger.Ledger.add>` to records that
land from a checkout of the old layout.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

_P = "method.params."


def _params(**kw) -> list[str]:
    return [f"{_P}{k}={v}" for k, v in kw.items()]


_ONESTAGE_30 = _params(max_epochs=30)
_REDT_FAST = _params(teacher_params="{n_estimators:30}", n_repeats=1)

#: removed method files -> the method and overrides giving the same resolved parameters
OLD_METHODS: dict[str, list[str]] = {
    "e2edf_reduced": [
        "method=e2edf",
        *_params(n_estimators=3, max_depth=4, max_features=0.5, epochs=3),
    ],
    "hinge_fern_fast": [
        "method=hinge_fern",
        *_params(n_estimators=20, max_depth=5, n_iterations=1500, snapshot_every=100),
    ],
    "hinge_forest_fast": [  # its file set these four parameters only
        "method=hinge_forest",
        "~method.params",
        "+method.params={n_estimators:20,max_depth:5,n_iterations:1500,snapshot_every:100}",
    ],
    "onestage_reduced": ["method=onestage", *_ONESTAGE_30],
    "onestage_joint_reduced": ["method=onestage_joint", *_ONESTAGE_30],
    "onestage_gumbel_reduced": ["method=onestage_gumbel", *_ONESTAGE_30],
    "redt_rf": ["method=redt"],
    "redt_gbdt": ["method=redt", *_params(teacher="gbdt")],
    "redt_mlp": ["method=redt", *_params(teacher="mlp")],
    "redt_lenet": ["method=redt", *_params(teacher="lenet")],
    "redt_rf_fast": ["method=redt", *_REDT_FAST],
    "redt_gbdt_fast": ["method=redt", *_params(teacher="gbdt"), *_REDT_FAST],
    "redt_rf_r1": ["method=redt", *_params(n_repeats=1)],
    "redt_gbdt_r1": ["method=redt", *_params(teacher="gbdt", n_repeats=1)],
    "redt_rf_r1_literal": ["method=redt", *_params(n_repeats=1, pseudo_labels="soft")],
    "redt_mlp_fast": [
        "method=redt",
        *_params(teacher="mlp", teacher_params="{epochs:10,milestones:[4,8]}", alpha=0.2),
    ],
    "redt_base_rf": ["method=rf", *_params(min_samples_leaf=5), f"+{_P}max_features=sqrt"],
    "redt_base_gbdt": ["method=gbdt", *_params(min_samples_leaf=5)],
}

#: the hinge files that held per-dataset tables: (method, overrides, {dataset: overrides})
_UCI_RATES = {"iris": (0.05, 0.5), "abalone": (0.05, 0.3333), "abalone_reg": (0.05, 0.3333)}
_UCI_RATES |= {"har": (0.04, 0.25), "madelon": (0.01, 0.25), "poker": (0.3, 0.25)}
_UCI = (
    [f"{_P}weight_init=bleak", f"~{_P}conv_bn"],
    {d: _params(learning_rate=lr, validation_fraction=v) for d, (lr, v) in _UCI_RATES.items()},
    _params(learning_rate=0.05, validation_fraction=0.25),
)
_T3 = (
    _params(
        aggregation="sum",
        optimizer="adam",
        learning_rate=0.005,
        selection="last",
        validation_fraction=0.0,
        weight_init="bleak",
        conv_bn="position",
    ),
    {
        "letter": _params(snapshot_every=100),
        "usps": _params(batch_size=29, snapshot_every=100),
        "mnist": _params(features="conv", n_features=80),
    },
    [],
)
OLD_DATASET_METHODS = {
    "hinge_fern_uci": ("hinge_fern", *_UCI),
    "hinge_forest_uci": ("hinge_forest", *_UCI),
    "hinge_fern_t3": ("hinge_fern", *_T3),
    "hinge_forest_t3": ("hinge_forest", *_T3),
}
#: experiments whose files set these methods' parameters (all but ``selection``) themselves
_SETS_OWN = {"hinge_fern_t3": "rhf_table3", "hinge_forest_t3": "rhf_table3"}

_IRIS_FOLDS = ["split=kfold5", "split.n_splits=3", "split.n_repeats=5"]
_REDUCED = [
    "e2edf_anneal",
    "e2edf_fig6",
    "e2edt_cnn",
    "e2edt_fig2",
    "onestage_ablation",
    "onestage_depth",
    "onestage_table2",
    "onestage_table3",
    "onestage_table4",
    "onestage_valsize",
    "redt_alpha",
    "redt_table2_3_5",
    "redt_table4",
    "rhf_table2",
    "rhf_table3",
    "tnt_fig4",
    "tnt_table1",
    "tnt_table2",
]
#: removed experiment files -> the experiment (and profile, and what else their file set)
OLD_EXPERIMENTS: dict[str, list[str]] = {
    **{f"{e}_reduced": [f"experiment={e}", "profile=reduced"] for e in _REDUCED},
    **{f"e2edf_anneal_{d}": ["experiment=e2edf_anneal"] for d in ("mnist", "usps")},
    **{f"e2edf_fig6_{d}": ["experiment=e2edf_fig6"] for d in ("mnist", "usps")},
    "e2edt_fig2_cart": ["experiment=e2edt_fig2"],
    **{
        f"rhf_table2_{s}": ["experiment=rhf_table2", "profile=reduced"]
        for s in ("best", "grid", "grid_abalone_reg", "grid_abalone_reg_fern")
    },
    "rhf_table2_best_iris": ["experiment=rhf_table2", "profile=reduced", *_IRIS_FOLDS],
    "rhf_table2_iris": ["experiment=rhf_table2", *_IRIS_FOLDS],
    "rhf_table2_rf": ["experiment=rhf_table2"],
    "rhf_table2_rf_iris": ["experiment=rhf_table2", *_IRIS_FOLDS],
    "rhf_table3_mnist1000": ["experiment=rhf_table3"],
    "tnt_fig4_cart": ["experiment=tnt_fig4"],
    "tnt_fig4_ndg": ["experiment=tnt_fig4"],
    "tnt_table2_connect4": ["experiment=tnt_table2"],
    "tnt_table2_e5e10": ["experiment=tnt_table2"],
}


class MigrationError(ValueError):
    """Rewritten overrides that do not give a record's stored run key; the message lists them."""


def _value(overrides: list[str], key: str) -> str | None:
    for o in overrides:
        if o.startswith(f"{key}="):
            return o.split("=", 1)[1]
    return None


def rewrite(overrides: list[str]) -> list[str]:
    """``overrides`` with removed method and experiment names replaced (unchanged if none)."""
    old_exp = _value(overrides, "experiment")
    new_exp = OLD_EXPERIMENTS.get(old_exp, [f"experiment={old_exp}"])[0].split("=", 1)[1]
    dataset = _value(overrides, "dataset")
    explicit = {o.partition("=")[0] for o in overrides if o.startswith(_P)}

    def method(new: list[str]) -> list[str]:  # the record's own later settings win
        return [x for x in new if x.partition("=")[0] not in explicit]

    out: list[str] = []
    for o in overrides:
        key, _, val = o.partition("=")
        if key == "method" and val in OLD_METHODS:
            out += method(OLD_METHODS[val])
        elif key == "method" and val in OLD_DATASET_METHODS:
            name, common, by_dataset, fallback = OLD_DATASET_METHODS[val]
            if _SETS_OWN.get(val) == new_exp:
                common = [x for x in common if x.startswith(f"{_P}selection=")]
            out += method([f"method={name}", *common, *by_dataset.get(dataset, fallback)])
        elif key == "experiment" and val in OLD_EXPERIMENTS:
            new = OLD_EXPERIMENTS[val]
            has_profile = any(x.startswith("profile=") for x in overrides)
            out += [x for x in new if not (has_profile and x.startswith("profile="))]
        else:
            out.append(o)
    return out


def recompute_keys(records: Iterable[dict]) -> dict[str, str]:
    """The run key composed from each record's ``overrides`` (by stored key); one composition per
    override set minus ``seed=``, in one Hydra context."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from treebench.config import CONF_DIR
    from treebench.runner import Job
    from treebench.schema import register_schema

    groups: dict[tuple, list[dict]] = defaultdict(list)
    for rec in records:
        groups[tuple(o for o in rec["overrides"] if not o.startswith("seed="))].append(rec)
    if not groups:
        return {}
    register_schema()
    GlobalHydra.instance().clear()
    out = {}
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            for overrides, recs in groups.items():
                cfg = compose("config", overrides=list(overrides))
                for rec in recs:
                    out[rec["key"]] = Job.from_config(cfg, rec["seed"]).key(rec["fold"])
    finally:
        GlobalHydra.instance().clear()
    return out


def migrate_records(records: Iterable[dict]) -> tuple[list[dict], int]:
    """``records`` with old config names in their overrides rewritten, and how many were.

    Raises
    ------
    MigrationError
        If the rewritten overrides of any record compose to another run key (nothing is returned).
    """
    records = list(records)
    changed = {}
    for i, rec in enumerate(records):
        if rec.get("overrides"):
            new = rewrite(list(rec["overrides"]))
            if new != rec["overrides"]:
                changed[i] = {**rec, "overrides": new}
    if not changed:
        return records, 0
    keys = recompute_keys(changed.values())
    wrong = [
        f"{r['key']} ({r.get('experiment')}: {' '.join(records[i]['overrides'])}) -> {keys[r['key']]}"
        for i, r in changed.items()
        if keys[r["key"]] != r["key"]
    ]
    if wrong:
        raise MigrationError(
            f"{len(wrong)} record(s) whose rewritten overrides give another run key (nothing "
            "changed):\n  " + "\n  ".join(wrong)
        )
    return [changed.get(i, rec) for i, rec in enumerate(records)], len(changed)
