"""The download primitive end to end against a local HTTP server.

Mirror mapping, checksums, retries after a cut transfer, server errors, no partial files, archive
members, concurrency.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from treebench.data import DataContext, DatasetUnavailableError
from treebench.data.cache import ChecksumError, RemoteFile, ensure_file, mirror_url, sources

PAYLOAD = b"".join(b"%d 1:%d 2:%d\n" % (i % 3, i, i * 2) for i in range(5000))
SHA = hashlib.sha256(PAYLOAD).hexdigest()


def _ctx(tmp_path, mirror=None, allow=True, dataset="toy"):
    return DataContext(
        tmp_path / "cache", mirror, allow_fetch=allow, dataset=dataset, log=lambda m: None
    )


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob(".part-*")]


def test_mirror_url_quotes_spaces():
    assert (
        mirror_url("http://h/base/", "uci/eeg/EEG Eye State.arff")
        == "http://h/base/uci/eeg/EEG%20Eye%20State.arff"
    )
    rf = RemoteFile("https://up/x", "a/x", None)
    assert sources(rf, "http://m") == ["http://m/a/x", "https://up/x"]
    assert sources(rf, "/some/dir") == ["https://up/x"]  # a local mirror is read in place


def test_download_from_mirror_url(tmp_path, http_server):
    srv, base = http_server
    srv.files["/m/libsvm/toy.txt"] = PAYLOAD
    rf = RemoteFile("http://127.0.0.1:9/unreachable/toy.txt", "libsvm/toy.txt", SHA)
    path = ensure_file(rf, _ctx(tmp_path, mirror=base + "/m"))
    assert path == tmp_path / "cache" / "libsvm" / "toy.txt"
    assert path.read_bytes() == PAYLOAD
    assert srv.hits["/m/libsvm/toy.txt"] == 1
    # second call: served from the cache, no request
    ensure_file(rf, _ctx(tmp_path, mirror=base + "/m"))
    assert srv.hits["/m/libsvm/toy.txt"] == 1
    assert not _leftovers(tmp_path)


def test_upstream_used_when_mirror_lacks_file(tmp_path, http_server):
    srv, base = http_server
    srv.files["/up/toy.txt"] = PAYLOAD
    rf = RemoteFile(base + "/up/toy.txt", "libsvm/toy.txt", SHA)
    path = ensure_file(rf, _ctx(tmp_path, mirror=base + "/m"))
    assert path.read_bytes() == PAYLOAD
    assert srv.hits.get("/m/libsvm/toy.txt") == 1  # 404 from the mirror, then upstream


def test_corrupted_download_rejected_and_nothing_left(tmp_path, http_server):
    srv, base = http_server
    srv.files["/up/toy.txt"] = PAYLOAD
    srv.modes["/up/toy.txt"] = "corrupt"
    rf = RemoteFile(base + "/up/toy.txt", "libsvm/toy.txt", SHA)
    with pytest.raises(DatasetUnavailableError, match="checksum mismatch for libsvm/toy.txt"):
        ensure_file(rf, _ctx(tmp_path), retries=2, backoff=0)
    assert not (tmp_path / "cache" / "libsvm" / "toy.txt").exists()
    assert not _leftovers(tmp_path)
    assert srv.hits["/up/toy.txt"] == 1  # a wrong checksum is not retried from the same URL


def test_cut_transfer_is_retried(tmp_path, http_server):
    srv, base = http_server
    srv.files["/up/toy.txt"] = PAYLOAD
    srv.modes["/up/toy.txt"] = "cut_once"
    rf = RemoteFile(base + "/up/toy.txt", "libsvm/toy.txt", SHA)
    path = ensure_file(rf, _ctx(tmp_path), retries=3, backoff=0)
    assert path.read_bytes() == PAYLOAD
    assert srv.hits["/up/toy.txt"] == 2
    assert not _leftovers(tmp_path)


@pytest.mark.parametrize("mode", ["cut", "500"])
def test_failing_server_leaves_no_partial_file(tmp_path, http_server, mode):
    srv, base = http_server
    srv.files["/up/toy.txt"] = PAYLOAD
    srv.modes["/up/toy.txt"] = mode
    rf = RemoteFile(base + "/up/toy.txt", "libsvm/toy.txt", SHA)
    with pytest.raises(DatasetUnavailableError, match="could not download libsvm/toy.txt"):
        ensure_file(rf, _ctx(tmp_path), retries=2, backoff=0)
    assert srv.hits["/up/toy.txt"] == 2
    assert not (tmp_path / "cache" / "libsvm" / "toy.txt").exists()
    assert not _leftovers(tmp_path)


def test_corrupted_cache_file_is_refetched(tmp_path, http_server):
    srv, base = http_server
    srv.files["/up/toy.txt"] = PAYLOAD
    target = tmp_path / "cache" / "libsvm" / "toy.txt"
    target.parent.mkdir(parents=True)
    target.write_bytes(PAYLOAD[:-10] + b"garbage!!\n")
    messages = []
    ctx = DataContext(tmp_path / "cache", None, dataset="toy", log=messages.append)
    path = ensure_file(RemoteFile(base + "/up/toy.txt", "libsvm/toy.txt", SHA), ctx)
    assert path.read_bytes() == PAYLOAD
    assert any("checksum mismatch" in m for m in messages)


def test_local_mirror_used_in_place_and_verified(tmp_path):
    mdir = tmp_path / "mirror"
    (mdir / "libsvm").mkdir(parents=True)
    (mdir / "libsvm" / "toy.txt").write_bytes(PAYLOAD)
    rf = RemoteFile("https://example.invalid/toy.txt", "libsvm/toy.txt", SHA)
    assert ensure_file(rf, _ctx(tmp_path, mirror=str(mdir), allow=False)) == mdir / "libsvm/toy.txt"
    (mdir / "libsvm" / "toy.txt").write_bytes(PAYLOAD + b"x")
    with pytest.raises(ChecksumError, match="expected sha256"):
        ensure_file(rf, _ctx(tmp_path, mirror=str(mdir), allow=False))


def test_absent_without_fetch_names_the_command(tmp_path):
    rf = RemoteFile("https://example.invalid/toy.txt", "libsvm/toy.txt", SHA)
    with pytest.raises(DatasetUnavailableError, match=r"`treebench fetch dataset=toy`"):
        ensure_file(rf, _ctx(tmp_path, allow=False))


def test_archive_member_extracted_and_verified(tmp_path, http_server):
    srv, base = http_server
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("Data Set/train.txt", PAYLOAD)
        zf.writestr("Data Set/other.txt", b"1 2 3\n")
    srv.files["/up/Data%20Set.zip"] = buf.getvalue()
    url = base + "/up/Data%20Set.zip"
    rf = RemoteFile(url, "uci/ds/train.txt", SHA, member="Data Set/train.txt")
    path = ensure_file(rf, _ctx(tmp_path))
    assert path.read_bytes() == PAYLOAD
    other = RemoteFile(url, "uci/ds/other.txt", None, member="Data Set/other.txt")
    assert ensure_file(other, _ctx(tmp_path)).read_bytes() == b"1 2 3\n"
    assert srv.hits["/up/Data%20Set.zip"] == 1  # the archive is downloaded once
    bad = RemoteFile(url, "uci/ds/missing.txt", None, member="Data Set/missing.txt")
    with pytest.raises(DatasetUnavailableError, match="has no member"):
        ensure_file(bad, _ctx(tmp_path), retries=1)


def test_concurrent_fetch_from_two_processes(tmp_path, http_server):
    """Two processes load the same two-file dataset from a slow server.

    Every file is downloaded once, both processes get identical data, and no partial file or cache
    entry is left.
    """
    srv, base = http_server
    test_part = b"".join(b"%d 1:%d\n" % (i % 3, i) for i in range(300))
    srv.files["/m/libsvm/toy"] = PAYLOAD
    srv.files["/m/libsvm/toy.t"] = test_part
    for k in srv.files:
        srv.modes[k] = "slow"
    files = {
        "train": {"url": "https://example.invalid/toy", "path": "libsvm/toy", "sha256": SHA},
        "test": {
            "url": "https://example.invalid/toy.t",
            "path": "libsvm/toy.t",
            "sha256": hashlib.sha256(test_part).hexdigest(),
        },
    }
    repo = Path(__file__).resolve().parents[2]
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(repo)!r})
        from pathlib import Path
        from omegaconf import OmegaConf
        from treebench.data import DataContext, load_dataset
        cfg = OmegaConf.create({{"name": "toy", "task": "classification", "loader": {{
            "_target_": "treebench.data.sources.libsvm.load", "n_features": 2,
            "files": {files!r}}}}})
        ctx = DataContext(Path({str(tmp_path / "cache")!r}), {base + "/m"!r})
        ds = load_dataset(cfg, ctx)
        print(len(ds.parts["train"]), len(ds.parts["test"]), float(ds.parts["train"].X.sum()))
    """)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, errtext) in zip(procs, outs, strict=True):
        assert p.returncode == 0, errtext
    assert outs[0][0] == outs[1][0] and outs[0][0].split()[:2] == ["5000", "300"]
    assert hashlib.sha256((tmp_path / "cache/libsvm/toy").read_bytes()).hexdigest() == SHA
    assert srv.hits == {"/m/libsvm/toy": 1, "/m/libsvm/toy.t": 1}
    assert not _leftovers(tmp_path)
    assert len(list((tmp_path / "cache" / "parsed").glob("toy-*.npz"))) == 1


