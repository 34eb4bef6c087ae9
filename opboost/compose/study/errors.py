"""The errors of a study, and :class:`OSError` described for their messages."""

from __future__ import annotations

import signal

from opboost.api.exceptions import OpboostError

__all__ = ["StudyError", "StudyInterrupted", "StudyLockedError", "os_error"]


class StudyError(OpboostError):
    """A study could not write its outputs (its finished trials are kept)."""


class StudyLockedError(StudyError):
    """Another study is running on the same output directory."""


class StudyInterrupted(SystemExit):
    """The study received SIGTERM: its worker processes were terminated (exit status 143)."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


def os_error(exc: OSError) -> str:
    """``exc`` for a message: its cause and the file it concerns."""
    text = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        text += f": {exc.filename}"
    return f"{type(exc).__name__}: {text}"
