"""Offline policy learning from logged bandit feedback with Vowpal Wabbit's ``--cb_adf``.

:class:`VWOfflinePolicy` reads a :class:`opboost.LoggedBandit` (contexts, logged actions,
rewards, propensities) and trains VW's ``--cb_adf`` cost regressor on it: each logged row is
one ADF example whose logged action carries the label ``cost:propensity`` with cost
``-reward``; ``cb_type`` picks the off-policy correction ("dr" doubly robust, "ips", or
"mtr"). ``n_passes`` passes over the log go in fresh seeded orders. The fitted policy is
greedy: the action with the lowest predicted cost.

Catalogue logs (``candidates`` and/or ``action_features``): a row's example holds one action
line per candidate of the row (every item without ``candidates``). With ``action_features``
an item's line carries its features (:func:`opboost_vw._text.item_lines`; the log's
``item_schema`` marks categorical columns, written as indicators), crossed with the context
by ``-q sa``, so the policy scores any catalogue with the same item features, new items
included: ``decision_function``, ``predict`` and ``predict_proba`` then take the catalogue
``action_features=`` (n_items, d_a) and ``candidates=`` (an (m, n_items) mask; None: every
item). Without item features an action's line is its indicator ``a<k>``, as on classic logs.

It is a policy learner plugin (kind "policy_learner", name ``vw_cb_adf``), like opboost's
built-in ``reward_regression``: a study puts it beside the boosters on the same logged rows
with ``policy_learner = { name = "vw_cb_adf", cb_type = "dr" }``.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.api import (
    Interval,
    InvalidParameterError,
    LoggedBandit,
    Options,
    PolicyLearner,
    check_fitted,
    check_memory,
    check_random_state,
    serving_mask,
)
from opboost_vw._text import item_lines, load_workspace, save_workspace, shared_line

__all__ = ["OFFLINE_CB_TYPES", "VWOfflinePolicy"]

OFFLINE_CB_TYPES = ("dr", "ips", "mtr")


def _dense_rows(X: Any) -> np.ndarray:
    """Contexts as a float64 (m, d) array (CSR densified)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    return np.asarray(X, dtype=np.float64)


def _check_lines(data: LoggedBandit) -> None:
    """Refuse logs whose examples cannot be held in memory: each row's example lists one
    action line per candidate (every action without candidates), 8 bytes a line at least."""
    n, k = len(data), int(data.n_actions)
    lines = int(np.sum(data.n_candidates)) if data.candidates is not None else n * k
    check_memory(
        8 * lines,
        "VWOfflinePolicy.fit",
        f"{n:,} examples of {k:,} actions, {lines:,} action lines",
        "Give each row its candidate set (LoggedBandit(candidates=...)): only candidates are "
        "written; or use fewer actions.",
    )


def _row_items(candidates: Any, n: int, n_items: int) -> list[np.ndarray]:
    """Each row's candidate items, ascending (every item when ``candidates`` is None)."""
    if candidates is None:
        every = np.arange(n_items)
        return [every] * n
    mask = sp.csr_matrix(candidates)
    mask.sort_indices()
    return np.split(mask.indices.astype(np.int64), mask.indptr[1:-1])


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
    VW's own binary format), ``n_action_features_`` (d_a of the item features; None when
    fitted without them) and ``categorical_items_`` (their categorical columns).
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
        K = int(data.n_actions)
        _check_lines(data)
        X = _dense_rows(data.contexts)
        self.n_action_features_, self.categorical_items_ = None, ()
        if data.action_features is None:
            lines = [f"|a a{k}" for k in range(K)]
        else:
            schema = data.item_schema
            self.categorical_items_ = schema.categorical_features if schema else ()
            self.n_action_features_ = int(data.action_features.shape[1])
            lines = item_lines(data.action_features, self.categorical_items_)
        self.item_schema_ = data.item_schema
        shared = [shared_line(row) for row in X]
        labels = [
            f"0:{-float(r)!r}:{float(p)!r}"
            for r, p in zip(data.rewards, data.propensities, strict=True)
        ]
        examples = []  # row i's example, its logged action's line labelled
        for i, items in enumerate(_row_items(data.candidates, len(X), K)):
            logged = int(data.actions[i])
            examples.append(
                [shared[i]]
                + [f"{labels[i]} {lines[k]}" if k == logged else lines[k] for k in items]
            )
        workspace = Workspace(arg_list=args)
        for _ in range(int(self.n_passes)):
            for i in rng.permutation(len(examples)):
                workspace.learn(examples[i])
        self._args = args
        self.model_ = save_workspace(workspace)
        self._ws = workspace
        self.n_actions_, self.n_features_ = K, X.shape[1]
        return self

    def decision_function(
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """Scores (negated predicted costs), (m, K), higher is better; -inf outside
        ``candidates`` (an (m, K) mask) when given. A policy fitted on item features scores
        the catalogue ``action_features`` (K', d_a) instead: (m, K')."""
        check_fitted(self, "model_")
        owner = "VWOfflinePolicy.decision_function"
        X = _dense_rows(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_:
            raise InvalidParameterError(
                f"X must have shape (m, {self.n_features_}), the training feature count. "
                f"Got {X.shape}."
            )
        lines = self._catalogue_lines(action_features, owner)
        m, k = X.shape[0], len(lines)
        rows = _row_items(
            None if candidates is None else serving_mask(candidates, (m, k), owner), m, k
        )
        if getattr(self, "_ws", None) is None:
            self._ws = load_workspace(self._args, self.model_)
        scores = np.full((m, k), -np.inf)
        for i, items in enumerate(rows):
            costs = self._ws.predict([shared_line(X[i]), *(lines[a] for a in items)])
            scores[i, items] = -np.asarray(costs, dtype=np.float64)
        return scores

    def _catalogue_lines(self, action_features: Any, owner: str) -> list[str]:
        """The action lines of the catalogue served: the K indicators, or the items of
        ``action_features`` (a DataFrame is encoded with the log's item schema)."""
        width = getattr(self, "n_action_features_", None)
        if width is None:
            if action_features is not None:
                raise InvalidParameterError(
                    f"{owner}: this policy was fitted without action_features (K = "
                    f"{self.n_actions_} fixed actions), so it cannot score a catalogue; "
                    f"leave action_features=None."
                )
            return [f"|a a{k}" for k in range(self.n_actions_)]
        if action_features is None:
            raise InvalidParameterError(
                f"{owner}: this policy was fitted on item features (d_a = {width}); pass the "
                f"catalogue action_features=, an (n_items, {width}) array, one row per item."
            )
        if self.item_schema_ is not None and hasattr(action_features, "columns"):
            action_features = self.item_schema_.encode(action_features, owner)
        features = np.asarray(action_features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != width or not np.isfinite(features).all():
            raise InvalidParameterError(
                f"{owner}: action_features must be a finite (n_items, {width}) array, one row "
                f"per item with the training item features. Got shape {features.shape}."
            )
        return item_lines(features, self.categorical_items_)

    def predict(self, X: Any, *, candidates: Any = None, action_features: Any = None):
        """Greedy actions (m,): the best-scored (candidate, when given) action or item."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        return scores.argmax(axis=1)

    def predict_proba(self, X: Any, *, candidates: Any = None, action_features: Any = None):
        """The greedy policy as one-hot probabilities (m, K)."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        probs = np.zeros_like(scores)
        probs[np.arange(len(scores)), scores.argmax(axis=1)] = 1.0
        return probs

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_ws", None)  # rebuilt from model_ (VW's bytes) on first use
        return state
