"""Malformed, truncated and odd inputs: every error names the file and the line."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from treebench.data import DataContext, DataError
from treebench.data.sources import difer, esl, idx, libsvm, pmlb, uci
from treebench.data.sources._common import read_arff, read_table, unlzw


def _spec(path: Path, rel: str | None = None, sha=True):
    return {
        "url": f"https://example.invalid/{path.name}",
        "path": rel or path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if sha else None,
    }


@pytest.fixture
def ctx(tmp_path):
    return DataContext(tmp_path / "mirror", None, allow_fetch=False, dataset="toy")


def _put(ctx, name: str, data: bytes) -> Path:
    p = Path(ctx.data_dir) / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def test_csv_short_row_names_file_and_line(ctx):
    p = _put(ctx, "t.data", b"1,2,a\n3,4,b\n\n5,6\n7,8,a\n")
    with pytest.raises(DataError, match=r"t\.data, line 4: expected 3 fields, found 2"):
        uci.load({"all": _spec(p)}, "classification", target=-1, ctx=ctx)


def test_csv_long_row_names_file_and_line(ctx):
    p = _put(ctx, "t.data", b"1,2,a\n3,4,b\n5,6,7,a\n")
    with pytest.raises(DataError, match=r"t\.data, line 3: expected 3 fields, found 4"):
        uci.load({"all": _spec(p)}, "classification", target=-1, ctx=ctx)


def test_bad_number_names_line_and_column(ctx):
    p = _put(ctx, "t.data", b"1,2,a\n3,x4,b\n5,6,a\n")
    with pytest.raises(
        DataError, match=r"t\.data, line 2: value 'x4' in column '1' is not a number"
    ):
        uci.load({"all": _spec(p)}, "classification", target=-1, ctx=ctx)


def test_missing_marker_and_categoricals(ctx):
    p = _put(ctx, "t.data", b"1, ?, red, +\n2, 5, ?, -\n3, 6, blue, +\n")
    ds = uci.load({"all": _spec(p)}, "classification", target=-1, categorical=[2], ctx=ctx)
    X = ds.parts["all"].X
    assert list(X.columns) == ["0", "1", "2"] and ds.categorical == ["2"]
    assert np.isnan(X["1"].iloc[0]) and X["2"].isna().iloc[1] and X["2"].iloc[2] == "blue"
    assert ds.meta["classes"] == ["+", "-"] and ds.parts["all"].y.tolist() == [0, 1, 0]


def test_missing_target_is_an_error(ctx):
    p = _put(ctx, "t.data", b"1,2,a\n3,4,?\n")
    with pytest.raises(DataError, match=r"line 2: missing target"):
        uci.load({"all": _spec(p)}, "classification", target=-1, ctx=ctx)


def test_crlf_bom_header_and_skiprows(ctx):
    p = _put(ctx, "c.csv", "\ufeff,X1,X2,Y\r\nID,a,b,y\r\n1,0.5,7,1\r\n2,0.25,8,0\r\n".encode())
    ds = uci.load(
        {"all": _spec(p)},
        "classification",
        target="y",
        header=True,
        skiprows=1,
        drop=["ID"],
        ctx=ctx,
    )
    np.testing.assert_array_equal(ds.parts["all"].X, [[0.5, 7], [0.25, 8]])
    assert ds.parts["all"].y.tolist() == [1, 0]


def test_label_strip_and_numeric_label_order(ctx):
    a = _put(ctx, "a.data", b"1,>50K\n2,<=50K\n")
    b = _put(ctx, "b.data", b"|comment line\n3,>50K.\n4,<=50K.\n")
    ds = uci.load(
        {"train": _spec(a), "test": _spec(b)},
        "classification",
        target=1,
        skiprows={"test": 1},
        label_strip=".",
        ctx=ctx,
    )
    assert ds.meta["classes"] == ["<=50K", ">50K"]
    assert ds.parts["test"].y.tolist() == [1, 0]
    c = _put(ctx, "c.data", b"1,10\n2,9\n3,2\n")
    ds = uci.load({"all": _spec(c)}, "classification", target=1, ctx=ctx)
    assert ds.meta["classes"] == [2, 9, 10]  # numeric, not string, order


def test_value_maps_and_target_bins(ctx):
    p = _put(ctx, "ab.data", b"M,0.1,3\nF,0.2,9\nI,0.3,10\nM,0.4,11\n")
    ds = uci.load(
        {"all": _spec(p)},
        "classification",
        target=-1,
        names=["sex", "x", "rings"],
        value_maps={"sex": {"M": 0, "F": 1, "I": 2}},
        target_bins=[9, 11],
        ctx=ctx,
    )
    np.testing.assert_array_equal(ds.parts["all"].X[:, 0], [0, 1, 2, 0])
    assert ds.parts["all"].y.tolist() == [0, 1, 1, 2]
    q = _put(ctx, "ab2.data", b"M,0.1,3\nX,0.2,9\n")
    with pytest.raises(DataError, match=r"ab2\.data, line 2: value 'X' of column 'sex'"):
        uci.load(
            {"all": _spec(q)},
            "classification",
            target=-1,
            names=["sex", "x", "rings"],
            value_maps={"sex": {"M": 0, "F": 1, "I": 2}},
            target_bins=[9, 11],
            ctx=ctx,
        )


def test_separate_label_file_length_mismatch(ctx):
    x = _put(ctx, "m.data", b"1 2 3 \n4 5 6 \n")
    y = _put(ctx, "m.labels", b"1\n-1\n")
    ds = uci.load(
        {"train": _spec(x)},
        "classification",
        target=-1,
        sep="whitespace",
        labels={"train": _spec(y)},
        ctx=ctx,
    )
    assert ds.parts["train"].X.shape == (2, 3) and ds.meta["classes"] == [-1, 1]
    y2 = _put(ctx, "m2.labels", b"1\n")
    with pytest.raises(DataError, match="has 1 labels but m.data has 2 rows"):
        uci.load(
            {"train": _spec(x)},
            "classification",
            target=-1,
            sep="whitespace",
            labels={"train": _spec(y2)},
            ctx=ctx,
        )


def test_arff_nominal_attributes_are_categorical(ctx):
    text = (
        b"% comment\r\n@RELATION r\r\n@ATTRIBUTE a NUMERIC\r\n@ATTRIBUTE 'b c' {x,y}\r\n"
        b"@ATTRIBUTE class {0,1}\r\n\r\n@DATA\r\n1.5,x,0\r\n2.5,y,1\r\n"
    )
    df, attrs = read_arff(text, "t.arff")
    assert list(df.columns) == ["a", "b c", "class"] and attrs["b c"] == ["x", "y"]
    p = _put(ctx, "t.arff", text)
    ds = uci.load({"all": _spec(p)}, "classification", format="arff", target="class", ctx=ctx)
    assert ds.categorical == ["b c"]
    bad = _put(ctx, "bad.arff", text + b"3.5,x\r\n")
    with pytest.raises(DataError, match=r"bad\.arff, line 10: expected 3 fields, found 2"):
        uci.load({"all": _spec(bad)}, "classification", format="arff", target="class", ctx=ctx)


def test_libsvm_shared_width_and_malformed_line(ctx):
    tr = _put(ctx, "toy", b"1 1:0.5 3:1\n2 2:1\n")
    te = _put(ctx, "toy.t.bz2", bz2.compress(b"1 1:0.25\n"))
    ds = libsvm.load(
        {"train": _spec(tr), "test": _spec(te)}, "classification", n_features=5, ctx=ctx
    )
    assert ds.parts["train"].X.shape == (2, 5) and ds.parts["test"].X.shape == (1, 5)
    np.testing.assert_array_equal(ds.parts["train"].X[0], [0.5, 0, 1, 0, 0])
    bad = _put(ctx, "bad", b"1 1:0.5\n2 2:abc\n1 3:1\n")
    with pytest.raises(DataError, match=r"bad, line 2: malformed"):
        libsvm.load({"all": _spec(bad)}, "classification", n_features=5, ctx=ctx)


def test_truncated_compressed_file(ctx):
    data = gzip.compress(b"".join(b"%d,%d\n" % (i, i % 2) for i in range(20000)))
    p = _put(ctx, "t.csv.gz", data[: len(data) // 2])
    with pytest.raises(DataError, match=r"t\.csv\.gz: cannot decompress.*truncated"):
        uci.load({"all": _spec(p)}, "classification", target=-1, ctx=ctx)


def _idx(arr: np.ndarray) -> bytes:
    head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    return gzip.compress(head + arr.astype(np.uint8).tobytes())


def test_idx_roundtrip_and_truncation(ctx):
    imgs = np.arange(3 * 4 * 4).reshape(3, 4, 4) % 256
    ip = _put(ctx, "i.gz", _idx(imgs))
    lp = _put(ctx, "l.gz", _idx(np.array([1, 0, 1])))
    ds = idx.load(
        {"train": {"images": _spec(ip), "labels": _spec(lp)}}, image_shape=[4, 4], ctx=ctx
    )
    assert ds.parts["train"].X.shape == (3, 16) and ds.parts["train"].X.dtype == np.uint8
    assert ds.image_shape == (4, 4)
    raw = gzip.decompress(ip.read_bytes())
    tp = _put(ctx, "trunc.gz", gzip.compress(raw[:-5]))
    with pytest.raises(DataError, match=r"trunc\.gz: IDX header promises .* truncated"):
        idx.load({"train": {"images": _spec(tp), "labels": _spec(lp)}}, image_shape=[4, 4], ctx=ctx)


def test_esl_pmlb_difer_wrappers(ctx):
    z = _put(ctx, "zip.train.gz", gzip.compress(b"6.0000 -1 0.5 1\n 1.0000 1 1 -1\n"))
    ds = esl.load({"train": _spec(z)}, image_shape=(1, 3), ctx=ctx)
    assert ds.meta["classes"] == [1, 6] and ds.parts["train"].X.shape == (2, 3)
    pm = _put(ctx, "p.tsv.gz", gzip.compress(b"a\tb\ttarget\n1\t2\t0.5\n3\t4\t1.5\n"))
    ds = pmlb.load({"all": _spec(pm)}, "regression", categorical=["a"], ctx=ctx)
    assert ds.categorical == ["a"] and ds.parts["all"].y.tolist() == [0.5, 1.5]
    c = _put(ctx, "d.csv", b"1,2,N\n3,4,Y\n")
    j = _put(ctx, "d.json", b'{"0": "num", "1": "cat", "task": "C"}')
    ds = difer.load({"all": _spec(c)}, _spec(j), "classification", ctx=ctx)
    assert ds.categorical == ["1"] and ds.meta["classes"] == ["N", "Y"]
    with pytest.raises(DataError, match="declares task 'C'"):
        difer.load({"all": _spec(c)}, _spec(j), "regression", ctx=ctx)


def test_zip_member_of_a_distributed_archive(ctx, tmp_path):
    zp = Path(ctx.data_dir) / "a.zip"
    zp.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zp, "w") as zf:
        zf.writestr("dir/full.csv", "x;y\n1;a\n2;b\n")
        zf.writestr("dir/small.csv", "x;y\n1;a\n")
    spec = {**_spec(zp), "zip_member": "dir/full.csv"}
    ds = uci.load({"all": spec}, "classification", target="y", sep=";", header=True, ctx=ctx)
    assert len(ds.parts["all"]) == 2


def test_read_table_whitespace_and_comments():
    df = read_table(b"# head\n  1  2 x\n\n3 4 y\n", "w.txt", sep="whitespace", comment="#")
    assert df.shape == (2, 3) and df.attrs["lines"].tolist() == [2, 4]


def test_unlzw_rejects_non_z():
    with pytest.raises(DataError, match="bad magic"):
        unlzw(b"\x1f\x8bxxxx")


def _compress_9bit(data: bytes) -> bytes:
    """Unix ``compress`` (.Z, block mode) of a short input whose codes all fit in 9 bits."""
    table = {bytes([i]): i for i in range(256)}
    free, codes, w = 257, [], b""
    for c in data:
        wc = w + bytes([c])
        if wc in table:
            w = wc
            continue
        codes.append(table[w])
        table[wc], free, w = free, free + 1, bytes([c])
    codes.append(table[w])
    assert free <= 512, "input too long for 9-bit codes"
    bits = sum(code << (9 * i) for i, code in enumerate(codes))
    return b"\x1f\x9d\x90" + bits.to_bytes((9 * len(codes) + 7) // 8, "little")


@pytest.mark.parametrize("data", [b"1,2,a\n3,4,b\n", b"abababababababab" * 4, bytes(range(40)) * 3])
def test_unlzw_decodes_compress_output(data):
    assert unlzw(_compress_9bit(data)) == data
