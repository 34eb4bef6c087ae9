"""Crash-safe file writes shared by policies, checkpoints and studies.

A write goes to a uniquely named temporary file ``.<name>.<16 hex>.tmp`` in the target's
directory, is fsynced and then ``os.replace``d onto the target, and the directory is fsynced:
a killed process leaves the old file or the new one, never half of one, and concurrent writers
never share a temporary file. Callers that clean up after killed writers match that name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["fsync_dir", "write_atomic"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (renames, new files) durable; a no-op where unsupported."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Atomically replace ``path`` with ``data`` (``str`` is written as UTF-8); the temporary
    file is removed when anything fails."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:  # pragma: no cover - 64 random bits collided
            continue
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
