"""``treebench fetch``: fill the data cache for datasets or for every dataset of an experiment.

``treebench fetch --verify`` checks a local mirror (or the cache) instead: every configured file
present with its sha256, and parsed to the configured shape and classes (:func:`verify_dataset`).
"""

from __future__ import annotations

import copy
import csv
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from treebench.data import DataContext
from treebench.data.cache import Progress


class RichProgress(Progress):
    """Download progress bars (one per file) on a rich console."""

    def __init__(self, console=None):
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )
        from rich.progress import Progress as _P

        self._bar = _P(
            TextColumn("[bold blue]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, int] = {}

    def __enter__(self):
        self._bar.start()
        return self

    def __exit__(self, *exc):
        self._bar.stop()

    def start(self, name, total):
        """Add a bar for file ``name`` of ``total`` bytes."""
        self._tasks[name] = self._bar.add_task(name, total=total)

    def advance(self, name, n):
        """Advance file ``name``'s bar by ``n`` bytes."""
        if name in self._tasks:
            self._bar.update(self._tasks[name], advance=n)

    def done(self, name):
        """Stop file ``name``'s bar."""
        tid = self._tasks.pop(name, None)
        if tid is not None:
            self._bar.stop_task(tid)


def sweep_datasets(cfg) -> list[str]:
    """Dataset names of a composed config.

    The ``dataset`` values of its sweep plan (``params`` and ``rows``; with ``profile=reduced``, the
    ``reduced`` plan where there is one), else ``dataset.name``.
    """
    from treebench.config import plan_values, sweep_plan

    try:
        sweeper = cfg.hydra.sweeper
    except Exception:  # no hydra node
        sweeper = {}
    return plan_values(sweep_plan(sweeper, cfg.get("profile")), "dataset") or [
        str(cfg.dataset.name)
    ]


def fetch_datasets(
    names: Iterable[str],
    dataset_cfg: Callable[[str], object],
    data_dir: Path,
    mirror: str | None,
    console=None,
) -> list[tuple[str, str | None]]:
    """Download (or verify) and parse each dataset; return ``(name, error or None)`` per dataset."""
    from treebench.data import DataContext, load_dataset

    results = []
    with RichProgress(console) as progress:
        for name in names:
            ctx = DataContext(
                Path(data_dir),
                mirror,
                allow_fetch=True,
                progress=progress,
                log=(console.print if console is not None else None),
            )
            try:
                ds = load_dataset(dataset_cfg(name), ctx)
            except Exception as exc:  # reported per dataset; the others still run
                results.append((name, f"{type(exc).__name__}: {exc}"))
                if console is not None:
                    console.print(f"[red]{name}[/]: {type(exc).__name__}: {exc}")
                continue
            sizes = ", ".join(f"{k} {len(p)}" for k, p in ds.parts.items())
            width = ds.pooled().X.shape[1]
            if console is not None:
                console.print(f"[green]{name}[/]: ready ({sizes}; {width} features)")
            results.append((name, None))
    return results


# ---------------------------------------------------------------------------------------- verify


@dataclass
class Verified:
    """What :func:`verify_dataset` found for one dataset.

    ``status`` is ``"ok"`` (every file present, checksums and parsed shape as configured),
    ``"missing"`` (some files absent, the present ones correct), ``"failed"`` (``problems``) or
    ``"skipped"`` (no mirror files: a dataset bundled with scikit-learn or read from OpenML).
    """

    name: str
    files: int = 0
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """Return ``ok``, ``missing``, ``failed`` or ``skipped`` (see the class)."""
        if self.problems:
            return "failed"
        return "missing" if self.missing else ("ok" if self.files else "skipped")


def file_specs(node) -> Iterator[dict]:
    """Every ``{url, path, sha256}`` file spec under a loader node (files, labels, types …)."""
    if isinstance(node, dict):
        if "path" in node and "url" in node:
            yield node
        else:
            for v in node.values():
                yield from file_specs(v)
    elif isinstance(node, list):
        for v in node:
            yield from file_specs(v)


def _loader_module(loader: dict):
    """Return the module of a loader's ``_target_``.

    Where a loader keeping its own cache says what of it is missing, ``missing(ctx, **args)``, and
    how to fetch it, ``fetch_command(name, **args)``.
    """
    import importlib

    target = loader.get("_target_")
    return importlib.import_module(target.rsplit(".", 1)[0]) if target else None


def missing_files(cfg, ctx: DataContext) -> list[str]:
    """Return what of dataset ``cfg`` a run could not get.

    The relative paths of its files in neither the cache nor a local mirror, or what its loader's
    own cache lacks (an OpenML id), while fetching is off (a run would fail on them; ``treebench
    fetch`` gets them). Empty when fetching is on, or for data without files (bundled or generated
    sets).
    """
    from omegaconf import OmegaConf

    from treebench.data.cache import RemoteFile, _local_dir

    if ctx.allow_fetch:
        return []
    loader = cfg.get("loader")
    loader = OmegaConf.to_container(loader, resolve=True) if loader is not None else {}
    local = _local_dir(ctx.mirror)
    out = []
    for spec in file_specs(loader):
        path = RemoteFile.of(spec).path
        if not (Path(ctx.data_dir) / path).exists() and not (local and (local / path).is_file()):
            out.append(path)
    own = getattr(_loader_module(loader), "missing", None)
    if own is not None:
        args = {k: v for k, v in loader.items() if k != "_target_"}
        out += own(ctx, **args)
    return out


def fetch_command(cfg) -> str:
    """Return the ``treebench fetch`` that gets dataset ``cfg``.

    By its config name, or the command its loader gives (``dataset=openml dataset.data_id=61``:
    ``openml_61`` is no config).
    """
    from omegaconf import OmegaConf

    loader = cfg.get("loader")
    loader = OmegaConf.to_container(loader, resolve=True) if loader is not None else {}
    own = getattr(_loader_module(loader), "fetch_command", None)
    if own is None:
        return f"treebench fetch dataset={cfg.name}"
    return own(str(cfg.name), **{k: v for k, v in loader.items() if k != "_target_"})


def require_files(cfg, ctx: DataContext) -> None:
    """Raise :class:`DatasetUnavailableError` when files of dataset ``cfg`` are missing.

    The error names every file :func:`missing_files` finds and the ``treebench fetch`` command
    that gets them.
    """
    from treebench.data.base import DatasetUnavailableError

    missing = missing_files(cfg, ctx)
    if missing:
        where = f"nor in the mirror ({ctx.mirror})" if ctx.mirror else "and no mirror is set"
        raise DatasetUnavailableError(
            f"dataset {cfg.name!r} needs {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not in the cache ({ctx.data_dir}) {where}; "
            f"download {'it' if len(missing) == 1 else 'them'} with `{fetch_command(cfg)}`"
        )


def read_manifest(root: Path) -> dict[str, dict]:
    """``MANIFEST.csv`` of a mirror (relative_path → row with n_rows, n_classes), if it has one."""
    path = Path(root) / "MANIFEST.csv"
    if not path.is_file():
        return {}
    with open(path, newline="") as fh:
        return {r["relative_path"]: r for r in csv.DictReader(fh)}


def verify_dataset(cfg, root: Path, manifest: dict | None = None) -> Verified:
    """Check one dataset of a local mirror (or data cache) ``root`` against its config.

    Every file of the config must be under ``root`` with the configured sha256; each part
    (train/test/all …) whose files are present must parse to the manifest's row count and the
    config's feature count with class labels in range; when all files are present the whole dataset
    must have the config's ``shape`` and ``image_shape``, and its default split and preprocessing
    must give finite features. Nothing is downloaded and no parse cache is written.
    """
    import tempfile

    from omegaconf import DictConfig, OmegaConf

    from treebench.data import load_dataset
    from treebench.data.cache import sha256_file

    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    root = Path(root)
    manifest = manifest if manifest is not None else read_manifest(root)
    res = Verified(str(cfg["name"]))
    t0 = time.perf_counter()
    bad = set()
    for spec in file_specs(cfg["loader"]):
        res.files += 1
        path = root / spec["path"]
        if not path.is_file():
            res.missing.append(spec["path"])
            continue
        digest = sha256_file(path)
        if not spec.get("sha256"):
            res.problems.append(f"{spec['path']}: no sha256 in the config (the file's: {digest})")
            bad.add(spec["path"])
        elif digest != spec["sha256"]:
            res.problems.append(
                f"{spec['path']}: sha256 {digest}, the config says {spec['sha256']}"
            )
            bad.add(spec["path"])
    if not res.files:
        return res
    with tempfile.TemporaryDirectory(prefix="treebench-verify-") as tmp:
        ctx = DataContext(Path(tmp), str(root), allow_fetch=False, parse_cache=False)
        whole = None
        if not res.missing and not bad:  # parse once; each part is checked on the whole load
            try:
                whole = load_dataset(OmegaConf.create(cfg), ctx)
            except Exception as exc:  # the per-part loads below show which part fails
                res.problems.append(f"dataset: {type(exc).__name__}: {exc}")
        for part, specs, one in _parts(cfg):
            if any(s["path"] in bad or s["path"] in res.missing for s in specs):
                continue
            if whole is not None and part in whole.parts:
                ds, part_cfg = whole, cfg
            else:  # only this part's files (the others are absent, or the whole load failed)
                ds, part_cfg = None, one
            _check(
                res,
                f"part {part}",
                lambda ds=ds, part_cfg=part_cfg, part=part, specs=specs: _check_part(
                    ds or load_dataset(OmegaConf.create(part_cfg), ctx),
                    part_cfg,
                    part,
                    specs,
                    manifest,
                ),
            )
        if whole is not None:
            _check(res, "dataset", lambda: _check_whole(cfg, whole))
    res.seconds = time.perf_counter() - t0
    return res


def _check(res: Verified, what: str, fn) -> None:
    try:
        problems = fn()
    except Exception as exc:  # reported; the other checks still run
        problems = [f"{type(exc).__name__}: {exc}"]
    res.problems += [f"{what}: {p}" for p in problems]


def _parts(cfg):
    """``(part, file specs, config loading only that part)`` for every part of a file loader."""
    loader = cfg["loader"]
    for part in loader.get("files") or {}:
        one = copy.deepcopy(loader)
        specs = list(file_specs(loader["files"][part]))
        if "labels" in loader:
            specs += list(file_specs(loader["labels"].get(part, {})))
            one["labels"] = {part: loader["labels"][part]} if part in loader["labels"] else {}
        if "types" in loader:
            specs += list(file_specs(loader["types"]))
        one["files"] = {part: loader["files"][part]}
        yield part, specs, {**cfg, "loader": one}


def _check_part(ds, one, part, specs, manifest) -> list[str]:
    import numpy as np

    got = ds.parts[part]
    out = []
    row = manifest.get(specs[0]["path"]) or {}
    if row.get("n_rows") and len(got) != int(row["n_rows"]):
        out.append(f"{len(got)} rows, MANIFEST.csv says {row['n_rows']}")
    if got.X.shape[1] != one["shape"]["n_features"]:
        out.append(f"{got.X.shape[1]} features, the config says {one['shape']['n_features']}")
    if one["task"] == "classification":
        classes = np.unique(got.y)
        k = one["shape"]["n_classes"]
        if classes.min() < 0 or classes.max() >= k:
            out.append(f"class labels {classes.min()}..{classes.max()} outside 0..{k - 1}")
        binned = "target_bins" in one["loader"]
        if row.get("n_classes") and not binned and classes.size != int(row["n_classes"]):
            out.append(f"{classes.size} classes, MANIFEST.csv says {row['n_classes']}")
    elif not np.all(np.isfinite(np.asarray(got.y, dtype=float))):
        out.append("non-finite regression targets")
    if ds.image_shape and int(np.prod(ds.image_shape)) != got.X.shape[1]:
        out.append(f"image_shape {tuple(ds.image_shape)} does not match {got.X.shape[1]} features")
    return out


def _check_whole(cfg, ds) -> list[str]:
    import numpy as np
    from hydra.utils import instantiate

    pooled = ds.pooled()
    shape, out = cfg["shape"], []
    got = (len(pooled), pooled.X.shape[1])
    if got != (shape["n_samples"], shape["n_features"]):
        out.append(f"shape {got}, the config says {(shape['n_samples'], shape['n_features'])}")
    if cfg["task"] == "classification":
        k = np.unique(pooled.y).size
        if k != shape["n_classes"] or len(ds.meta["classes"]) != shape["n_classes"]:
            out.append(f"{k} classes, the config says {shape['n_classes']}")
    if tuple(ds.image_shape or ()) != tuple(cfg.get("image_shape") or ()):
        out.append(f"image_shape {ds.image_shape}, the config says {cfg.get('image_shape')}")
    fold = next(instantiate(cfg["split"]).folds(ds, seed=0, only=0))
    pre = instantiate(cfg["preprocess"])
    pre.fit(fold.train.X, fold.train.y, categorical=ds.categorical)
    Xt = np.asarray(pre.transform(fold.test.X), dtype=float)
    if Xt.shape[0] != len(fold.test) or not np.isfinite(Xt).all():
        out.append("the default split and preprocessing give non-finite or missing test rows")
    return out
