"""The workers of a distributed fit as one group: a :class:`~opboost.dask.shard.Shard` actor
per worker holding partitions, LightGBM's network between them, and calls that reach them
all at once and fail with a clear error instead of waiting forever.

Ranks are fixed: the workers holding partitions sorted by address, so the same partitioning
gives the same ranks, bins and trees on every fit. Each worker listens on a port of its own
(any free one, or ``local_listen_port`` + its index among the fit's workers on its host).
A call fails when a worker raises (the error names it and the stage), when a worker of the
fit leaves the cluster (checked every second while waiting), or after ``time_out`` minutes,
LightGBM's own socket time-out, which ends a LightGBM call stuck on a silent peer.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from opboost.api.exceptions import OpboostError
from opboost.lgbm.params import lightgbm_aliases

__all__ = [
    "DistributedFitError",
    "NetworkSettings",
    "Shards",
    "network_params_problem",
    "requested_ports",
    "split_network_params",
]

#: LightGBM's socket time-out (minutes) unless ``params`` sets ``time_out``.
DEFAULT_TIME_OUT = 10
#: Seconds between checks that the fit's workers are still in the cluster while waiting.
POLL_SECONDS = 1.0
#: Seconds a call failed by LightGBM waits for the cluster to notice a lost worker.
GRACE_SECONDS = 3.0
#: Seconds the end of a fit waits for the workers to leave LightGBM's network.
CLOSE_SECONDS = 5.0


class DistributedFitError(OpboostError, RuntimeError):
    """A distributed fit failed on its workers (a worker lost, an error or a time-out)."""


@dataclass(frozen=True)
class NetworkSettings:
    """``local_listen_port``: the first port of each host (None: any free port);
    ``time_out``: LightGBM's socket time-out and the client's wait per call, in minutes."""

    local_listen_port: int | None = None
    time_out: int = DEFAULT_TIME_OUT


def network_params_problem(params: dict[str, Any] | None) -> str | None:
    """What is wrong with the network settings in a learner's ``params`` (after "The 'params'
    parameter of LightGBMDaskTree"), or None."""
    aliases = lightgbm_aliases()
    for key, value in (params or {}).items():
        main = aliases.get(key, key)
        if main in ("machines", "machine_list_filename", "num_machines", "tree_learner"):
            return (
                f"may not set {key!r}: the fit sets LightGBM's machines, their number and the "
                f"data-parallel tree learner from the workers holding partitions. Set "
                f"'local_listen_port' to fix the ports (worker i of a host listens on "
                f"local_listen_port + i)."
            )
        bad = isinstance(value, bool) or not isinstance(value, int) or value < 1
        if main in ("local_listen_port", "time_out") and bad:
            return f"has {key!r} = {value!r}; it must be an int >= 1 (a port, or minutes)."
    return None


def split_network_params(params: dict[str, Any] | None) -> tuple[NetworkSettings, dict]:
    """(network settings, the other LightGBM parameters) of valid ``params``."""
    aliases = lightgbm_aliases()
    found: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in (params or {}).items():
        main = aliases.get(key, key)
        if main in ("local_listen_port", "time_out"):
            found[main] = value
        else:
            rest[key] = value
    return NetworkSettings(**found), rest


def requested_ports(workers: Sequence[str], settings: NetworkSettings) -> list[int]:
    """The port each worker (rank order) listens on: 0 for any free port."""
    if settings.local_listen_port is None:
        return [0] * len(workers)
    seen: dict[str | None, int] = {}
    ports = []
    for worker in workers:
        host = urlparse(worker).hostname
        ports.append(settings.local_listen_port + seen.get(host, 0))
        seen[host] = seen.get(host, 0) + 1
    return ports


#: The open Shards of this process (closed ones leave it).
_OPEN: weakref.WeakSet[Shards] = weakref.WeakSet()


