"""Vowpal Wabbit ``--cb_explore_adf`` as an opboost online bandit learner (``vw_cb_explore``).

Each context becomes one multi-line ADF example (:mod:`opboost_vw._text`): a shared line with
the context features and one line per action, crossed with ``-q sa``. VW returns the
exploration distribution p_t (epsilon-greedy over its greedy action, or bagging over
``bag_size`` bootstrapped policies plus epsilon); opboost samples the action from p_t with its
own seeded generator, and learns from cost ``-reward`` with the probability p_t(action) it
acted with. VW's own randomness (bootstrap weights of ``bag``) is seeded by
``--random_seed``; the workspace is quiet.

The learner pickles and deep-copies (as studies do when they score a snapshot) by saving the
VW model in VW's binary format and reloading it; VW never runs Python code from a model.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np

from opboost.api import BanditLearner, Interval, Options, as_context, check_random_state
from opboost_vw._text import action_lines, load_workspace, save_workspace, shared_line

__all__ = ["CB_TYPES", "EXPLORATIONS", "VWCBExplore"]

EXPLORATIONS = ("epsilon", "bag")
CB_TYPES = ("mtr", "ips", "dr")


class VWCBExplore(BanditLearner):
    """Online contextual bandit with Vowpal Wabbit's ``--cb_explore_adf``.

    Parameters
    ----------
    n_actions : K >= 2.
    exploration : "epsilon" (epsilon-greedy) or "bag" (``bag_size`` bootstrapped policies,
        mixed with ``epsilon`` uniform exploration).
    epsilon : uniform exploration share in [0, 1].
    bag_size : policies in the bag, >= 1 (only for "bag").
    cb_type : VW's cost estimator: "mtr" (VW's default for ADF), "ips" or "dr".
    learning_rate : VW's ``-l`` (> 0).
    interactions : cross context and action features (``-q sa``); False keeps only
        per-action biases plus context features shared by all actions.
    bit_precision : VW's ``-b``, 2**b feature-hash slots (16-24).
    random_state : seed of the action sampling and of VW's ``--random_seed``.
    """

    name: ClassVar[str] = "vw_cb_explore"
    _parameter_constraints: ClassVar[dict] = {
        "n_actions": [
            Interval(int, 2, None, fix="pass the number of actions K, e.g. n_actions=10 for digits")
        ],
        "exploration": [Options(EXPLORATIONS)],
        "epsilon": [Interval(numbers.Real, 0.0, 1.0)],
        "bag_size": [Interval(numbers.Integral, 1, None)],
        "cb_type": [Options(CB_TYPES)],
        "learning_rate": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "interactions": ["boolean"],
        "bit_precision": [Interval(numbers.Integral, 16, 24)],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_actions: int = 2,
        exploration: str = "epsilon",
        epsilon: float = 0.05,
        bag_size: int = 5,
        cb_type: str = "mtr",
        learning_rate: float = 0.5,
        interactions: bool = True,
        bit_precision: int = 18,
        random_state: Any = None,
    ) -> None:
        self.n_actions = n_actions
        self.exploration = exploration
        self.epsilon = epsilon
        self.bag_size = bag_size
        self.cb_type = cb_type
        self.learning_rate = learning_rate
        self.interactions = interactions
        self.bit_precision = bit_precision
        self.random_state = random_state

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_actions": 3, "random_state": 0}

    # --- setup ------------------------------------------------------------------------------

    def _vw_args(self, seed: int) -> list[str]:
        """The validated VW command line."""
        self.validate_params()
        args = ["--cb_explore_adf", "--cb_type", self.cb_type, "--epsilon", f"{self.epsilon!r}"]
        if self.exploration == "bag":
            args += ["--bag", str(int(self.bag_size))]
        args += ["-l", f"{self.learning_rate!r}", "-b", str(int(self.bit_precision))]
        if self.interactions:
            args += ["-q", "sa"]
        return [*args, "--random_seed", str(seed), "--quiet"]

    def _ensure(self, x: Any) -> np.ndarray:
        """``x`` as a (d,) float array; builds the workspace on the first call."""
        if getattr(self, "_ws", None) is None:
            K = self._check_n_actions()
            rng = check_random_state(self.random_state)
            seed = int(rng.integers(2**31 - 1))
            self._args = self._vw_args(seed)
            from vowpalwabbit import Workspace

            self._ws = Workspace(arg_list=self._args)
            self._rng = rng
            self._K = K
            self._plain = action_lines(K)
            self._last: tuple[np.ndarray, np.ndarray] | None = None
            self.n_features_ = None
        x = as_context(x, self.n_features_, type(self).__name__)
        if self.n_features_ is None:
            self.n_features_ = x.shape[0]
        return x

    # --- protocol ---------------------------------------------------------------------------

    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """VW's exploration distribution over the K actions for context ``x`` (d,): (K,)."""
        x = self._ensure(x)
        probs = np.asarray(self._ws.predict([shared_line(x), *self._plain]), dtype=np.float64)
        probs = np.clip(probs, 0.0, None)
        return probs / probs.sum()

    def predict_one(self, x: np.ndarray) -> int:
        """Sample an action from VW's distribution for ``x`` (d,); remember the distribution."""
        probs = self.action_probs_one(x)
        action = int(np.searchsorted(np.cumsum(probs), self._rng.random() * probs.sum(), "right"))
        action = min(action, self._K - 1)
        self._last = (np.array(x, dtype=np.float64), probs)
        return action

    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        """Learn from ``reward`` of ``action`` on ``x`` (d,) as VW cost ``-reward``."""
        x = self._ensure(x)
        action = self._check_action(action, self._K)
        last = self._last
        if last is not None and np.array_equal(last[0], x):
            probs = last[1]
        else:  # learning without the matching predict_one: the current distribution
            probs = self.action_probs_one(x)
        prob = max(float(probs[action]), 1e-6)
        label = f"0:{-float(reward)!r}:{prob!r}"
        self._ws.learn([shared_line(x), *action_lines(self._K, action, label)])
        self._last = None

    # --- copies -----------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if state.get("_ws") is not None:
            state["_ws"] = save_workspace(self._ws)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        model = state.get("_ws")
        if isinstance(model, bytes):
            state["_ws"] = load_workspace(state["_args"], model)
        self.__dict__.update(state)