def test_dataset_end_to_end_through_http_mirror(tmp_path, http_server, mirror):
    """load_dataset(letter_libsvm) with the mirror served over HTTP, then again offline."""
    from omegaconf import OmegaConf

    from treebench.data import load_dataset

    srv, base = http_server
    cfg = OmegaConf.load(
        Path(__file__).resolve().parents[2] / "treebench/conf/dataset/letter_libsvm.yaml"
    )
    for spec in cfg.loader.files.values():
        f = mirror / spec.path
        if not f.is_file():
            pytest.skip(f"not in mirror: {spec.path}")
        srv.files["/mirror/" + spec.path] = f.read_bytes()
    ds = load_dataset(cfg, _ctx(tmp_path, mirror=base + "/mirror"))
    assert {k: len(p) for k, p in ds.parts.items()} == {"train": 10500, "val": 4500, "test": 5000}
    again = load_dataset(cfg, _ctx(tmp_path, allow=False))  # now from the cache, no network
    assert len(again.parts["test"]) == 5000
    assert sum(srv.hits.values()) == 3


def test_har_config_members_from_upstream_zip(tmp_path, http_server):
    """The har config (not mirrored) end to end: its four members come out of one upstream zip."""
    from omegaconf import OmegaConf

    from treebench.data import load_dataset

    srv, base = http_server
    rs = __import__("numpy").random.RandomState(0)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for part, n in (("train", 40), ("test", 12)):
            rows = "\n".join("  " + " ".join(f"{v:.7e}" for v in rs.randn(561)) for _ in range(n))
            zf.writestr(f"UCI HAR Dataset/{part}/X_{part}.txt", rows + "\n")
            zf.writestr(
                f"UCI HAR Dataset/{part}/y_{part}.txt", "".join(f"{1 + i % 6}\n" for i in range(n))
            )
    srv.files["/har.zip"] = buf.getvalue()
    cfg = OmegaConf.load(Path(__file__).resolve().parents[2] / "treebench/conf/dataset/har.yaml")
    for node in (*cfg.loader.files.values(), *cfg.loader.labels.values()):
        assert node.url.endswith("UCI%20HAR%20Dataset.zip") and node.sha256 is None
        node.url = base + "/har.zip"
    ds = load_dataset(cfg, _ctx(tmp_path))
    assert ds.parts["train"].X.shape == (40, 561) and ds.parts["test"].X.shape == (12, 561)
    assert ds.meta["classes"] == [1, 2, 3, 4, 5, 6]
    assert srv.hits["/har.zip"] == 1
    from treebench.data.splits import Given

    (fold,) = Given(val_size=10, stratify=False).folds(ds, seed=0)
    assert (len(fold.train_proper), len(fold.val), len(fold.test)) == (30, 10, 12)


