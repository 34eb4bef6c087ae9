"""Memory a fit needs against the memory the process may use: refuse before allocating.

LightGBM dies by a signal, not a ``MemoryError``, when an allocation inside its Dataset
construction fails (issue 40: ``Booster().fit`` on 300 rows with 10**6 actions under a 6 GiB
limit was a SIGSEGV). A fit on the stacked design holds about ``STACKED_ROW_BYTES + width``
bytes per stacked row (one per context and action, or per candidate), so
:func:`check_memory` compares such a lower-bound estimate with what is left to the process
(:func:`memory_left`: the least of ``RLIMIT_AS`` less the address space in use, the cgroup's
``memory.max`` less its usage, and physical memory) and raises
:class:`~opboost.api.exceptions.InsufficientMemoryError` naming the estimate, the limit and the
ways out. Being a lower bound, it refuses only fits that cannot succeed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from opboost.api.exceptions import InsufficientMemoryError

__all__ = [
    "CELL_BYTES",
    "STACKED_ROW_BYTES",
    "cgroup_left",
    "check_memory",
    "check_stacked_fit",
    "memory_left",
    "memory_problem",
    "stacked_fit_bytes",
]

#: Bytes per (row, action) cell of the (n, K) arrays a boosting fit holds (F, softmax(F),
#: LightGBM's scores, the round's buffer: four float64).
CELL_BYTES = 32
#: Bytes per stacked row beyond the cell's arrays and one byte per column (LightGBM's binned
#: value): at least 40 of LightGBM's working memory (gradients, scores, bin store). Measured
#: (peak RSS less the logs, docs/benchmarks/performance.md): 87.5 bytes per stacked row at
#: d = 2, 140.9 at d = 20, 173.5 at d = 50, against the 75, 93 and 123 this estimate gives.
STACKED_ROW_BYTES = 40
_FIX = (
    "Give each row its candidate set (LoggedBandit(candidates=...), a scipy.sparse mask for "
    "large catalogues: only candidates are stacked), use fewer actions, or fit on a Dask "
    "cluster (opboost.dask, docs/dask.md)."
)


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def cgroup_left(
    root: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")
) -> int | None:
    """The least memory.max less memory.current of this process's cgroup and its ancestors
    (cgroup v2, below ``root``), or limit_in_bytes less usage (v1); None without a limit."""
    left = []
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.startswith("0::"):
            group = root / line[3:].lstrip("/")
            for directory in (group, *group.parents):
                limit = _read_int(directory / "memory.max")
                used = _read_int(directory / "memory.current")
                if limit is not None and used is not None:
                    left.append(limit - used)
                if directory == root:
                    break
    v1 = root / "memory"
    limit, used = _read_int(v1 / "memory.limit_in_bytes"), _read_int(v1 / "memory.usage_in_bytes")
    if limit is not None and used is not None and limit < 1 << 60:
        left.append(limit - used)
    return min(left) if left else None


def memory_left() -> tuple[float, str]:
    """(bytes, where the limit comes from): the least of the address space left under
    ``RLIMIT_AS``, the cgroup's memory limit less its usage, and physical memory (infinity
    where none of them can be read)."""
    options: list[tuple[float, str]] = [(float("inf"), "available")]
    try:
        import resource

        page = os.sysconf("SC_PAGE_SIZE")
        options.append((os.sysconf("SC_PHYS_PAGES") * page, "of physical memory"))
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, AttributeError, ValueError, OSError):  # pragma: no cover - Windows
        return min(options)
    if soft != resource.RLIM_INFINITY:
        try:
            used = int(Path("/proc/self/statm").read_text().split()[0]) * page
        except (OSError, ValueError, IndexError):
            used = 0
        source = f"left under the address-space limit (RLIMIT_AS {_gib(soft)})"
        options.append((soft - used, source))
    cgroup = cgroup_left()
    if cgroup is not None:
        options.append((cgroup, "left under the cgroup's memory limit (memory.max)"))
    return min(options)


def memory_problem(need: float, what: str) -> str | None:
    """ "``what``: at least N GiB needed, more than the M GiB <limit>", or None when ``need``
    bytes fit in :func:`memory_left`."""
    left, source = memory_left()
    if need <= left:
        return None
    return f"{what}: at least {_gib(need)} needed, more than the {_gib(max(left, 0))} {source}"


def check_memory(need: int, owner: str, what: str, fix: str = _FIX) -> None:
    """:class:`InsufficientMemoryError` when ``need`` bytes (a lower bound of what ``owner``
    is about to allocate for ``what``) exceed :func:`memory_left`."""
    problem = memory_problem(need, what)
    if problem is not None:
        raise InsufficientMemoryError(f"{owner}: {problem}. {fix}")


def stacked_fit_bytes(data: Any) -> tuple[int, str]:
    """(bytes, description): the lower-bound memory of a boosting fit on ``data`` (a
    LoggedBandit): :data:`CELL_BYTES` per cell of its (n, K) arrays (n x the most candidates
    of a row, with candidate sets) and :data:`STACKED_ROW_BYTES` plus one per column for
    every stacked row (one per context and action, or per candidate)."""
    n, k = len(data), data.n_actions
    counts = data.n_candidates
    slots = int(counts.max()) if data.candidates is not None else k
    rows = int(counts.sum())
    phi = getattr(data, "action_features", None)
    width = data.n_features + (1 if phi is None else phi.shape[1])
    need = n * slots * CELL_BYTES + rows * (STACKED_ROW_BYTES + width)
    return need, f"{n:,} rows x {k:,} actions, {rows:,} stacked rows of {width} columns"


def check_stacked_fit(data: Any, owner: str) -> None:
    """Refuse a boosting fit on ``data`` that cannot fit in memory (:func:`stacked_fit_bytes`)."""
    need, what = stacked_fit_bytes(data)
    check_memory(need, owner, what)
