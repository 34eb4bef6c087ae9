"""The crash-safe save of a policy directory (``policy.json`` + the ensemble file), used by
:meth:`opboost.api.policy.Policy.save`: unique fsynced temporary files, a versioned ensemble
file, the manifest switched last, an ``flock`` against concurrent saves, and the leftovers of
killed saves removed."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opboost.api.files.atomic import fsync_dir, read_regular, write_atomic

__all__ = [
    "ENSEMBLE_FILE",
    "ENSEMBLE_NAME_RE",
    "MANIFEST_FILE",
    "MAX_MANIFEST_BYTES",
    "save_directory",
]

#: The manifest of a policy directory.
MANIFEST_FILE = "policy.json"
#: The ensemble file of a policy directory (while a save replaces a policy, a versioned name).
ENSEMBLE_FILE = "ensemble.txt"
#: Largest ``policy.json`` of the directory form (metadata only) that
#: :func:`opboost.core.policy_loading.load_policy` reads.
MAX_MANIFEST_BYTES = 64 << 20
# Ensemble file names a manifest may reference: "ensemble.txt", or the versioned name that
# Policy.save uses while it replaces an existing policy ("ensemble-<16 hex>.txt").
ENSEMBLE_NAME_RE = re.compile(r"^ensemble(-[0-9a-f]{16})?\.txt$")
# Temporary files of Policy.save: ".<target name>.<16 hex>.tmp".
_TEMP_RE = re.compile(r"^\.(ensemble(-[0-9a-f]{16})?\.txt|policy\.json)\.[0-9a-f]{16}\.tmp$")


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the directory for the duration (POSIX; elsewhere no lock):
    saves into one directory run one after the other, across threads and processes. The
    kernel drops the lock of a killed process."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _referenced_file(directory: Path) -> str | None:
    """The ensemble file name the directory's current manifest references (None if none)."""
    try:
        spec = json.loads(read_regular(directory / MANIFEST_FILE, MAX_MANIFEST_BYTES))["ensemble"]
        name = spec["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) and ENSEMBLE_NAME_RE.match(name) else None


def _remove_leftovers(directory: Path) -> None:
    """Remove what killed saves left behind: temporary files, and versioned ensemble files
    the current manifest does not reference. Called with the directory locked, so no other
    save is running."""
    keep = _referenced_file(directory)
    for entry in directory.iterdir():
        name = entry.name
        versioned = name != ENSEMBLE_FILE and ENSEMBLE_NAME_RE.match(name) and name != keep
        if _TEMP_RE.match(name) or versioned:
            with contextlib.suppress(OSError):
                entry.unlink()


def _save_fresh(path: Path, data: bytes, manifest_text: str) -> bool:
    """Build the policy in a sibling staging directory and rename it to ``path`` (atomic).
    False when ``path`` appeared meanwhile (another writer): the caller saves in place."""
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:  # a file on the way
        raise NotADirectoryError(
            errno.ENOTDIR, f"cannot save a policy at {path}: {exc.filename} is not a directory"
        ) from exc
    while True:
        staging = parent / f".{path.name}.{secrets.token_hex(8)}.new"
        try:
            os.mkdir(staging)
        except FileExistsError:  # pragma: no cover
            continue
        break
    try:
        write_atomic(staging / ENSEMBLE_FILE, data)
        write_atomic(staging / MANIFEST_FILE, manifest_text)
        try:
            os.rename(staging, path)  # fails if path exists and is not an empty directory
        except OSError:
            if not path.exists():
                raise
            shutil.rmtree(staging, ignore_errors=True)
            return False
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(parent)
    return True


def save_directory(path: Path, data: bytes, manifest: dict[str, Any]) -> None:
    """Save the directory form so that at every instant ``path`` holds a complete policy.

    * ``path`` absent: write ``ensemble.txt`` and ``policy.json`` (each fsynced) into a
      sibling staging directory ``.<name>.<random>.new``, then rename it to ``path``. A kill
      before the rename leaves no policy at ``path`` (there was none) and a hidden staging
      directory.
    * ``path`` an existing directory, locked (``flock``) against other saves:

      1. write the new ensemble as ``ensemble-<sha256[:16]>.txt``, then atomically replace
         ``policy.json`` by the new manifest referencing it. Until this replace the old
         manifest and the untouched old ``ensemble.txt`` are the old policy; after it, the
         new one.
      2. atomically replace ``ensemble.txt`` by the new text, then ``policy.json`` by the
         new manifest referencing ``ensemble.txt`` (both states are the new policy), and
         remove the versioned file.

      Every file is written to a unique temporary name, fsynced and ``os.replace``-d; the
      directory is fsynced after each rename. Leftovers of a killed save (temporary files,
      an unreferenced versioned file) are removed by the next save. Other files in the
      directory are never touched.
    """
    ensemble = manifest["ensemble"]

    def manifest_text(file: str) -> str:
        return json.dumps(
            {**manifest, "ensemble": {**ensemble, "file": file}}, indent=1, allow_nan=False
        )

    if not os.path.lexists(path) and _save_fresh(path, data, manifest_text(ENSEMBLE_FILE)):
        return
    if not path.is_dir():
        raise FileExistsError(f"{path}: exists and is not a directory; cannot save a policy.")
    with _locked(path):
        _remove_leftovers(path)
        versioned = f"ensemble-{ensemble['sha256'][:16]}.txt"
        write_atomic(path / versioned, data)
        write_atomic(path / MANIFEST_FILE, manifest_text(versioned))  # the switch to the new policy
        write_atomic(path / ENSEMBLE_FILE, data)
        write_atomic(path / MANIFEST_FILE, manifest_text(ENSEMBLE_FILE))
        _remove_leftovers(path)
        fsync_dir(path)
