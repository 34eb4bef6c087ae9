"""Supervised-to-bandit conversion (Beygelzimer & Langford 2009; London et al. appendix F).

A softmax logging policy (strongly regularised multinomial logistic regression) is trained on
a random ``log_fraction`` of the labelled rows, optionally mixed with epsilon-uniform
exploration, and samples one action per remaining row; its propensity and reward are logged.
The labels are kept so that the TRUE expected reward of any policy can be computed
([`expected_reward`][opboost.simulation.supervised.expected_reward]).

Reward structures (``reward=``):

``"multiclass"``
    y is (n,) class indices; reward 1 for the true class, 0 otherwise.
``"multilabel"``
    y is an (n, K) 0/1 matrix; reward 1 if the action is one of the true labels.
a (C, K) matrix R
    y is (n,) class indices; reward R[y_i, a] (partial credit, see
    [`partial_credit`][opboost.simulation.supervised.partial_credit]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state, check_scalar

__all__ = [
    "SimulatedBandit",
    "SoftmaxLoggingPolicy",
    "expected_reward",
    "partial_credit",
    "reward_table",
    "supervised_to_bandit",
]

Reward = str | np.ndarray


def partial_credit(
    n_classes: int, groups: Sequence[Sequence[int]], credit: float = 0.25
) -> np.ndarray:
    """(K, K) reward matrix: 1 on the diagonal, ``credit`` within each group, 0 elsewhere."""
    matrix = np.zeros((n_classes, n_classes))
    for group in groups:
        idx = np.asarray(group, dtype=int)
        matrix[np.ix_(idx, idx)] = credit
    np.fill_diagonal(matrix, 1.0)
    return matrix


def reward_table(y: Any, reward: Reward = "multiclass", n_actions: int | None = None) -> np.ndarray:
    """(n, K) matrix of each row's expected reward for each action under ``reward``."""
    if isinstance(reward, str):
        if reward == "multiclass":
            labels = _class_labels(y, "y")
            k = n_actions if n_actions is not None else int(labels.max()) + 1
            if labels.max() >= k:
                raise InvalidParameterError(
                    f"reward='multiclass': y has class {int(labels.max())} but n_actions={k}; "
                    f"n_actions must exceed the largest class index."
                )
            table = np.zeros((len(labels), k))
            table[np.arange(len(labels)), labels] = 1.0
            return table
        if reward == "multilabel":
            table = y.toarray() if sp.issparse(y) else np.asarray(y, dtype=np.float64)
            if table.ndim != 2:
                raise InvalidParameterError(
                    f"reward='multilabel' needs y as an (n, K) 0/1 matrix. Got shape {table.shape}."
                )
            if n_actions is not None and table.shape[1] != n_actions:
                raise InvalidParameterError(
                    f"reward='multilabel': y has {table.shape[1]} label columns but "
                    f"n_actions={n_actions}."
                )
            return table.astype(np.float64)
        raise InvalidParameterError(
            f"The 'reward' parameter must be 'multiclass', 'multilabel' or a (classes x actions) "
            f"matrix. Got {reward!r} instead."
        )
    matrix = np.asarray(reward, dtype=np.float64)
    if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
        raise InvalidParameterError(
            f"A reward matrix must be a finite 2-D (classes x actions) array. Got shape "
            f"{matrix.shape}."
        )
    labels = _class_labels(y, "y")
    if labels.max() >= matrix.shape[0]:
        raise InvalidParameterError(
            f"y has class {int(labels.max())} but the reward matrix has only "
            f"{matrix.shape[0]} rows (one per class)."
        )
    if n_actions is not None and matrix.shape[1] != n_actions:
        raise InvalidParameterError(
            f"The reward matrix has {matrix.shape[1]} columns (actions) but n_actions={n_actions}."
        )
    return matrix[labels]


def expected_reward(action_probs: np.ndarray, y: Any, reward: Reward = "multiclass") -> float:
    """True expected reward of a policy with (n, K) ``action_probs`` on labelled rows ``y``.

    Pass one-hot rows for a deterministic (argmax) policy.
    """
    probs = np.asarray(action_probs, dtype=np.float64)
    table = reward_table(y, reward, probs.shape[1])
    if table.shape != probs.shape:
        raise InvalidParameterError(
            f"action_probs has shape {probs.shape} but the labels give {table.shape}."
        )
    return float(np.mean(np.einsum("ij,ij->i", probs, table)))


def _class_labels(y: Any, name: str) -> np.ndarray:
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.dtype.kind not in "iub" or (len(labels) and labels.min() < 0):
        raise InvalidParameterError(
            f"{name} must be a 1-D array of class indices 0..C-1 for this reward structure. "
            f"Got dtype {labels.dtype} and shape {labels.shape}; encode labels with "
            f"sklearn.preprocessing.LabelEncoder."
        )
    return labels.astype(np.int64)


