"""How many threads a LightGBM call gets by default: as many as its work can share, and no
more than the cores free for it.

LightGBM's OpenMP threads meet at every parallel region, dozens of them per tree. On a small
design a region holds microseconds of work, and a sibling thread that the kernel has put aside
for another process holds the others for a whole time slice: beside one busy process, a fit
on 3,000 rows x 4 actions took 18x its one-thread time (issue 36). So ``num_threads="auto"``
(the default of every LightGBM fit opboost makes) gives a call one thread per
``per_thread`` of its work (rows x features for a fit, rows x trees for a prediction), and at
most :func:`free_cores`: the CPUs this process may run on (its affinity mask, its cgroup's CPU
quota, OpenMP's own limit: ``OMP_NUM_THREADS`` or ``threadpoolctl.threadpool_limits``) less
those other processes keep busy right now. A number set by the user is used as it is (0 is
LightGBM's own default: every core). docs/performance.md has the measurements behind the
constants.
"""

from __future__ import annotations

import math
import os
import time
from numbers import Integral
from pathlib import Path
from typing import Any

from opboost.api.constraints import Interval, Options

__all__ = [
    "AUTO",
    "FIT_WORK_PER_THREAD",
    "NUM_THREADS",
    "PREDICT_WORK_PER_THREAD",
    "free_cores",
    "lightgbm_threads",
    "usable_cores",
]

#: The value of ``num_threads`` that asks :func:`lightgbm_threads` to choose.
AUTO = "auto"
#: Rows x features of a LightGBM fit per thread: a fit gets a second thread from twice this.
FIT_WORK_PER_THREAD = 1_000_000
#: Rows x trees of a LightGBM prediction per thread (1,000-2,000 rows of 100 trees is where
#: two threads start to win on a busy 2-core machine: examples/benchmarks/bench_serving.py).
PREDICT_WORK_PER_THREAD = 150_000
#: The constraints of a ``num_threads`` parameter: "auto" or a count (0: LightGBM's default).
NUM_THREADS = [
    Options((AUTO,)),
    Interval(
        Integral,
        0,
        None,
        fix="use 'auto' (threads chosen by the work and the free cores) or 0 for LightGBM's "
        "default (every core)",
    ),
]
#: Samples of the run queue, and seconds between them, behind one reading of the load.
_LOAD_SAMPLES, _LOAD_GAP = 5, 0.002
#: Seconds a reading of :func:`free_cores` is reused (the calls of one fit come together).
_FREE_CORES_TTL = 1.0
_cache: dict[str, Any] = {}


def lightgbm_threads(work: float, requested: Any = AUTO, *, per_thread: float | None = None) -> int:
    """``num_threads`` of a LightGBM call with ``work`` (rows x features of a fit, or rows x
    trees of a prediction with ``per_thread=PREDICT_WORK_PER_THREAD``): ``requested`` if it
    is a number (0 is LightGBM's default, every core), else one thread per ``per_thread``
    (default ``FIT_WORK_PER_THREAD``) of work, at least 1 and at most :func:`free_cores`."""
    if requested != AUTO:
        return int(requested)
    wanted = int(work // (FIT_WORK_PER_THREAD if per_thread is None else per_thread))
    if wanted < 2:  # too little work to share: no need to read the machine's load
        return 1
    return max(1, min(wanted, free_cores()))


def usable_cores() -> int:
    """The CPUs this process may run on: its affinity mask, its cgroup's CPU quota (whole
    cores, at least 1) and OpenMP's limit (``OMP_NUM_THREADS``, ``threadpool_limits``)."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, int(quota)))
    limit = _openmp_limit()
    if limit is not None:
        cores = min(cores, limit)
    return max(1, cores)


def free_cores() -> int:
    """:func:`usable_cores` less the cores other processes keep busy now, at least 1 (read at
    most once a second)."""
    now = time.monotonic()
    if now - _cache.get("at", -math.inf) > _FREE_CORES_TTL:
        usable = usable_cores()
        machine = os.cpu_count() or usable
        # other processes spread over the machine; a share of them compete for our CPUs
        busy = _other_load() * min(1.0, usable / machine)
        _cache.update(at=now, free=max(1, min(usable, round(usable - busy))))
    return _cache["free"]


def _cgroup_quota(
    cgroups: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")
) -> float | None:
    """The CPU quota of this process's cgroup in cores (v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us``), or None when there is none or it cannot be read."""
    try:
        lines = cgroups.read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        path = path.lstrip("/")
        for inner in (path, ""):  # a container sees its own cgroup at the root
            if controllers == "":  # cgroup v2
                candidates.append((root / inner / "cpu.max", None))
            elif "cpu" in controllers.split(","):
                folder = root / controllers if (root / controllers).is_dir() else root / "cpu"
                candidates.append((folder / inner / "cpu.cfs_quota_us", folder / inner))
    for file, v1_folder in candidates:
        try:
            if v1_folder is None:
                quota, period = file.read_text().split()[:2]
                if quota != "max":
                    return int(quota) / int(period)
            else:
                quota = int(file.read_text())
                period = int((v1_folder / "cpu.cfs_period_us").read_text())
                if quota > 0:
                    return quota / period
        except (OSError, ValueError):
            continue
    return None


def _openmp_limit() -> int | None:
    """OpenMP's maximum thread count as set now (``OMP_NUM_THREADS``,
    ``threadpool_limits``): the smallest over the OpenMP runtimes loaded, or None."""
    controller = _cache.get("controller")
    if controller is None:
        from threadpoolctl import ThreadpoolController

        # kept once it has found a runtime (building it scans the loaded libraries, about
        # 30 ms); LightGBM's is loaded with lightgbm, before a fit asks
        controller = ThreadpoolController().select(user_api="openmp")
        if controller.lib_controllers:
            _cache["controller"] = controller
    counts = [info["num_threads"] for info in controller.info()]
    return min(counts) if counts else None


def _other_load() -> float:
    """How many threads of other processes want a CPU now: the run queue of
    ``/proc/loadavg`` less this process's running threads, averaged over a few samples; where
    there is no /proc, the 1-minute load average less one (this thread)."""
    samples = []
    for i in range(_LOAD_SAMPLES):
        if i:
            time.sleep(_LOAD_GAP)
        try:
            running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            try:
                return max(0.0, os.getloadavg()[0] - 1.0)
            except (AttributeError, OSError):  # pragma: no cover - Windows
                return 0.0
        samples.append(max(0, running - _own_running()))
    return sum(samples) / len(samples)


def _own_running() -> int:
    """This process's threads in the running state (1 at least: the one asking)."""
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended
            continue
        if stat[stat.rindex(")") + 2] == "R":
            count += 1
    return max(1, count)
