"""Checkpoint durability: a fit killed at ANY point of a checkpoint write resumes.

Every write goes: new round directory complete and fsynced -> ``LATEST`` switched atomically
-> older rounds pruned. These tests crash the write at every file-system step it takes
(in-process injection) and SIGKILL forked fits at random times; afterwards ``LATEST`` must
name a complete checkpoint and the resumed fit must equal an uninterrupted one.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time

import numpy as np
import pytest

from opboost import Booster
from opboost.core.callbacks import Checkpoint


class Crash(BaseException):
    """A simulated power cut / kill at one file-system step."""


def booster(**params):
    defaults = {"base_learner": "sklearn_tree", "n_rounds": 6, "random_state": 0}
    return Booster(**{**defaults, **params, "reward_shift": -0.3})


def _instrument(monkeypatch, crash_at: int | None) -> list[str]:
    """Count (and crash at the ``crash_at``-th) file-system step of checkpoint writes."""
    calls: list[str] = []

    def wrap(owner, name):
        real = getattr(owner, name)

        def step(*args, **kwargs):
            calls.append(name)
            if crash_at is not None and len(calls) == crash_at:
                raise Crash(f"crash at step {crash_at} ({name})")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, step)

    wrap(os, "replace")
    wrap(os, "fsync")
    wrap(shutil, "rmtree")
    wrap(np, "save")
    return calls


@pytest.mark.slow
def test_crash_at_every_step_of_a_checkpoint_write_leaves_a_resumable_checkpoint(
    synthetic_log, tmp_path, monkeypatch
):
    """Crash the fit at each file-system step of its checkpoint writes (every=2, and the
    final write of round 6 rewrites the round LATEST names): the directory always resumes,
    from the old or the new state, to the uninterrupted fit's predictions."""
    data = synthetic_log.data
    X = data.contexts
    full = booster().fit(data)
    with monkeypatch.context() as m:
        calls = _instrument(m, None)
        booster().fit(data, callbacks=[Checkpoint(tmp_path / "count", every=2)])
        n_steps = len(calls)
    assert n_steps > 10
    for k in range(1, n_steps + 1):
        directory = tmp_path / f"crash-{k}"
        with monkeypatch.context() as m:
            _instrument(m, k)
            with pytest.raises(Crash):
                booster().fit(data, callbacks=[Checkpoint(directory, every=2)])
        if (directory / "LATEST").is_file():
            restored = Checkpoint(directory).load_checkpoint()  # must not be unreadable
            assert restored["round"] in (2, 4, 6)
        resumed = booster().fit(data, callbacks=[Checkpoint(directory, every=2)])
        np.testing.assert_array_equal(resumed.decision_function(X), full.decision_function(X))
        names = sorted(p.name for p in directory.iterdir())
        assert names == ["LATEST", "round-000006"], f"crash at step {k}: {names}"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_sigkill_at_random_times_during_checkpointed_fits_always_resumes(synthetic_log, tmp_path):
    """24 forked processes fitting again and again (Checkpoint every round; each fit
    resumes, finished ones rewrite the final round) SIGKILLed at random times: after each
    kill the checkpoint loads, and the final resume equals the uninterrupted fit."""
    data = synthetic_log.data
    X = data.contexts
    n_rounds = 25
    full = booster(n_rounds=n_rounds).fit(data)
    start = time.perf_counter()
    booster(n_rounds=n_rounds).fit(data, callbacks=[Checkpoint(tmp_path / "timing", every=1)])
    duration = time.perf_counter() - start
    rng = random.Random(20)
    directory = tmp_path / "ckpt"
    kills = 0
    for _ in range(24):
        pid = os.fork()
        if pid == 0:  # child: fit (resuming) again and again until killed; never returns
            try:
                while True:  # once finished, every fit rewrites the round LATEST names
                    booster(n_rounds=n_rounds).fit(data, callbacks=[Checkpoint(directory, every=1)])
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.0, 0.6 * duration))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        kills += os.WIFSIGNALED(status)
        if (directory / "LATEST").is_file():
            restored = Checkpoint(directory).load_checkpoint()
            assert 1 <= restored["round"] <= n_rounds
    assert kills == 24
    resumed = booster(n_rounds=n_rounds).fit(data, callbacks=[Checkpoint(directory, every=1)])
    np.testing.assert_array_equal(resumed.decision_function(X), full.decision_function(X))
