"""Base class of off-policy estimators.

An estimator has two roles:

* training coefficients for the boosting objectives (``coefficients``), where the
  estimator defines them: one per row (IPS: r_i / p_i; truncated IPS: r_i * min(1/p_i, M))
  or one per row and action (DR, DM: an (n, K) matrix Gamma);
* the value of any policy on logged data (``estimate_value``) and a confidence interval
  (``estimate_interval``), from per-example contributions (``round_values``); on fixed logs
  that score many policies (every round of a fit on held-out logs, the candidates of a
  choice) through [`Estimator.on_logs`][opboost.api.estimator.Estimator.on_logs], which computes
  once what no policy changes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from opboost.api.component import Component
from opboost.api.data.candidates import first_outside, is_candidate
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.arrays import one_hot

__all__ = ["ConfidenceInterval", "Estimator", "LogsScorer", "check_action_probs", "normal_interval"]


@dataclass(frozen=True)
class ConfidenceInterval:
    """A point estimate with a two-sided confidence interval at ``level``."""

    value: float
    low: float
    high: float
    level: float = 0.95


#: The old name of :class:`ConfidenceInterval` (the SDK's ``Interval`` is the parameter
#: constraint :class:`opboost.api.constraints.Interval`).
Interval = ConfidenceInterval


def check_action_probs(data: LoggedBandit, action_probs: np.ndarray, owner: str) -> np.ndarray:
    """The evaluated policy's (n, K) action probabilities on ``data``, from any of:

    * an (n, K) matrix of probabilities (rows of ``data`` x actions; with ``data.positions``,
      the same distribution at every position);
    * an (n,) integer array of actions, a deterministic policy (converted to one-hot rows);
    * Open Bandit Pipeline's (n, K, L) ``action_dist``: row i reads slot
      ``data.positions[i]`` (obp's convention), so IPS weighs r_i by
      action_dist[i, a_i, positions[i]] / p_i. Without positions only L = 1 is accepted.

    Wrong shapes, non-integer or out-of-range actions and negative or non-finite
    probabilities raise ``InvalidParameterError`` naming ``owner`` and the first bad row; so
    does, when ``data.candidates`` is set, an action (or positive probability) outside the
    row's candidates.
    """
    n, k = len(data), data.n_actions
    expected = (n, k)
    accepted = (
        f"pass an (n, K) = {expected} matrix of action probabilities, an ({n},) integer array "
        f"of actions (a deterministic policy) or obp's ({n}, {k}, L) action_dist"
    )
    raw = np.asarray(action_probs)
    if raw.ndim == 1:
        return _one_hot(raw, data, owner, accepted)
    if raw.ndim == 3:
        if raw.shape[:2] != expected:
            raise InvalidParameterError(
                f"{owner}: action_probs of shape {raw.shape} does not fit the data; {accepted}."
            )
        raw = _row_slots(data, raw, owner)
    if raw.dtype.kind not in "biuf":
        raise InvalidParameterError(
            f"{owner}: action_probs must be numeric. Got dtype {raw.dtype}; {accepted}."
        )
    probs = np.asarray(raw, dtype=np.float64)
    if probs.shape != expected:
        raise InvalidParameterError(
            f"{owner}: action_probs must have shape {expected} (rows of data x actions). "
            f"Got {probs.shape}; {accepted}."
        )
    if not np.all(np.isfinite(probs)) or probs.min() < 0:
        i = int(np.argwhere(~np.isfinite(probs) | (probs < 0))[0, 0])
        raise InvalidParameterError(
            f"{owner}: action_probs must be finite and >= 0; row {i} is {probs[i].tolist()}."
        )
    _check_candidate_mass(data, probs, owner)
    return probs


def _check_candidate_mass(data: LoggedBandit, probs: np.ndarray, owner: str) -> None:
    """InvalidParameterError naming the first row and action where ``probs`` put mass
    outside ``data.candidates`` (when the log has candidates)."""
    candidates = getattr(data, "candidates", None)
    where = None if candidates is None else first_outside(candidates, probs)
    if where is not None:
        raise InvalidParameterError(
            f"{owner}: action_probs put probability {float(probs[where])!r} on action "
            f"{where[1]} in row {where[0]}, which is not one of the row's candidates "
            f"(data.candidates[{where[0]}, {where[1]}] is False). Set the probabilities of "
            f"non-candidate actions to 0 and renormalise each row."
        )


def _row_slots(data: LoggedBandit, action_dist: np.ndarray, owner: str) -> np.ndarray:
    """(n, K): row i of obp's (n, K, L) ``action_dist`` at slot ``data.positions[i]``."""
    slots = action_dist.shape[2]
    if data.positions is None:
        if slots == 1:
            return action_dist[:, :, 0]
        raise InvalidParameterError(
            f"{owner}: action_probs of shape {action_dist.shape} has {slots} slots (obp's "
            f"len_list), but the data have no positions, so no slot belongs to a row. Give "
            f"the data positions (LoggedBandit(..., positions=...), or from_obp with "
            f"'position'), or pass one slot (action_dist[:, :, [0]]) or an (n, K) matrix."
        )
    if slots < data.n_positions:
        i = int(np.flatnonzero(data.positions >= slots)[0])
        raise InvalidParameterError(
            f"{owner}: action_probs of shape {action_dist.shape} has {slots} slot(s), but "
            f"data.positions index {i} has {int(data.positions[i])}; pass obp's (n, K, L) "
            f"action_dist with L >= n_positions = {data.n_positions}, or an (n, K) matrix "
            f"(the same distribution at every position)."
        )
    return action_dist[np.arange(len(data)), :, data.positions]


def _one_hot(actions: np.ndarray, data: LoggedBandit, owner: str, accepted: str) -> np.ndarray:
    """One-hot (n, K) rows of a deterministic policy's (n,) integer ``actions``."""
    n, k = len(data), data.n_actions
    if actions.shape != (n,):
        raise InvalidParameterError(
            f"{owner}: 1-D action_probs are read as one action per row and need shape "
            f"({n},). Got {actions.shape}; {accepted}."
        )
    if actions.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"{owner}: 1-D action_probs are read as actions and must be integers in "
            f"[0, {k}). Got dtype {actions.dtype}; cast actions with .astype(int), or {accepted}."
        )
    bad = (actions < 0) | (actions >= k)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidParameterError(
            f"{owner}: action {int(actions[i])} at row {i} is out of range; actions must be in "
            f"[0, {k}) for n_actions={k}."
        )
    candidates = getattr(data, "candidates", None)
    if candidates is not None:
        bad = ~is_candidate(candidates, np.arange(n), actions)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidParameterError(
                f"{owner}: action {int(actions[i])} at row {i} is not one of the row's "
                f"candidates (data.candidates[{i}, {int(actions[i])}] is False); choose each "
                f"row's action among its candidates."
            )
    return one_hot(actions, k)


