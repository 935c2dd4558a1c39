"""The one download primitive: mirror mapping, sha256 verification, retries, atomic writes, locks.

A dataset config lists its files as ``{url, path, sha256}``: ``url`` is the real upstream address,
``path`` the file's place relative to a mirror (and to the cache, which has the same layout, so a
data directory can itself serve as a mirror), ``sha256`` the expected checksum (``null`` if
unknown).

Lookup order for one file:

1. the cache ``<data_dir>/<path>`` (verified; a corrupted copy is removed and fetched again);
2. a mirror that is a local directory: ``<mirror>/<path>`` is used in place (read only, verified);
3. with ``allow_fetch``: download from ``<mirror>/<path>`` when the mirror is a URL, then from the
   upstream ``url``; every download goes to a temporary file, is verified, then renamed into place
   under a per-file lock, so concurrent processes never see or leave a partial file.

Without ``allow_fetch`` a missing file raises :class:`DatasetUnavailableError` naming the exact
``treebench fetch dataset=<name>`` command.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from treebench.data.base import DataError, DatasetUnavailableError
from treebench.files import apply_umask

CHUNK = 1 << 20
USER_AGENT = "treebench-data/0.1 (+https://github.com/)"


class ChecksumError(DataError):
    """A file's sha256 differs from the configured value."""


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file.

    Parameters
    ----------
    url : str
        The real upstream URL.
    path : str
        Relative path inside a mirror and inside the cache (e.g.
        ``libsvm/multiclass/letter.scale``).
    sha256 : str or None
        Expected checksum; ``None`` when no trusted value is known (the file is then accepted as
        is).
    member : str, optional
        The upstream ``url`` is a zip archive and ``path`` holds this member of it, extracted (as
        the mirror stores e.g. ``uci/bike-sharing/hour.csv`` from ``Bike-Sharing-Dataset.zip``).
    """

    url: str
    path: str
    sha256: str | None = None
    member: str | None = None

    @classmethod
    def of(cls, spec: Any) -> RemoteFile:
        """Return a :class:`RemoteFile` from a file spec mapping (or the file itself)."""
        if isinstance(spec, RemoteFile):
            return spec
        if isinstance(spec, str):
            raise DataError(
                f"file spec must be a mapping with url/path/sha256, got the string {spec!r}"
            )
        missing = [k for k in ("url", "path") if not spec.get(k)]
        if missing:
            raise DataError(f"file spec {dict(spec)} lacks {', '.join(missing)}")
        sha = spec.get("sha256")
        member = spec.get("member")
        return cls(
            str(spec["url"]),
            str(spec["path"]),
            str(sha).lower() if sha else None,
            str(member) if member else None,
        )


_DIGESTS: dict[tuple, str] = {}


def sha256_file(path: str | os.PathLike) -> str:
    """Return the file's sha256, memoised per process by (path, size, mtime)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key in _DIGESTS:
        return _DIGESTS[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _is_url(text: str) -> bool:
    return "://" in text


def _local_dir(mirror: str | os.PathLike | None) -> Path | None:
    if mirror is None or str(mirror) in ("", "null", "None"):
        return None
    m = str(mirror)
    if m.startswith("file://"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(m).path))
    if _is_url(m):
        return None
    return Path(m).expanduser()


def mirror_url(mirror: str, path: str) -> str:
    """Return the URL of ``path`` under a mirror base URL (spaces and other characters quoted)."""
    return mirror.rstrip("/") + "/" + urllib.parse.quote(path)


def sources(rf: RemoteFile, mirror: str | None) -> list[str]:
    """Download URLs to try, in order: the mirror (when it is a URL), then the upstream URL."""
    out = []
    if mirror and _is_url(str(mirror)) and not str(mirror).startswith("file://"):
        out.append(mirror_url(str(mirror), rf.path))
    out.append(rf.url)
    return out


def _verify(path: Path, rf: RemoteFile, origin: str) -> str:
    digest = sha256_file(path)
    if rf.sha256 and digest != rf.sha256:
        raise ChecksumError(
            f"checksum mismatch for {rf.path} (from {origin}): expected sha256 {rf.sha256}, "
            f"got {digest}; the file is corrupted or not the upstream version"
        )
    return digest


class Progress:
    """Download progress callbacks; the CLI passes a rich-based one, the default prints nothing."""

    def start(self, name: str, total: int | None) -> None:  # pragma: no cover - trivial
        """Begin file ``name`` of ``total`` bytes (None: unknown)."""
        pass

    def advance(self, name: str, n: int) -> None:  # pragma: no cover - trivial
        """Count ``n`` more bytes of file ``name``."""
        pass

    def done(self, name: str) -> None:  # pragma: no cover - trivial
        """End file ``name``."""
        pass


def _download(
    url: str,
    dest_dir: Path,
    rf: RemoteFile,
    progress: Progress,
    timeout: float,
    verify: bool = True,
) -> Path:
    """Stream ``url`` into a temporary file in ``dest_dir``; verify size and checksum; return it."""
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=dest_dir)
    tmp_path = Path(tmp)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(req, timeout=timeout) as resp:
            total = resp.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            progress.start(rf.path, total)
            n = 0
            while block := resp.read(CHUNK):
                out.write(block)
                n += len(block)
                progress.advance(rf.path, len(block))
            if total is not None and n != total:
                raise OSError(f"transfer of {url} ended after {n} of {total} bytes")
        if verify:
            _verify(tmp_path, rf, url)
        apply_umask(tmp_path)  # mkstemp makes 0600
        return tmp_path
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    finally:
        progress.done(rf.path)


