"""The reward-model start of a LightGBM policy on candidate pairs: F_0 = s q(x, a), q a
cross-fitted reward model of the logged pairs [x_i; phi(a_i)] chosen on held-out halves.

The logged rows are split into two seeded halves. On each half, LightGBM least squares
(:data:`PAIR_MODEL_PARAMS`: learning rate 0.1, stopped after
:data:`~opboost.algorithms.learners.lightgbm_reward_start.STOPPING_ROUNDS` trees without a lower
squared error on the other half); q is the mean of the two halves' models, and every logged row has
a cross-fitted prediction from the model that did not see it. Two families are fitted so:

``"trees"``           the trees on [x; phi(a)];
``"bilinear+trees"``  a cross-fitted bilinear model s(x, a)
                      (:mod:`opboost.algorithms.learners.pair_bilinear`, Vowpal Wabbit's ``-q``
                      model) as one more column of every pair, and the trees from s on the
                      residuals; s enters the ensemble as one linear tree.

The bilinear family is chosen only when its cross-fitted squared errors are below the trees' by
:data:`~opboost.algorithms.learners.lightgbm_reward_start.CLEAR_GAIN_SE` standard errors of the
paired difference (the classic start's rule): on simulated bilinear catalogues it ties Vowpal Wabbit
where the trees alone lose to it; on a catalogue whose rewards are not bilinear, chosen by a
weaker test (its gain over the mean reward alone), it lost to reward regression. The mean of
the two halves' trees beat ``RewardRegression``'s 200 trees on every simulated catalogue
measured (docs/benchmarks/defaults.md, "Catalogue and small logs").
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np

from opboost.algorithms.learners.lightgbm_linear_tree import column_tree_model
from opboost.algorithms.learners.lightgbm_reward_start import (
    CLEAR_GAIN_SE,
    SELECTION_PARAMS,
    STOPPING_ROUNDS,
    LoggedRows,
    binning_params,
    merge_in_front,
    scale_leaves,
    thread_params,
)
from opboost.algorithms.learners.pair_bilinear import CrossFittedInteraction, fit_interaction
from opboost.algorithms.learners.pair_bilinear import interaction_layout as bilinear_layout
from opboost.api.data.pairs import PairRows, pair_features

__all__ = ["PAIR_MODEL_PARAMS", "PairRewardModel", "PairStart", "fit_pair_start"]

#: LightGBM settings of each half's trees: at most this many at learning rate 0.1.
PAIR_MODEL_PARAMS: dict[str, Any] = {**SELECTION_PARAMS, "num_iterations": 1000}
#: Designed pairs predicted per call (bounds the float rows held at once).
_PREDICT_CHUNK = 65_536


@dataclass
class PairRewardModel:
    """One family's two halves: ``halves`` (the models fitted on ``fold`` and on ``~fold``),
    ``held`` (n,) each logged row's prediction by the half that did not see it (the trees'
    start, the bilinear column, included), ``trees`` per half."""

    halves: tuple[lgb.Booster, lgb.Booster]
    held: np.ndarray
    trees: list[int]


@dataclass
class PairStart:
    """The chosen start: its ``model`` (the interaction column's index ``column`` when the
    bilinear family won), the interaction (or None) and its cross-fitted column on every pair
    of the logs (``pair_values``), the halves (``fold`` (n,) bool: the first), ``q`` (P,)
    and ``q_cross`` (P,) on the prepared pairs, and the ``report``."""

    model: PairRewardModel
    interaction: CrossFittedInteraction | None
    column: int | None
    fold: np.ndarray
    pair_values: np.ndarray | None
    q: np.ndarray
    q_cross: np.ndarray
    report: dict[str, Any]

    def start_model(self, factor: float) -> lgb.Booster:
        """One LightGBM model of ``factor`` q: each half's trees with leaves scaled by
        factor / 2 and, with the bilinear family, a linear tree adding factor x its column."""
        first, second = (scale_leaves(m, factor / 2.0) for m in self.model.halves)
        merge_in_front(first, second)
        if self.column is not None:
            header = first.model_to_string(num_iteration=1)
            merge_in_front(first, column_tree_model(self.column, header, factor))
        return first


def fit_pair_start(
    pairs: PairRows,
    actions: np.ndarray,
    rewards: np.ndarray,
    prepared: PairRows,
    keep: np.ndarray,
    context_categorical: Any,
    seed: int,
    num_threads: int,
) -> PairStart:
    """The start of the module doc from the logged pairs of every row of ``pairs`` (the
    logged ``actions``, ``rewards`` (n,)); q is scored on ``prepared``, the pairs of the rows
    ``keep`` (n,) bool that the policy boosts on. ``context_categorical``: LightGBM's
    categorical context columns ("auto": none)."""
    X, phi = pairs.contexts, pairs.action_features
    n = X.shape[0]
    fold = np.zeros(n, dtype=bool)
    fold[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
    d = X.shape[1]
    context = [] if context_categorical == "auto" else list(context_categorical)
    categorical = [*context, *(d + j for j in pairs.categorical)]
    logged = pair_features(X, phi[actions])
    params = dict(PAIR_MODEL_PARAMS, seed=seed, num_threads=num_threads)
    trees = _halves(logged, rewards, categorical, params, fold, None)
    report: dict[str, Any] = {"design": "pairs", "cross_fitted": True, "family": "trees"}
    layout = bilinear_layout(X, phi, context_categorical, pairs.categorical)
    interaction = None
    if isinstance(layout, str):
        report["bilinear_skipped"] = layout
    else:
        interaction = fit_interaction(layout, X, phi, actions, rewards, fold, num_threads)
        report["bilinear_skipped"] = (
            "no clear gain over the mean reward" if interaction is None else None
        )
    chosen, column = trees, None
    if interaction is not None:
        rows = pair_features(logged, interaction.logged[:, None])
        bilinear = _halves(rows, rewards, categorical, params, fold, interaction.logged)
        errors = {"trees": rewards - trees.held, "bilinear+trees": rewards - bilinear.held}
        gain = errors["trees"] ** 2 - errors["bilinear+trees"] ** 2
        report["held_out_mse"] = {k: float(np.mean(e**2)) for k, e in errors.items()}
        if gain.mean() > CLEAR_GAIN_SE * gain.std(ddof=1) / np.sqrt(n):
            chosen, column = bilinear, prepared.width
            report["family"] = "bilinear+trees"
        else:
            report["bilinear_skipped"] = "no clear gain over the trees on held-out halves"
            interaction = None
    values = None
    if interaction is not None:
        values = interaction.pair_values(pairs, fold)
        prepared = prepared.with_interaction(interaction.interaction, values[keep[pairs.view.rows]])
    q, q_cross = _pair_scores(chosen, prepared, fold[keep][prepared.view.rows], params)
    report.update(fold_trees=chosen.trees, trees=int(sum(chosen.trees)))
    return PairStart(chosen, interaction, column, fold, values, q, q_cross, report)


def _halves(rows, rewards, categorical, params, fold, start) -> PairRewardModel:
    """Trees on each half of the logged ``rows`` (from ``start`` (n,) when given), each
    stopped on the other half."""
    data = LoggedRows(rows, np.asarray(rewards, dtype=np.float64), start, categorical)
    held, models, trees = np.empty(len(rewards)), [], []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "categorical_.* in param dict is overridden")
        for train in (fold, ~fold):
            model, scores = _stopped_trees(params, data, train, ~train)
            held[~train] = scores
            models.append(model)
            trees.append(model.current_iteration())
    return PairRewardModel((models[0], models[1]), held, trees)


def _stopped_trees(params, data: LoggedRows, train, held) -> tuple[lgb.Booster, np.ndarray]:
    """LightGBM trees on the ``train`` rows, stopped after ``STOPPING_ROUNDS`` without a
    lower squared error on the ``held`` rows and rolled back to the best: (model, its scores
    on the held rows, their start included)."""
    fit_set = data.dataset(train, params)
    rows, rewards, start = data.part(held)
    held_set = lgb.Dataset(
        rows, rewards, init_score=start, reference=fit_set, params=binning_params(fit_set, params)
    )
    model = lgb.Booster(dict(params, metric="l2"), fit_set)
    model.add_valid(held_set, "held")
    best, best_error = 0, np.inf
    for iteration in range(params["num_iterations"]):
        if model.update():  # no split possible: nothing more to learn
            break
        error = model.eval_valid()[0][2]
        if error < best_error:
            best, best_error = iteration + 1, error
        elif iteration + 1 - best >= STOPPING_ROUNDS:
            break
    for _ in range(model.current_iteration() - max(best, 1)):
        model.rollback_one_iter()  # the validation scores roll back with the trees
    scores = model.predict(rows, raw_score=True, **thread_params(params))
    return model, scores + (0.0 if start is None else start)


def _pair_scores(model: PairRewardModel, pairs: PairRows, fold: np.ndarray, params) -> tuple:
    """(q, q_cross) (P,) of the pairs: the halves' mean, and each pair scored by the half
    that did not see its row (``fold`` (P,): the pair's row is in the first half); the
    interaction column included."""
    first, second = np.empty(pairs.n_pairs), np.empty(pairs.n_pairs)
    for start in range(0, pairs.n_pairs, _PREDICT_CHUNK):
        block = slice(start, start + _PREDICT_CHUNK)
        rows = pairs.matrix(start, start + _PREDICT_CHUNK)
        for out, half in ((first, model.halves[0]), (second, model.halves[1])):
            out[block] = half.predict(rows, raw_score=True, **thread_params(params))
        if pairs.interaction is not None:
            column = pairs.interaction_values[block]
            first[block] += column
            second[block] += column
    return 0.5 * (first + second), np.where(fold, second, first)