def normal_interval(values: np.ndarray, level: float) -> ConfidenceInterval:
    """Mean of ``values`` with a Student-t interval from their standard error."""
    n = len(values)
    mean = float(np.mean(values))
    if n < 2:
        return ConfidenceInterval(mean, -np.inf, np.inf, level)
    se = float(np.std(values, ddof=1) / np.sqrt(n))
    q = _t_quantile(0.5 + level / 2, n - 1)
    return ConfidenceInterval(mean, mean - q * se, mean + q * se, level)


@functools.lru_cache(maxsize=64)
def _t_quantile(probability: float, df: int) -> float:
    """Student-t quantile, cached: a held-out selection asks the same one every round, and
    scipy's ``ppf`` costs about as much as the round's DR values on small logs."""
    return float(stats.t.ppf(probability, df=df))


class LogsScorer:
    """An estimator on fixed logs ``data``, scoring many policies there: every boosting round
    on the held-out logs, every candidate of a choice. This default asks the estimator each
    time; an estimator with work that no policy changes (a reward model) returns its own
    subclass from [`Estimator.on_logs`][opboost.api.estimator.Estimator.on_logs], which does that
    work once."""

    def __init__(self, estimator: Estimator, data: LoggedBandit) -> None:
        self.estimator, self.data = estimator, data

    def row_values(self, action_probs: np.ndarray) -> np.ndarray:
        """Per-row values (n,) of the policy ``action_probs`` whose mean is its estimate
        (paired comparisons of two policies use their differences)."""
        return self.estimator.round_values(self.data, action_probs)

    def interval(self, action_probs: np.ndarray, *, alpha: float = 0.05) -> ConfidenceInterval:
        """The policy's estimated value with a (1 - alpha) confidence interval."""
        return self.estimator.estimate_interval(self.data, action_probs, alpha=alpha)