def ensure_file(
    spec: Any,
    ctx,
    *,
    retries: int = 3,
    backoff: float = 1.0,
    timeout: float = 60.0,
) -> Path:
    """Return a local, verified copy of one file (see the module docstring for the lookup order)."""
    rf = RemoteFile.of(spec)
    data_dir = Path(ctx.data_dir)
    target = data_dir / rf.path
    dataset = getattr(ctx, "dataset", None) or "<name>"

    if target.exists():
        try:
            _verify(target, rf, str(target))
            return target
        except ChecksumError as exc:
            _warn(ctx, f"{exc}; removing it and fetching again")
            with _lock(target):
                if target.exists() and sha256_file(target) != rf.sha256:
                    target.unlink()

    local = _local_dir(getattr(ctx, "mirror", None))
    if local is not None and (local / rf.path).is_file():
        _verify(local / rf.path, rf, f"mirror {local}")
        return local / rf.path

    if not getattr(ctx, "allow_fetch", True):
        raise DatasetUnavailableError(
            f"dataset {dataset!r} needs {rf.path}, which is not in the cache ({data_dir})"
            + (
                f" nor in the mirror ({ctx.mirror})"
                if getattr(ctx, "mirror", None)
                else " and no mirror is set (TREEBENCH_MIRROR: a directory or URL holding the "
                "upstream files by their relative paths; README, 'Environment variables')"
            )
            + f"; download it with `treebench fetch dataset={dataset}` (upstream: {rf.url})"
        )

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _lock(target):
            return _fetch_locked(rf, ctx, target, data_dir, dataset, retries, backoff, timeout)
    except OSError as exc:
        if getattr(exc, "errno", None) in _DISK_ERRNOS:
            raise _cache_dir_error(exc, data_dir) from exc
        raise


def _fetch_locked(
    rf,
    ctx,
    target: Path,
    data_dir: Path,
    dataset: str,
    retries: int,
    backoff: float,
    timeout: float,
) -> Path:
    """Download one file while holding its lock: mirror URL, then upstream, with retries."""
    progress = getattr(ctx, "progress", None) or Progress()
    if target.exists():  # another process finished it while we waited for the lock
        _verify(target, rf, str(target))
        return target
    errors = []
    for url in sources(rf, getattr(ctx, "mirror", None)):
        for attempt in range(1, retries + 1):
            try:
                if rf.member and url == rf.url:
                    tmp = _download_member(
                        url, target.parent, rf, progress, timeout, data_dir / ".archives"
                    )
                else:
                    tmp = _download(url, target.parent, rf, progress, timeout)
                os.replace(tmp, target)
                return target
            except ChecksumError as exc:
                errors.append(str(exc))
                break  # the same URL would serve the same wrong bytes
            except urllib.error.HTTPError as exc:
                errors.append(f"{url}: HTTP {exc.code} {exc.reason}")
                if exc.code in (403, 404, 410):
                    break
            except (OSError, urllib.error.URLError, zipfile.BadZipFile) as exc:  # timeouts, cut
                if getattr(exc, "errno", None) in _DISK_ERRNOS:
                    raise _cache_dir_error(exc, data_dir) from exc
                errors.append(f"{url}: {type(exc).__name__}: {exc}")
            if attempt < retries:
                time.sleep(backoff * 2 ** (attempt - 1))
    raise DatasetUnavailableError(
        f"could not download {rf.path} for dataset {dataset!r}; attempts:\n  "
        + "\n  ".join(errors)
        + "\nset TREEBENCH_MIRROR (or data.mirror=...) to a directory or URL holding "
        f"{rf.path}, or place the file at {target}"
    )


_DISK_ERRNOS = {errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EDQUOT, errno.EPERM}


def _cache_dir_error(exc: OSError, data_dir: Path) -> DataError:
    """Return a clear error for a cache directory that is read-only or full."""
    what = "is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "is not writable"
    return DataError(
        f"the data cache {data_dir} {what} ({exc.strerror or exc}); set TREEBENCH_DATA_DIR "
        "(or paths.data=...) to a writable directory with free space, or point TREEBENCH_MIRROR "
        "at a local copy of the files (read in place)"
    )


def _lock(target: Path) -> FileLock:
    """Return a per-file inter-process lock (a hidden ``.<name>.lock`` next to the file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(target.parent / f".{target.name}.lock"))


def _warn(ctx, msg: str) -> None:
    log = getattr(ctx, "log", None)
    if log is not None:
        log(msg)
    else:
        import warnings

        warnings.warn(msg, stacklevel=3)


def _download_member(
    url: str, dest_dir: Path, rf: RemoteFile, progress: Progress, timeout: float, arch_dir: Path
) -> Path:
    """Download the upstream archive (kept in ``arch_dir`` for its other members), extract one."""
    arch_dir.mkdir(parents=True, exist_ok=True)
    stem = urllib.parse.unquote(url.rstrip("/").rsplit("/", 1)[-1])
    archive = arch_dir / f"{hashlib.sha256(url.encode()).hexdigest()[:8]}-{stem}"
    with _lock(archive):
        if not archive.exists():
            tmp = _download(
                url, arch_dir, RemoteFile(url, str(archive.name)), progress, timeout, verify=False
            )
            os.replace(tmp, archive)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=dest_dir)
    tmp_path = Path(tmp)
    try:
        try:
            with (
                zipfile.ZipFile(archive) as zf,
                zf.open(rf.member) as src,
                os.fdopen(fd, "wb") as out,
            ):
                shutil.copyfileobj(src, out, CHUNK)
        except KeyError as exc:
            raise OSError(f"{url} has no member {rf.member!r}") from exc
        except (zipfile.BadZipFile, OSError):
            archive.unlink(missing_ok=True)  # a damaged archive is fetched again on retry
            raise
        _verify(tmp_path, rf, f"{url} member {rf.member}")
        apply_umask(tmp_path)  # mkstemp makes 0600
        return tmp_path
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
