"""USPS digits as served with The Elements of Statistical Learning (zip.train.gz / zip.test.gz).

Whitespace-separated, label first, then 256 grey values in [-1, 1] of a 16x16 image.
"""

from __future__ import annotations

from treebench.data.base import Dataset
from treebench.data.sources import uci


def load(
    files: dict, task: str = "classification", image_shape=(16, 16), name: str = "usps", ctx=None
) -> Dataset:
    """Load the ESL ``zip`` files (one per part); labels 0-9 are the digits."""
    return uci.load(
        files,
        task,
        target=0,
        sep="whitespace",
        image_shape=list(image_shape),
        name=name,
        source="esl",
        ctx=ctx,
    )
