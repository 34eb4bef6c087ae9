"""The lock of a study's output directory: one study at a time per ``out``."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import time
import warnings
from pathlib import Path
from typing import Any

from opboost.api.exceptions import OpboostWarning
from opboost.compose.study.errors import StudyLockedError

try:  # POSIX: the study lock is an flock, released by the kernel when its owner dies
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["LOCK_NAME", "StudyLock"]

#: The lock file a running study keeps in its ``out`` directory.
LOCK_NAME = ".opboost-study.lock"
#: Seconds a refused study waits for the lock holder's record (written right after its flock).
_OWNER_WAIT = 2.0


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # pragma: no cover - no cheap check: assume it runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # pragma: no cover
        return True
    return True


class StudyLock:
    """``out/.opboost-study.lock``: held (flock on POSIX) while a study runs; holds the
    owner's pid, host and start time for the error message of a refused second study."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / LOCK_NAME
        self.fd: int | None = None

    def _owner(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _written_owner(self) -> dict[str, Any]:
        """The holder's record; a holder that has just taken the flock writes it right
        after, so an empty file is read again for up to ``_OWNER_WAIT`` seconds."""
        deadline = time.monotonic() + _OWNER_WAIT
        owner = self._owner()
        while not owner and time.monotonic() < deadline:
            time.sleep(0.01)
            owner = self._owner()
        return owner

    def _refuse(self, owner: dict[str, Any]) -> StudyLockedError:
        pid, host = owner.get("pid", "unknown"), owner.get("host", "unknown host")
        since = owner.get("started", "an unknown time")
        return StudyLockedError(
            f"{self.out} is in use by another opboost study (pid {pid} on {host}, started "
            f"{since}). Wait for it to finish or choose another --out. If that process is no "
            f"longer running, delete {self.path} and re-run."
        )

    def acquire(self) -> None:
        host = socket.gethostname()
        me = {
            "pid": os.getpid(),
            "host": host,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        }
        while True:
            if fcntl is None:  # pragma: no cover - Windows: exclusive creation + pid check
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    owner = self._owner()
                    if owner.get("host") == host and not _pid_alive(int(owner.get("pid", -1))):
                        self._take_over(owner)
                        self.path.unlink(missing_ok=True)
                        continue
                    raise self._refuse(self._owner()) from None
                self._own(fd, me)
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                    raise self._refuse(self._written_owner()) from None
                try:
                    same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:  # the previous owner removed the file meanwhile: retry
                    os.close(fd)
                    continue
                owner = self._owner()
                if owner:  # nobody holds the lock: its owner died without releasing it
                    self._take_over(owner)
                self._own(fd, me)
                return
            except BaseException:
                if self.fd is None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                raise

    def _take_over(self, owner: dict[str, Any]) -> None:
        warnings.warn(
            f"{self.path}: taking over the stale lock of a study that is no longer running "
            f"(pid {owner.get('pid', 'unknown')} on {owner.get('host', 'unknown host')}, "
            f"started {owner.get('started', 'at an unknown time')}); its finished trials are "
            f"resumed.",
            OpboostWarning,
            stacklevel=4,
        )

    def _own(self, fd: int, me: dict[str, Any]) -> None:
        self.fd = fd
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(me) + "\n").encode())
        os.fsync(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        try:  # while still locked: see the inode check
            with contextlib.suppress(OSError):  # read-only --out: the next study takes it over
                self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = None