def test_read_only_or_full_cache_gives_a_clear_error(tmp_path, monkeypatch):
    import errno

    from treebench.data import cache
    from treebench.data.base import DataError

    class Ctx:
        data_dir = tmp_path / "cache"
        mirror = None
        allow_fetch = True
        dataset = "demo"

    spec = {"url": "http://127.0.0.1:9/nothing.csv", "path": "uci/demo/nothing.csv", "sha256": None}
    for code, word in ((errno.EROFS, "not writable"), (errno.ENOSPC, "is full")):

        def fail(*_a, _code=code, **_k):
            raise OSError(_code, "simulated")

        monkeypatch.setattr(cache, "_download", fail)
        with pytest.raises(DataError, match=word) as info:
            cache.ensure_file(spec, Ctx, retries=1, backoff=0)
        assert "TREEBENCH_DATA_DIR" in str(info.value)
        assert not list((tmp_path / "cache").rglob("nothing.csv*"))


def test_missing_file_without_a_mirror_names_the_mirror_setting(tmp_path):
    rf = RemoteFile("https://example.org/up/toy.txt", "libsvm/toy.txt", SHA)
    with pytest.raises(DatasetUnavailableError) as exc:
        ensure_file(rf, _ctx(tmp_path, allow=False))
    msg = str(exc.value)
    assert "no mirror is set (TREEBENCH_MIRROR" in msg and "treebench fetch dataset=toy" in msg
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(DatasetUnavailableError, match=f"nor in the mirror \\({mirror}\\)"):
        ensure_file(rf, _ctx(tmp_path, mirror=str(mirror), allow=False))
