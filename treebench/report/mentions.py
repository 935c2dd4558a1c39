"""The paper files whose text names a method and a dataset, found without parsing their targets.

After an ad-hoc ``treebench run`` the console names the paper that reports the same pair
(:func:`treebench.report.targets.paper_setting`); validating every paper file for that costs the
pydantic schema and a tenth of a second of CPU at the end of every run. A value target names its
method and dataset literally in its entry, so a file without both names as words cannot report the
pair: only the files that have them are validated, and not those of papers the caller leaves out
(the CI guards' file names every bundled dataset and baseline).
"""

from __future__ import annotations

import re
from pathlib import Path


def papers_naming(
    method: str, dataset: str, conf_dir: str | Path | None = None, exclude=()
) -> list[Path]:
    """Return the paper files (``<conf>/papers/*.yaml``, sorted) whose text has both names as words.

    Parameters
    ----------
    method, dataset : str
        Names as a record carries them (``cart``, ``iris``).
    conf_dir : str or Path, optional
        The config root (default: the packaged one).
    exclude : iterable of str
        Papers to leave out, by name (the file's ``paper:``, else its stem, as
        :func:`~treebench.report.targets.load_paper` names it).

    Returns
    -------
    list of Path
        A superset of the files with a target for the pair, in :func:`load_all`'s order.
    """
    if conf_dir is None:
        from treebench.config import CONF_DIR

        conf_dir = CONF_DIR
    from treebench.config import load_yaml

    words = [re.compile(rf"(?<![\w-]){re.escape(n)}(?![\w-])") for n in (method, dataset)]
    exclude = set(exclude)
    out = []
    for path in sorted((Path(conf_dir) / "papers").glob("*.yaml")):
        text = path.read_text()
        if not all(w.search(text) for w in words):
            continue
        if exclude:
            try:
                data = load_yaml(text)
            except Exception:  # noqa: BLE001 - an invalid file is left to load_paper's error
                data = None
            name = data.get("paper") if isinstance(data, dict) else None
            if (name or path.stem) in exclude:
                continue
        out.append(path)
    return out
