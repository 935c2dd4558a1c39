"""MNIST-style IDX files (``train-images-idx3-ubyte.gz`` ...): MNIST and Fashion-MNIST."""

from __future__ import annotations

import numpy as np

from treebench.data.base import DataError, Dataset
from treebench.data.sources._common import assemble, cached, read_bytes, resolve

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(data: bytes, label: str) -> np.ndarray:
    """Parse one IDX array (big-endian header: 0, 0, dtype code, ndim; then the dims)."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise DataError(f"{label}: not an IDX file (bad magic {data[:4].hex()})")
    ndim = data[3]
    dims = np.frombuffer(data, dtype=">u4", count=ndim, offset=4).astype(np.int64)
    dtype = np.dtype(_DTYPES[data[2]])
    need = int(np.prod(dims)) * dtype.itemsize
    off = 4 + 4 * ndim
    if len(data) - off != need:
        raise DataError(
            f"{label}: IDX header promises {tuple(dims)} ({need} bytes) but the file "
            f"holds {len(data) - off}; truncated or damaged"
        )
    return (
        np.frombuffer(data, dtype=dtype, offset=off).reshape(dims).astype(dtype.newbyteorder("="))
    )


def load(
    files: dict, task: str = "classification", image_shape=(28, 28), name: str = "idx", ctx=None
) -> Dataset:
    """Load images and labels per part.

    ``files = {train: {images: spec, labels: spec}, test: ...}``.

    Pixels stay uint8, flattened to ``(n, h*w)``; ``image_shape`` records the layout.
    """
    resolved = {k: {kk: resolve(vv, ctx) for kk, vv in v.items()} for k, v in files.items()}
    params = {
        "files": {k: {kk: rf.path for kk, (rf, _) in v.items()} for k, v in resolved.items()},
        "image_shape": list(image_shape),
    }

    def build():
        parts = {}
        for k, v in resolved.items():
            (irf, ipath), (lrf, lpath) = v["images"], v["labels"]
            X = read_idx(read_bytes(ipath), irf.path)
            y = read_idx(read_bytes(lpath), lrf.path)
            if X.shape[0] != y.shape[0]:
                raise DataError(
                    f"{irf.path} has {X.shape[0]} images but {lrf.path} has {y.shape[0]} labels"
                )
            if tuple(X.shape[1:]) != tuple(image_shape)[-2:]:
                raise DataError(f"{irf.path}: images are {X.shape[1:]}, config says {image_shape}")
            parts[k] = (X.reshape(X.shape[0], -1), y.astype(np.int64))
        return assemble(
            name,
            task,
            parts,
            image_shape=image_shape,
            meta={
                "source": "idx",
                "files": [rf.url for v in resolved.values() for rf, _ in v.values()],
            },
        )

    paths = [p for v in resolved.values() for _, p in v.values()]
    return cached(ctx, "idx", params, paths, build)