class SoftmaxLoggingPolicy:
    """Multinomial logistic regression mixed with epsilon-uniform exploration.

    ``predict_proba(X)`` gives (n, K) probabilities, every entry >= epsilon / K.
    """

    def __init__(
        self,
        *,
        n_actions: int,
        C: float = 0.01,
        epsilon: float = 0.0,
        max_iter: int = 1000,
        random_state: Any = None,
    ):
        self.n_actions = n_actions
        self.C = C
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X: Any, labels: np.ndarray) -> SoftmaxLoggingPolicy:
        """Fit the logistic regression on contexts ``X`` and class ``labels``."""
        from sklearn.linear_model import LogisticRegression

        self.classes_ = np.unique(labels)
        if len(self.classes_) < 2:
            self.model_ = None  # a single class seen: the policy is constant
            return self
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        self.model_ = LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=seed)
        self.model_.fit(X, labels)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, K) logging probabilities, each >= epsilon / K."""
        n = X.shape[0]
        probs = np.zeros((n, self.n_actions))
        if self.model_ is None:
            probs[:, self.classes_[0]] = 1.0
        else:
            probs[:, self.classes_] = self.model_.predict_proba(X)
        probs = (1.0 - self.epsilon) * probs + self.epsilon / self.n_actions
        # Softmax probabilities can underflow to 0; a logged propensity must stay > 0.
        probs = np.maximum(probs, 1e-12)
        return probs / probs.sum(axis=1, keepdims=True)


@dataclass(frozen=True, eq=False)
class SimulatedBandit:
    """Result of [`supervised_to_bandit`][opboost.simulation.supervised.supervised_to_bandit].

    ``logged`` holds the bandit rows (``bandit_indices`` of the input); ``logger_indices``
    are the rows the logging policy was trained on; ``y_logged`` are the hidden labels of the
    logged rows, for true-reward evaluation with ``expected_reward(probs, y_logged, reward)``.
    """

    logged: LoggedBandit
    logging_policy: SoftmaxLoggingPolicy
    reward: Reward
    bandit_indices: np.ndarray
    logger_indices: np.ndarray
    y_logged: Any


def supervised_to_bandit(
    X: Any,
    y: Any,
    *,
    n_actions: int,
    reward: Reward = "multiclass",
    log_fraction: float = 0.1,
    epsilon: float = 0.0,
    logging_C: float = 0.1,
    random_state: Any = None,
) -> SimulatedBandit:
    """Convert labelled rows (X, y) into logged bandit feedback.

    Parameters
    ----------
    X
        (n, d) array or CSR matrix of contexts.
    y
        labels; (n,) class indices, or an (n, K) 0/1 matrix for ``reward="multilabel"``.
    n_actions
        K, the number of actions.
    reward
        "multiclass", "multilabel" or a (C, K) reward matrix.
    log_fraction
        share of rows used to train the logging policy, in (0, 1).
    epsilon
        uniform exploration mixed into the logging policy, in [0, 1].
    logging_C
        inverse L2 regularisation of the logging policy (small = weak logger).
    random_state
        seed for the split, the logger and the sampled actions.
    """
    owner = "supervised_to_bandit"
    check_scalar(n_actions, "n_actions", owner, kind=int, low=2)
    check_scalar(
        log_fraction,
        "log_fraction",
        owner,
        low=0.0,
        high=1.0,
        low_inclusive=False,
        high_inclusive=False,
    )
    check_scalar(epsilon, "epsilon", owner, low=0.0, high=1.0)
    check_scalar(logging_C, "logging_C", owner, low=0.0, low_inclusive=False)
    n = X.shape[0]
    table = reward_table(y, reward, n_actions)
    if table.shape[0] != n:
        raise InvalidParameterError(f"{owner}: X has {n} rows but y has {table.shape[0]}.")
    rng = check_random_state(random_state)
    order = rng.permutation(n)
    n_log = max(2, round(log_fraction * n))
    if n_log >= n:
        raise InvalidParameterError(
            f"{owner}: log_fraction={log_fraction} leaves no rows to log out of n={n}."
        )
    logger_idx, bandit_idx = np.sort(order[:n_log]), np.sort(order[n_log:])

    # The logger learns one label per row: the class, or a random true label (multilabel).
    if isinstance(reward, str) and reward == "multilabel":
        scores = rng.random(table[logger_idx].shape) * (table[logger_idx] > 0)
        scores[scores.sum(axis=1) == 0] = rng.random(n_actions)  # rows with no label
        logger_labels = scores.argmax(axis=1)
    else:
        logger_labels = table[logger_idx].argmax(axis=1)
    policy = SoftmaxLoggingPolicy(
        n_actions=n_actions, C=logging_C, epsilon=epsilon, random_state=rng
    ).fit(X[logger_idx], logger_labels)

    X_bandit = X[bandit_idx]
    probs = policy.predict_proba(X_bandit)
    cumulative = probs.cumsum(axis=1)
    u = rng.random(len(bandit_idx))[:, None]
    actions = np.minimum((u > cumulative).sum(axis=1), n_actions - 1)
    rows = np.arange(len(bandit_idx))
    logged = LoggedBandit(
        contexts=X_bandit,
        actions=actions,
        propensities=probs[rows, actions],
        rewards=table[bandit_idx][rows, actions],
        n_actions=n_actions,
        logging_probs=probs,
    )
    y_logged = y[bandit_idx]
    return SimulatedBandit(logged, policy, reward, bandit_idx, logger_idx, y_logged)
