"""LightGBM's process-wide thread count, kept right around opboost's LightGBM calls.

LightGBM keeps one thread count for the whole process (``LGBM_DEFAULT_NUM_THREADS``): creating
a Booster or a Dataset, or predicting, with ``num_threads`` sets it (0 resets it to every core),
and every training round that follows uses it, whichever Booster grows the tree. A fit whose
reward-model start or held-out predictions used another count would grow its rounds with that
one (spinning on a busy machine; docs/performance.md). So a fit sets its own count before each
tree (:func:`use_threads`), and a prediction puts back the count it found
(:func:`keeping_threads`). How many threads a call gets is :func:`opboost.lgbm.threads.
lightgbm_threads`'s rule.
"""

from __future__ import annotations

import ctypes
from typing import Any

import lightgbm as lgb

__all__ = ["default_threads", "keeping_threads", "use_threads"]

_DEFAULT: list[Any] = []  # [ctypes.c_int of LightGBM's default thread count, or None]


def default_threads() -> Any:
    """LightGBM's process-wide thread count (``LGBM_DEFAULT_NUM_THREADS``, -1: OpenMP's
    default) as a ctypes int, or None if the library does not export it."""
    if not _DEFAULT:
        try:
            value = ctypes.c_int.in_dll(lgb.basic._LIB, "LGBM_DEFAULT_NUM_THREADS")
        except (AttributeError, TypeError, ValueError, OSError):
            value = None
        _DEFAULT.append(value)
    return _DEFAULT[0]


def use_threads(threads: int) -> None:
    """Make ``threads`` LightGBM's process-wide count (0: OpenMP's default, every core), as a
    Booster created with ``num_threads=threads`` does."""
    default = default_threads()
    if default is not None:
        default.value = threads if threads > 0 else -1


class keeping_threads:
    """Put LightGBM's process-wide thread count back as it was when the block ends (a
    ``predict(num_threads=...)`` in the block overwrites it). A class, not a generator: it
    wraps every single-context prediction, where a generator's context costs microseconds."""

    __slots__ = ("_before", "_default")

    def __enter__(self) -> None:
        self._default = default_threads()
        self._before = None if self._default is None else self._default.value

    def __exit__(self, *exc: object) -> None:
        if self._default is not None:
            self._default.value = self._before
