"""Bandit data where only the action matters: action 2 pays 0.6, every other action 0.4,
whatever the context. Nothing beyond the best constant action is learnable, so
``Booster(validation_fraction=..., safe=True)`` falls back to action 2.

``action_only_log`` is a logged bandit data set (uniform logging, noise contexts);
``ActionOnly`` is the same reward structure as a multilabel data set (labels independent of
the features) for studies; :func:`registered_action_only` registers it as a plugin would.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.dataset import Dataset, SupervisedData
from opboost.api.hookspecs import hookimpl
from opboost.core.registry import reset_registry


def action_means(k: int) -> np.ndarray:
    """Expected reward of each action: 0.6 for action 2, 0.4 for the others."""
    return np.where(np.arange(k) == 2, 0.6, 0.4)


def action_only_log(seed: int = 0, n: int = 600, k: int = 4) -> LoggedBandit:
    """Rewards depend on the action only (action 2 pays 0.6, others 0.4); noise contexts."""
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, k, n)
    rewards = (rng.uniform(size=n) < action_means(k)[actions]).astype(float)
    return LoggedBandit(rng.normal(size=(n, 3)), actions, np.full(n, 1.0 / k), rewards, k)


class ActionOnly(Dataset):
    """Noise features and (n, K) 0/1 labels drawn independently of them with the means of
    :func:`action_means` (multilabel rewards: the reward of action a is label a)."""

    name: ClassVar[str] = "action_only_test"
    task: ClassVar[str] = "multilabel"
    bundled: ClassVar[bool] = True

    def __init__(self, *, n_samples: int = 800, n_actions: int = 4) -> None:
        self.n_samples = n_samples
        self.n_actions = n_actions

    def load(self, data_dir: Any = None) -> SupervisedData:
        rng = np.random.default_rng(0)
        n, k = self.n_samples, self.n_actions
        y = (rng.uniform(size=(n, k)) < action_means(k)).astype(np.int64)
        X = rng.normal(size=(n, 3))
        return SupervisedData(self.name, X, y, "multilabel", k, reward="multilabel")


def registered_action_only(monkeypatch: Any, tmp_path: Path) -> None:
    """Install :class:`ActionOnly` as a plugin distribution would be (a ``.dist-info`` with an
    ``opboost`` entry point, on ``sys.path``) and rebuild the registry; the caller resets the
    registry afterwards."""
    module = types.ModuleType("opboost_action_only_test_plugin")

    @hookimpl
    def opboost_register_datasets():
        return [ActionOnly]

    module.opboost_register_datasets = opboost_register_datasets
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.delenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    info = tmp_path / "opboost_action_only_test-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: opboost-action-only-test\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[opboost]\naction_only_test = {module.__name__}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reset_registry()