class Shards:
    """The fit's Shard actors in rank order (``workers[r]`` holds ``actors[r]``).

    A fit abandoned without its end (a callback raised, say) is closed when the next one
    starts in the same thread: a thread runs one fit at a time. Fits running at the same
    time in other threads or processes are refused by the workers (one LightGBM network per
    worker)."""

    def __init__(self, client: Any, workers: Sequence[str], futures: Sequence[Any], minutes: int):
        self.thread = threading.get_ident()
        for other in list(_OPEN):
            if other.thread == self.thread:
                with contextlib.suppress(Exception):  # e.g. its client was closed since
                    other.close()
        self.client, self.workers, self.futures = client, list(workers), list(futures)
        self.timeout = 60.0 * minutes
        self.actors: list[Any] = []
        _OPEN.add(self)
        self.actors = self._wait("the start of the workers' shards", self.futures)

    def call(self, stage: str, method: str, *args: Any) -> list[Any]:
        """``method(*args)`` on every actor at once; the answers in rank order."""
        return self.call_each(stage, method, [args] * len(self.workers))

    def call_each(self, stage: str, method: str, args: Sequence[tuple]) -> list[Any]:
        """``method(*args[r])`` on actor r, all at once; the answers in rank order."""
        if not self.actors:
            raise DistributedFitError(
                f"The distributed fit cannot go on at {stage}: its workers were released (it "
                f"ended, failed, or a later fit in this thread replaced it). Fit again."
            )
        try:
            futures = [getattr(a, method)(*x) for a, x in zip(self.actors, args, strict=True)]
        except RuntimeError as exc:  # "Worker holding Actor was lost"
            self._check_alive(stage)
            raise DistributedFitError(f"The distributed fit failed at {stage}: {exc}") from exc
        return self._wait(stage, futures)

    def close(self) -> None:
        """Every reachable actor leaves LightGBM's network and frees its Dataset and Booster,
        one after the other in rank order (waiting at most ``CLOSE_SECONDS`` in all: after a
        failure an actor may be stuck in LightGBM until its time_out); then the actors are
        released.

        In rank order: of two workers, the lower rank connected to the higher one's listening
        port, so it closes first and the connection's TIME_WAIT stays on its own ephemeral
        port. Closed the other way, the listening port (LightGBM sets no SO_REUSEADDR) could
        not be bound again for a minute: a second fit with ``local_listen_port`` would fail.
        """
        end = time.monotonic() + CLOSE_SECONDS
        with self.client.as_current():
            for actor in self.actors:
                with contextlib.suppress(Exception):  # a lost or stuck worker
                    actor.close().result(timeout=max(end - time.monotonic(), 0.01))
            # Forget the actors now: handles in reference cycles would keep them (and their
            # partitions' inputs) in the workers' memory until Python's next collection.
            self.client.cancel(self.futures)
        self.actors, self.futures = [], []
        _OPEN.discard(self)

    def _wait(self, stage: str, futures: Sequence[Any]) -> list[Any]:
        deadline = time.monotonic() + self.timeout
        results = []
        with self.client.as_current():  # actor handles bind to the current client
            for worker, future in zip(self.workers, futures, strict=True):
                results.append(self._result(worker, future, stage, deadline))
        return results

    def _result(self, worker: str, future: Any, stage: str, deadline: float) -> Any:
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except TimeoutError:
                self._check_alive(stage)
                if time.monotonic() > deadline:
                    raise DistributedFitError(
                        f"The distributed fit timed out at {stage}: worker {worker} did not "
                        f"answer within {self.timeout:.0f} s (time_out). A LightGBM call "
                        f"waits for every worker of the fit; raise "
                        f"params={{'time_out': minutes}} for slow workers or links."
                    ) from None
            except Exception as exc:
                # LightGBM's socket errors on one worker usually mean that a peer died.
                self._check_alive(stage, grace=GRACE_SECONDS if _from_lightgbm(exc) else 0.0)
                raise DistributedFitError(
                    f"The distributed fit failed at {stage} on worker {worker}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    def _check_alive(self, stage: str, grace: float = 0.0) -> None:
        """Raise if a worker of the fit left the cluster (within ``grace`` seconds)."""
        end = time.monotonic() + grace
        while True:
            present = set(self.client.nthreads())
            lost = [w for w in self.workers if w not in present]
            if lost:
                raise DistributedFitError(
                    f"The distributed fit lost worker(s) {lost} at {stage}: the partitions they "
                    f"held and LightGBM's network between the workers are gone, so the fit "
                    f"cannot go on. Fit again (lazy partitions are read again from their "
                    f"source; persist data again if it was persisted)."
                )
            if time.monotonic() >= end:
                return
            time.sleep(0.2)


def _from_lightgbm(exc: BaseException) -> bool:
    from lightgbm.basic import LightGBMError

    return isinstance(exc, LightGBMError)
