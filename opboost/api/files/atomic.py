"""Crash-safe file writes shared by policies, checkpoints and studies, and JSON-safe values.

A write goes to a uniquely named temporary file ``.<name>.<16 hex>.tmp`` in the target's
directory, is fsynced and then ``os.replace``d onto the target, and the directory is fsynced:
a killed process leaves the old file or the new one, never half of one, and concurrent writers
never share a temporary file. Callers that clean up after killed writers match that name.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TooLarge", "fsync_dir", "json_params", "json_safe", "read_regular", "write_atomic"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not block
_O_BINARY = getattr(os, "O_BINARY", 0)
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
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise type(exc)(
                exc.errno,
                f"cannot write {path}: {path.parent} is not an existing directory; create it first",
            ) from exc
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.replace(tmp, path)
        except IsADirectoryError as exc:
            raise IsADirectoryError(
                exc.errno, f"cannot write {path}: it is a directory; remove it or pick a file name"
            ) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def json_safe(obj: Any, path: str = "", notes: list[dict[str, str]] | None = None) -> Any:
    """``obj`` with every NaN or infinity replaced by None; each one is appended to ``notes``
    as ``{"path": "config.simulation.logging_C", "value": "inf"}``."""
    if isinstance(obj, dict):
        return {
            str(k): json_safe(v, f"{path}.{k}" if path else str(k), notes) for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [json_safe(v, f"{path}[{i}]", notes) for i, v in enumerate(obj)]
    if isinstance(obj, float) and not math.isfinite(obj):
        if notes is not None:
            notes.append({"path": path, "value": repr(obj)})
        return None
    if hasattr(obj, "item") and hasattr(obj, "dtype") and getattr(obj, "ndim", 1) == 0:
        return json_safe(obj.item(), path, notes)  # numpy scalars
    return obj


def json_params(value: Any) -> Any:
    """Parameters as JSON: scalars, lists and dicts as they are, anything else as its repr."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [json_params(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): json_params(v) for k, v in value.items()}
    return repr(value)


class TooLarge(ValueError):
    """A file is longer than the bytes allowed for it."""


def read_regular(path: Path, limit: int, *, follow: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``; ValueError for a symbolic link
    (unless ``follow``), a device, FIFO or directory, and :class:`TooLarge` for a file longer
    than ``limit`` (also one that grows while it is read). Never blocks on a FIFO."""
    if not follow and os.path.islink(path):
        raise ValueError(
            f"{path}: is a symbolic link; a policy directory may hold only regular files."
        )
    flags = os.O_RDONLY | _O_NONBLOCK | _O_BINARY | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(
                f"{path}: is a symbolic link; a policy directory may hold only regular files."
            ) from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path}: not a regular file; refusing to read it as a policy.")
        if info.st_size > limit:
            raise TooLarge(
                f"{path}: {info.st_size} bytes, more than the {limit} bytes allowed here."
            )
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise TooLarge(f"{path}: more than the {limit} bytes allowed here (it grew).")
    return data
