"""Direct method (DM) and doubly robust (DR) estimators, both built on a reward model.

A reward model q(x, a) ~ E[r | x, a] is fitted on the logged rows, with features
[x; onehot(a)] (n, d + K) and target r. Then, with pi the evaluated policy:

    DM:  V = 1/n sum_i sum_a pi(a|x_i) q(x_i, a)
    DR:  V = 1/n sum_i [ sum_a pi(a|x_i) q(x_i, a) + w_i (r_i - q(x_i, a_i)) ],
         w_i = pi(a_i|x_i) / p_i            (Dudik, Langford & Li 2011).

With ``n_folds`` > 1 the model is cross-fitted: rows are split into seeded folds and each
fold's q comes from a model trained on the other folds, so the model never predicts rows it
was trained on (this keeps DR unbiased up to the model's error on unseen rows).

On a log with ``candidates`` the model predicts only each row's candidate actions; q is 0
elsewhere, where the evaluated policy has no mass (``check_action_probs`` rejects it).
Boosting on candidate pairs (``pair_coefficients``) uses a model on [x; phi(a)], the
actions' own features, instead, so that items never logged get predictions.

Both drive boosting with per-action coefficients Gamma (n, K), V(pi) = (1/n) sum_i <pi_i,
Gamma_i> (``coefficients``): DM Gamma_i(a) = q(x_i, a); DR Gamma_i(a) = q(x_i, a)
+ 1[a = a_i] (r_i - q(x_i, a_i)) / p_i. For any fixed q, E[Gamma_i(a) | x_i] is the true mean
reward of a at x_i when the propensities are right, so the DR training objective's expectation
is the policy's true value.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.api.constraints import Interval, Satisfies
from opboost.api.data.candidates import candidate_pairs
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.pairs import PairRows, pair_features
from opboost.api.estimator import (
    ConfidenceInterval,
    Estimator,
    LogsScorer,
    check_action_probs,
    normal_interval,
)
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state
from opboost.lgbm.onehot_scores import onehot_action_scores
from opboost.lgbm.process_threads import keeping_threads
from opboost.lgbm.threads import PREDICT_WORK_PER_THREAD, lightgbm_threads

__all__ = [
    "DirectMethod",
    "DoublyRobust",
    "RewardModelScorer",
    "action_features",
    "default_reward_model",
    "dr_coefficients",
    "pair_features",
]


def default_reward_model(random_state: int | None = None) -> Any:
    """The reward model used when ``reward_model=None``: a small LightGBM regressor.

    LightGBM rather than scikit-learn's HistGradientBoostingRegressor because it accepts
    sparse CSR contexts directly, is single-threaded here (``n_jobs=1``, deterministic under a
    seed) and was about 50x faster on digits on a busy 2-core machine. Trees on [x; onehot(a)]
    learn the action-context interactions that classification-style rewards need.
    """
    import lightgbm as lgb

    return lgb.LGBMRegressor(
        n_estimators=100,
        learning_rate=0.1,
        num_leaves=15,
        min_child_samples=10,
        n_jobs=1,
        random_state=random_state,
        verbose=-1,
    )


def action_features(contexts: Any, actions: np.ndarray, n_actions: int) -> Any:
    """Stack contexts (m, d) with one-hot actions (m,) into (m, d + K) reward-model features.

    Dense contexts give a dense array; CSR contexts give a CSR matrix.
    """
    onehot = np.zeros((len(actions), n_actions))
    onehot[np.arange(len(actions)), actions] = 1.0
    if sp.issparse(contexts):
        return sp.hstack([contexts, sp.csr_matrix(onehot)], format="csr")
    return np.hstack([np.asarray(contexts, dtype=np.float64), onehot])


def _prediction_threads(model: Any, n_rows: int) -> dict[str, int]:
    """``num_threads`` of a fitted LightGBM reward model's prediction of ``n_rows`` rows (a
    model with a ``booster_``: LightGBM's own or a wrapper of it), chosen by the work (rows x
    trees; predictions do not depend on it), whatever threads its fit took; {} for another
    model. The default model fits on one thread, and its predictions of every action were the
    largest part of a 1,000,000-row default fit (27.7 s of 109 s, docs/benchmarks/defaults.md)."""
    booster = getattr(model, "booster_", None)
    if booster is None:
        return {}
    work = n_rows * booster.num_trees()
    return {"num_threads": lightgbm_threads(work, per_thread=PREDICT_WORK_PER_THREAD)}


def _predict_rows(model: Any, rows: Any) -> np.ndarray:
    """``model.predict(rows)`` as float64 (m,), with :func:`_prediction_threads` (LightGBM's
    process-wide thread count put back afterwards, for a fit's rounds that follow)."""
    threads = _prediction_threads(model, rows.shape[0])
    with keeping_threads():
        predicted = model.predict(rows, **threads)
    return np.asarray(predicted, dtype=np.float64).reshape(rows.shape[0])


def _fresh(model: Any) -> Any:
    """An unfitted copy of ``model`` (sklearn ``clone`` when it has ``get_params``)."""
    if hasattr(model, "get_params"):
        from sklearn.base import clone

        return clone(model)
    return copy.deepcopy(model)


def dr_coefficients(
    data: LoggedBandit, q: np.ndarray, actions: np.ndarray | None = None
) -> np.ndarray:
    """Doubly robust per-action coefficients from reward predictions ``q`` (n, K):
    Gamma_i(a) = q_i(a) + 1[a = a_i] (r_i - q_i(a_i)) / p_i, shape (n, K). ``actions``
    (default ``data.actions``) are the logged actions' columns of ``q`` (their slots, for
    slot coordinates)."""
    rows = np.arange(len(data))
    actions = data.actions if actions is None else actions
    gamma = np.array(q, dtype=np.float64)
    gamma[rows, actions] += (data.rewards - q[rows, actions]) / data.propensities
    return gamma


def _other_rows(n: int, fold: np.ndarray, n_folds: int) -> np.ndarray:
    """The rows (sorted) of n that a fold's model is fitted on: all but ``fold`` (every row
    when ``n_folds`` is 1). A mask, not ``np.setdiff1d``, which sorts: 1.1 s of a
    1,000,000-row fit."""
    train = np.ones(n, dtype=bool)
    if n_folds > 1:
        train[fold] = False
    return np.flatnonzero(train)


def _reads_split_columns_only(model: Any) -> bool:
    """Whether ``model`` is a fitted LightGBM model whose trees read only their split columns
    (no linear leaves)."""
    import lightgbm as lgb

    return isinstance(model, lgb.LGBMModel) and not model.get_params().get("linear_tree", False)


class RewardModelScorer(LogsScorer):
    """DM or DR on fixed logs: the cross-fitted reward model q (n, K) is fitted once on them
    (or ``q`` given, fitted elsewhere), then each policy's per-row values only re-weigh it."""

    def __init__(
        self, estimator: _RewardModelEstimator, data: LoggedBandit, q: np.ndarray | None = None
    ) -> None:
        super().__init__(estimator, data)
        self.q = estimator.reward_predictions(data) if q is None else np.asarray(q, float)

    def row_values(self, action_probs: np.ndarray) -> np.ndarray:
        probs = check_action_probs(self.data, action_probs, type(self.estimator).__name__)
        return self.estimator.values_at(self.data, probs, self.q)

    def interval(self, action_probs: np.ndarray, *, alpha: float = 0.05) -> ConfidenceInterval:
        return normal_interval(self.row_values(action_probs), 1 - alpha)


class _RewardModelEstimator(Estimator):
    """Shared reward-model fitting and cross-fitting of DM and DR."""

    action_coefficients: ClassVar[bool] = True  # Gamma (n, K)
    takes_reward_predictions: ClassVar[bool] = True
    needs_fixed_actions: ClassVar[bool] = True  # q over [x; onehot(a)]

    _parameter_constraints: ClassVar[dict] = {
        "reward_model": [
            None,
            Satisfies(
                lambda m: hasattr(m, "fit") and hasattr(m, "predict"),
                "a regressor with fit(X, y) and predict(X)",
            ),
        ],
        "n_folds": [
            Interval(int, 1, None, fix="use 1 to fit and predict on all rows, or 2-5 to cross-fit")
        ],
        "random_state": ["random_state"],
    }

    def __init__(
        self, *, reward_model: Any = None, n_folds: int = 2, random_state: int | None = None
    ) -> None:
        self.reward_model = reward_model
        self.n_folds = n_folds
        self.random_state = random_state

    def reward_predictions(self, data: LoggedBandit) -> np.ndarray:
        """q(x_i, a) for every logged row and action, shape (n, K), cross-fitted.

        Each call fits fresh models (seeded by ``random_state``), so repeated calls agree.
        With ``data.candidates`` only the candidate actions are predicted; q is 0 elsewhere.
        """
        n = len(data)
        template, folds = self._cross_fitting(n)
        q = np.empty((n, data.n_actions))
        for fold in folds:
            train = _other_rows(n, fold, self.n_folds)
            model = _fresh(template)
            model.fit(
                action_features(data.contexts[train], data.actions[train], data.n_actions),
                data.rewards[train],
            )
            if data.candidates is None:
                q[fold] = self._predict_all_actions(model, data.contexts[fold], data.n_actions)
            else:
                q[fold] = self._predict_candidates(
                    model, data.contexts[fold], data.n_actions, data.candidates[fold]
                )
        return q

    def _cross_fitting(self, n: int) -> tuple[Any, list[np.ndarray]]:
        """(the unfitted model, the seeded folds of n rows) of one cross-fitting."""
        self.validate_params()
        if self.n_folds > 1 and self.n_folds > n:
            raise InvalidParameterError(
                f"The 'n_folds' parameter of {type(self).__name__} must be <= the number of "
                f"rows ({n}). Got {self.n_folds} instead; use fewer folds."
            )
        rng = check_random_state(self.random_state)
        seed = int(rng.integers(2**31 - 1))
        template = default_reward_model(seed) if self.reward_model is None else self.reward_model
        order = np.arange(n) if self.n_folds == 1 else rng.permutation(n)
        return template, np.array_split(order, self.n_folds)

    def pair_reward_predictions(self, data: LoggedBandit, pairs: PairRows) -> np.ndarray:
        """q(x_i, a) at each row's candidates in slot coordinates, (n, C), 0 in the padded
        slots: cross-fitted models on the logged pairs [x_i; phi(a_i)] (phi: the pairs'
        ``action_features``), so items never logged get predictions too."""
        n, view, phi = len(data), pairs.view, pairs.action_features
        template, folds = self._cross_fitting(n)
        q = np.zeros(view.n_pairs)
        fold_of = np.empty(n, dtype=np.int64)
        for k, fold in enumerate(folds):
            fold_of[fold] = k
        pair_fold = fold_of[view.rows]
        for k, fold in enumerate(folds):
            train = _other_rows(n, fold, self.n_folds)
            model = _fresh(template)
            features = pair_features(data.contexts[train], phi[data.actions[train]])
            model.fit(features, data.rewards[train])
            at = np.flatnonzero(pair_fold == k)
            for start in range(0, len(at), max(n, 1)):  # batches of n pairs
                p = at[start : start + n]
                design = pair_features(data.contexts[view.rows[p]], phi[view.pair_items[p]])
                q[p] = _predict_rows(model, design)
        return view.scatter(q, 0.0)

    @staticmethod
    def _predict_all_actions(model: Any, contexts: Any, n_actions: int) -> np.ndarray:
        """(m, K) predictions; a LightGBM model predicts only the actions its trees split on
        (:func:`opboost.lgbm.onehot_scores.onehot_action_scores`), another model one call
        per action, which keeps memory at (m, d + K)."""
        m = contexts.shape[0]
        if _reads_split_columns_only(model):
            threads = _prediction_threads(model, m * n_actions).get("num_threads")
            with keeping_threads():
                return onehot_action_scores(model, contexts, n_actions, num_threads=threads)
        columns = [
            _predict_rows(model, action_features(contexts, np.full(m, a), n_actions))
            for a in range(n_actions)
        ]
        return np.column_stack(columns)

    @staticmethod
    def _predict_candidates(
        model: Any, contexts: Any, n_actions: int, candidates: Any
    ) -> np.ndarray:
        """(m, K) predictions at the candidate (row, action) pairs, 0 elsewhere; batches of
        m pairs keep memory at (m, d + K), so a row's c candidates cost about c calls."""
        m = contexts.shape[0]
        rows, actions = candidate_pairs(candidates)
        q = np.zeros((m, n_actions))
        for start in range(0, len(rows), m):
            r, a = rows[start : start + m], actions[start : start + m]
            q[r, a] = _predict_rows(model, action_features(contexts[r], a, n_actions))
        return q

    def values_at(self, data: LoggedBandit, probs: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Per-row values (n,) of the policy ``probs`` (n, K) with the reward model ``q``."""
        raise NotImplementedError

    def round_values(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        probs = check_action_probs(data, action_probs, type(self).__name__)
        return self.values_at(data, probs, self.reward_predictions(data))

    def on_logs(
        self, data: LoggedBandit, reward_predictions: np.ndarray | None = None
    ) -> RewardModelScorer:
        """On fixed logs the reward model is fitted once
        ([`RewardModelScorer`][opboost.algorithms.estimators.direct.RewardModelScorer]), or
        ``reward_predictions`` (n, K) are its q."""
        return RewardModelScorer(self, data, reward_predictions)

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_folds": 2, "random_state": 0}


class DirectMethod(_RewardModelEstimator):
    """Direct method: V = 1/n sum_i sum_a pi(a|x_i) q(x_i, a) (evaluation only).

    Low variance, but biased by the reward model's error wherever pi puts mass the logger
    rarely explored. Round values, shape (n,): sum_a pi(a|x_i) q(x_i, a). Trains with the
    per-action coefficients Gamma = q
    ([`coefficients`][opboost.algorithms.estimators.direct.DirectMethod.coefficients]).

    Parameters
    ----------
    reward_model
        None (a small seeded LightGBM regressor, see
        [`default_reward_model`][opboost.algorithms.estimators.direct.default_reward_model]) or any
        object with ``fit(X, y)`` and ``predict(X)``; X is [x; onehot(a)] of shape (m, d + K), dense
        or CSR like the contexts. It is cloned (or deep-copied) per fold, never fitted in place.
    n_folds
        cross-fitting folds; 1 fits once on all rows and predicts on the same rows.
    random_state
        seed of the fold split and of the default model.
    """

    name: ClassVar[str] = "dm"
    supports_training: ClassVar[bool] = True

    def coefficients(self, data: LoggedBandit) -> np.ndarray:
        """Gamma_i(a) = q(x_i, a), shape (n, K): boosting towards the reward model's policy."""
        return self.reward_predictions(data)

    def pair_coefficients(
        self, data: LoggedBandit, pairs: PairRows, *, reward_predictions: Any = None
    ) -> np.ndarray:
        """Gamma = q at each row's candidates, (n, C) slot coordinates: ``reward_predictions``
        (a cross-fitted q the fit already has) or a reward model on [x; phi(a)]
        (``pair_reward_predictions``)."""
        if reward_predictions is not None:
            return np.array(reward_predictions, dtype=np.float64)
        return self.pair_reward_predictions(data, pairs)

    def values_at(self, data: LoggedBandit, probs: np.ndarray, q: np.ndarray) -> np.ndarray:
        """sum_a pi(a|x_i) q(x_i, a), (n,)."""
        return np.einsum("ij,ij->i", probs, q)


class DoublyRobust(_RewardModelEstimator):
    """Doubly robust: DM plus an IPS correction of the reward model's residual.

    Round values, shape (n,): sum_a pi(a|x_i) q(x_i, a) + w_i (r_i - q(x_i, a_i)). Unbiased
    when either the propensities or the (cross-fitted) reward model are correct; variance
    below IPS when q is good. Trains with per-action coefficients
    ([`coefficients`][opboost.algorithms.estimators.direct.DoublyRobust.coefficients]). Parameters
    as [`DirectMethod`][opboost.algorithms.estimators.direct.DirectMethod].
    """

    name: ClassVar[str] = "dr"
    supports_training: ClassVar[bool] = True

    def coefficients(self, data: LoggedBandit) -> np.ndarray:
        """Gamma_i(a) = q(x_i, a) + 1[a = a_i] (r_i - q(x_i, a_i)) / p_i, shape (n, K)."""
        return dr_coefficients(data, self.reward_predictions(data))

    def pair_coefficients(
        self, data: LoggedBandit, pairs: PairRows, *, reward_predictions: Any = None
    ) -> np.ndarray:
        """The DR Gamma in slot coordinates, (n, C): q at each row's candidates (the
        cross-fitted ``reward_predictions`` the fit already has, or a reward model on
        [x; phi(a)]) plus the logged slot's correction; 0 in padded slots."""
        q = reward_predictions
        if q is None:
            q = self.pair_reward_predictions(data, pairs)
        return dr_coefficients(data, q, actions=pairs.view.slot_of(data.actions))

    def values_at(self, data: LoggedBandit, probs: np.ndarray, q: np.ndarray) -> np.ndarray:
        """sum_a pi(a|x_i) q(x_i, a) + w_i (r_i - q(x_i, a_i)), w_i = pi(a_i|x_i) / p_i, (n,)."""
        rows = np.arange(len(data))
        weights = probs[rows, data.actions] / data.propensities
        direct = np.einsum("ij,ij->i", probs, q)
        return direct + weights * (data.rewards - q[rows, data.actions])
