"""Offline policy learning from logged bandit feedback with Vowpal Wabbit's ``--cb_adf``.

:class:`VWOfflinePolicy` reads a :class:`opboost.LoggedBandit` (contexts, logged actions,
rewards, propensities) and trains VW's ``--cb_adf`` cost regressor on it: each logged row is
one ADF example whose logged action carries the label ``cost:propensity`` with cost
``-reward``; ``cb_type`` picks the off-policy correction ("dr" doubly robust, "ips", or
"mtr"). ``n_passes`` passes over the log go in fresh seeded orders. The fitted policy is
greedy: the action with the lowest predicted cost.

It is a policy learner plugin (kind "policy_learner", name ``vw_cb_adf``), like opboost's
built-in ``reward_regression``: a study puts it beside the boosters on the same logged rows
with ``policy_learner = { name = "vw_cb_adf", cb_type = "dr" }``.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.api.constraints import Interval, Options
from opboost.api.data import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.policy_learner import PolicyLearner
from opboost.api.validation import check_fitted, check_random_state
from opboost_vw._text import action_lines, load_workspace, save_workspace, shared_line

__all__ = ["OFFLINE_CB_TYPES", "VWOfflinePolicy"]

OFFLINE_CB_TYPES = ("dr", "ips", "mtr")


def _dense_rows(X: Any) -> np.ndarray:
    """Contexts as a float64 (m, d) array (CSR densified)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    return np.asarray(X, dtype=np.float64)


class VWOfflinePolicy(PolicyLearner):
    """Greedy policy from VW ``--cb_adf`` trained on logged (action, reward, propensity) rows.

    Parameters
    ----------
    cb_type : off-policy correction: "dr" (doubly robust, default), "ips" or "mtr".
    n_passes : passes over the log, >= 1, each in a fresh seeded order.
    learning_rate : VW's ``-l`` (> 0).
    interactions : cross context and action features (``-q sa``).
    bit_precision : VW's ``-b`` (16-24).
    random_state : seed of the pass orders and of VW's ``--random_seed``.

    Fitted attributes: ``n_actions_``, ``n_features_``, ``model_`` (the VW model's bytes,
    VW's own binary format).
    """

    name: ClassVar[str] = "vw_cb_adf"
    _parameter_constraints: ClassVar[dict] = {
        "n_passes": [Interval(numbers.Integral, 1, None)],
        "cb_type": [Options(OFFLINE_CB_TYPES)],
        "learning_rate": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "interactions": ["boolean"],
        "bit_precision": [Interval(numbers.Integral, 16, 24)],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        cb_type: str = "dr",
        n_passes: int = 3,
        learning_rate: float = 0.5,
        interactions: bool = True,
        bit_precision: int = 18,
        random_state: Any = None,
    ) -> None:
        self.cb_type = cb_type
        self.n_passes = n_passes
        self.learning_rate = learning_rate
        self.interactions = interactions
        self.bit_precision = bit_precision
        self.random_state = random_state

    def _vw_args(self, seed: int) -> list[str]:
        self.validate_params()
        args = ["--cb_adf", "--cb_type", self.cb_type, "-l", f"{self.learning_rate!r}"]
        args += ["-b", str(int(self.bit_precision))]
        if self.interactions:
            args += ["-q", "sa"]
        return [*args, "--random_seed", str(seed), "--quiet"]

    def fit(self, data: LoggedBandit) -> VWOfflinePolicy:
        """Train on every logged row of ``data`` for ``n_passes`` passes."""
        from vowpalwabbit import Workspace

        if not isinstance(data, LoggedBandit):
            raise InvalidParameterError(
                f"VWOfflinePolicy.fit expects a LoggedBandit. Got {type(data).__name__}; build "
                f"one with opboost.LoggedBandit(contexts, actions, propensities, rewards, K)."
            )
        rng = check_random_state(self.random_state)
        args = self._vw_args(int(rng.integers(2**31 - 1)))
        X = _dense_rows(data.contexts)
        K = int(data.n_actions)
        shared = [shared_line(row) for row in X]
        labels = [
            f"0:{-float(r)!r}:{float(p)!r}"
            for r, p in zip(data.rewards, data.propensities, strict=True)
        ]
        workspace = Workspace(arg_list=args)
        for _ in range(int(self.n_passes)):
            for i in rng.permutation(len(shared)):
                workspace.learn([shared[i], *action_lines(K, int(data.actions[i]), labels[i])])
        self._args = args
        self.model_ = save_workspace(workspace)
        self._ws = workspace
        self.n_actions_, self.n_features_ = K, X.shape[1]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of every action (negated predicted costs), (m, K); higher is better."""
        check_fitted(self, "model_")
        X = _dense_rows(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_:
            raise InvalidParameterError(
                f"X must have shape (m, {self.n_features_}), the training feature count. "
                f"Got {X.shape}."
            )
        if getattr(self, "_ws", None) is None:
            self._ws = load_workspace(self._args, self.model_)
        plain = action_lines(self.n_actions_)
        costs = [self._ws.predict([shared_line(row), *plain]) for row in X]
        return -np.asarray(costs, dtype=np.float64).reshape(X.shape[0], self.n_actions_)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_ws", None)  # rebuilt from model_ (VW's bytes) on first use
        return state
