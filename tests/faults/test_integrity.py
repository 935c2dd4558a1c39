"""Integrity of what treebench derives and reads back.

The parsed-data cache, checkpoints, and the configs a record replays. Nothing crafted runs; anything
changed is detected and rebuilt.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import warnings

import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.conftest import compose_config
from treebench.data import DataContext, load_dataset
from treebench.inspect.show import RefitError, refit_record
from treebench.methods.checkpoint import Checkpoint
from treebench.runner import Job


class _Evil:
    """Unpickling it creates the directory ``path``: proof that a file ran code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.makedirs, (self.path,))


@pytest.fixture
def toy(tmp_path):
    """Return a LIBSVM dataset in a local mirror: its config and a data context over it."""
    rng = np.random.RandomState(0)
    lines = [f"{int(x[0] + x[1] > 0)} 1:{x[0]:.4f} 2:{x[1]:.4f}" for x in rng.normal(size=(300, 2))]
    raw = ("\n".join(lines) + "\n").encode()
    (tmp_path / "m" / "libsvm").mkdir(parents=True)
    (tmp_path / "m" / "libsvm" / "toy").write_bytes(raw)
    spec = {"url": "https://example.invalid/toy", "path": "libsvm/toy"}
    spec["sha256"] = hashlib.sha256(raw).hexdigest()
    cfg = OmegaConf.create(
        {
            "name": "toy",
            "task": "classification",
            "loader": {
                "_target_": "treebench.data.sources.libsvm.load",
                "n_features": 2,
                "files": {"all": spec},
            },
        }
    )
    return cfg, DataContext(tmp_path / "cache", str(tmp_path / "m"), allow_fetch=False)


def _entry(ctx):
    """Return the cache entry's path without suffix (``parsed/toy-<key>``), of either format."""
    (p,) = {p.with_suffix("") for p in (ctx.data_dir / "parsed").glob("toy-*")}
    return p


def _same(a, b):
    for k in a.parts:
        np.testing.assert_array_equal(a.parts[k].y, b.parts[k].y)
        np.testing.assert_array_equal(np.asarray(a.parts[k].X), np.asarray(b.parts[k].X))


def test_a_crafted_pickle_in_the_parsed_cache_never_runs(toy, tmp_path):
    cfg, ctx = toy
    fresh = load_dataset(cfg, ctx)
    stem = _entry(ctx)
    marker = tmp_path / "code-ran"
    crafted = pickle.dumps(_Evil(marker))
    for suffix in (".pkl", ".npz"):  # the old format's name and the new one's
        stem.with_name(stem.name + suffix).write_bytes(crafted)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        again = load_dataset(cfg, ctx)
    assert not marker.exists(), "the cache ran code"
    _same(fresh, again)


def test_a_tampered_parsed_cache_is_detected_and_rebuilt(toy):
    cfg, ctx = toy
    fresh = load_dataset(cfg, ctx)
    npz = _entry(ctx).with_name(_entry(ctx).name + ".npz")
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["all.y"] = np.random.RandomState(1).permutation(arrays["all.y"])  # labels permuted
    np.savez(npz, **arrays)
    with pytest.warns(UserWarning, match="do not match their recorded sha256"):
        again = load_dataset(cfg, ctx)
    _same(fresh, again)
    data = bytearray(npz.read_bytes())  # rebuilt: now 40 flipped bits
    for i in np.random.RandomState(2).choice(len(data), 40, replace=False):
        data[i] ^= 1 << int(i % 8)
    npz.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="parsed-data cache"):
        _same(fresh, load_dataset(cfg, ctx))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rebuilt again: served silently now
        _same(fresh, load_dataset(cfg, ctx))


def test_a_crafted_checkpoint_never_runs(tmp_path):
    from treebench.methods.checkpoint import _SafeUnpickler

    torch = pytest.importorskip("torch")
    marker = tmp_path / "code-ran"
    path = tmp_path / "k.pt"
    buf = io.BytesIO()
    torch.save({"format": 1, "identity": {}, "state": _Evil(marker)}, buf)
    path.write_bytes(buf.getvalue())
    with pytest.warns(UserWarning, match="unreadable"):
        assert Checkpoint(path).load({}) is None
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):  # the path without torch
        _SafeUnpickler(io.BytesIO(pickle.dumps(_Evil(marker)))).load()
    assert not marker.exists()
    rs = np.random.RandomState(3)
    state = {"rng": rs.get_state(), "W": np.ones((2, 2), np.float32), "x": np.float64(1.5)}
    got = _SafeUnpickler(io.BytesIO(pickle.dumps(state))).load()  # arrays and RNG states pass
    np.testing.assert_array_equal(got["rng"][1], state["rng"][1])
    assert got["x"] == 1.5


def test_a_record_naming_an_unknown_target_is_not_refitted(tmp_path):
    marker = tmp_path / "code-ran"
    overrides = [
        "method=bagged_cart",
        "dataset=iris",
        f"method.params.estimator={{_target_:os.makedirs,name:{marker}}}",
    ]
    job = Job.from_config(compose_config(overrides))
    rec = {  # crafted with the run key its overrides compose to
        "key": job.key(0),
        "status": "ok",
        "experiment": "adhoc",
        "method": job.method,
        "dataset": job.dataset,
        "task": "classification",
        "seed": 0,
        "fold": 0,
        "params": job.params,
        "split": str(job.split),
        "overrides": overrides,
        "metrics": {"test_accuracy": 1.0},
    }
    with pytest.raises(RefitError, match="os.makedirs"):
        refit_record(rec)
    with pytest.raises(RefitError, match="os.makedirs"):
        refit_record({**rec, "overrides": None})
    assert not marker.exists()