class Estimator(Component):
    """Off-policy estimator. Subclasses implement ``round_values`` (and ``coefficients``
    when they can drive training; set ``supports_training = True`` then)."""

    kind: ClassVar[str] = "estimator"
    #: Whether ``coefficients`` is defined, i.e. whether the booster can train with it.
    supports_training: ClassVar[bool] = False
    #: Whether ``coefficients`` is per row and action (n, K), not per row (n,).
    action_coefficients: ClassVar[bool] = False
    #: Whether :meth:`pair_coefficients` takes ``reward_predictions=``, a cross-fitted reward
    #: model's q (n, C) that the fit already has (its reward-model start's), in place of a
    #: model of the estimator's own.
    takes_reward_predictions: ClassVar[bool] = False
    #: Whether the estimates model the rewards of fixed action ids (a reward model over
    #: [x; onehot(a)]): logs in slot coordinates, where slot j is another item in every row
    #: (candidate sets, item features), cannot be scored by it.
    needs_fixed_actions: ClassVar[bool] = False
    #: Whether ``coefficients`` gives one c_i per row computed from row i alone (IPS,
    #: truncated IPS; not a cross-fitted reward model): the coefficients of any part of the
    #: logs are then that part's rows', and a fit over partitions (the Dask engine) can use it.
    row_local: ClassVar[bool] = False

    def coefficients(self, data: LoggedBandit) -> np.ndarray:
        """Training coefficients: c_i, shape (n,), or per-action coefficients Gamma (n, K)
        whose value estimate is V(pi) = (1/n) sum_i <pi(x_i), Gamma_i> (doubly robust
        training; objectives with ``supports_action_coefficients`` take them)."""
        raise InvalidParameterError(
            f"The estimator {self.name!r} gives no training coefficients, so the booster "
            f"cannot train with it; use estimator='ips' or 'truncated_ips' for training "
            f"and {self.name!r} for evaluation."
        )

    def pair_coefficients(self, data: LoggedBandit, pairs: Any) -> np.ndarray | None:
        """Training coefficients for boosting on candidate pairs, in slot coordinates
        (``opboost.api.data.slots``): ``data`` the logs (with candidates and/or action
        features), ``pairs`` their ``opboost.api.data.pairs.PairRows``; per-action
        coefficients Gamma (n, C), 0 in the padded slots. None (the default): the booster
        uses [`coefficients`][opboost.api.estimator.Estimator.coefficients] of the slot logs, right
        for per-row coefficients, which do not depend on what the actions are. Estimators with
        ``takes_reward_predictions`` also take ``reward_predictions=`` (see there)."""
        return None

    def round_values(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        """Per-example contributions whose mean is the value estimate, shape (n,).

        ``action_probs`` everywhere (here, ``estimate_value``, ``estimate_interval``) is an
        (n, K) matrix of the evaluated policy's probabilities, an (n,) integer array of its
        actions (a deterministic policy) or obp's (n, K, L) ``action_dist`` (read at
        ``data.positions[i]``); subclasses read
        it through [`check_action_probs`][opboost.api.estimator.check_action_probs]."""
        raise NotImplementedError

    def estimate_value(self, data: LoggedBandit, action_probs: np.ndarray) -> float:
        """Estimated expected reward of the policy with ``action_probs`` on ``data`` ((n, K)
        probabilities, (n,) integer actions or (n, K, L); see ``round_values``)."""
        return float(np.mean(self.round_values(data, action_probs)))

    def estimate_interval(
        self, data: LoggedBandit, action_probs: np.ndarray, *, alpha: float = 0.05
    ) -> ConfidenceInterval:
        """Value estimate with a (1 - alpha) confidence interval (Student-t on round values)."""
        return normal_interval(self.round_values(data, action_probs), 1 - alpha)

    def on_logs(
        self, data: LoggedBandit, reward_predictions: np.ndarray | None = None
    ) -> LogsScorer:
        """This estimator on the fixed logs ``data``, to score many policies there (the
        held-out selection of a fit scores every round): a
        [`LogsScorer`][opboost.api.estimator.LogsScorer]. ``reward_predictions`` (n, K), a reward
        model's q on ``data`` fitted elsewhere, is used by estimators with
        ``takes_reward_predictions`` instead of fitting one."""
        return LogsScorer(self, data)
