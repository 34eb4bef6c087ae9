"""The reward-model start of a LightGBM policy on candidate pairs: F_0 = s q(x, a), q a
cross-fitted reward model of the logged pairs [x_i; phi(a_i)] chosen on held-out halves.

The logged rows are split into two seeded halves. On each half, LightGBM least squares
(:data:`PAIR_MODEL_PARAMS`: learning rate 0.1, stopped after
:data:`~opboost.algorithms.learners.lightgbm_reward_start.STOPPING_ROUNDS` trees without a lower
squared error on the other half); q is the mean of the two halves' models, and every logged row has
a cross-fitted prediction from the model that did not see it. Three families are fitted so:

``"trees"``           the trees on [x; phi(a)];
``"bilinear"``        a cross-fitted bilinear model s(x, a)
                      (:mod:`opboost.algorithms.learners.pair_bilinear`, Vowpal Wabbit's ``-q``
                      model), when it predicts the rewards better than their mean; s is one
                      more column of every pair and enters the ensemble as one linear tree;
``"bilinear+trees"``  s and the trees from s on its residuals.

The start is the family whose held-out predictions rank the logged rewards best (Spearman's
correlation, :func:`rank_agreement`; the trees first among equals), since a policy uses the
order of its candidates, not the size of their rewards. The squared error chose before
(s plus its trees when clearly below the trees' alone), and it misleads behind a click link:
the trees on s lower it by fitting the link's curve, which does not change which candidate is
best, and blur the order; where the reward has a part s cannot express (a nonlinear item
effect, a thresholded or xor interaction) the trees rank better and are chosen
(docs/benchmarks/defaults.md, "The family of the catalogue start"). The mean of the two
halves' trees beat ``RewardRegression``'s 200 trees on every simulated catalogue measured
(docs/benchmarks/defaults.md, "Catalogue and small logs").
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
from scipy.stats import spearmanr

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

__all__ = [
    "PAIR_MODEL_PARAMS",
    "PairRewardModel",
    "PairStart",
    "fit_pair_start",
    "rank_agreement",
]

#: LightGBM settings of each half's trees: at most this many at learning rate 0.1.
PAIR_MODEL_PARAMS: dict[str, Any] = {**SELECTION_PARAMS, "num_iterations": 1000}
#: Choose the family by the order of its held-out predictions (False: by squared error, the
#: rule before 2026-11-27, with the trees always on the bilinear column; a benchmark's switch).
FAMILY_BY_RANK = True
#: Designed pairs predicted per call (bounds the float rows held at once).
_PREDICT_CHUNK = 65_536


@dataclass
class PairRewardModel:
    """One family's two halves: ``halves`` (the models fitted on ``fold`` and on ``~fold``),
    ``held`` (n,) each logged row's prediction by the half that did not see it (the trees'
    start, the bilinear column, included), ``trees`` per half. ``column_only``: the halves'
    trees are left out (the bilinear column alone; the halves give the model text's header)."""

    halves: tuple[lgb.Booster, lgb.Booster]
    held: np.ndarray
    trees: list[int]
    column_only: bool = False

    def without_trees(self, held: np.ndarray) -> PairRewardModel:
        """The bilinear column alone: no trees, ``held`` (n,) its cross-fitted values."""
        return PairRewardModel(self.halves, held, [0, 0], column_only=True)


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
        factor / 2 and, with a bilinear family, a linear tree adding factor x its column (the
        tree alone for ``"bilinear"``)."""
        if self.model.column_only:
            header = self.model.halves[0].model_to_string(num_iteration=1)
            return column_tree_model(self.column, header, factor)
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
        families = {
            "trees": trees,
            "bilinear": bilinear.without_trees(interaction.logged),
            "bilinear+trees": bilinear,
        }
        family = _choose_family(families, rewards, report)
        if family == "trees":
            interaction = None
        else:
            chosen, column = families[family], prepared.width
            report["family"] = family
    values = None
    if interaction is not None:
        values = interaction.pair_values(pairs, fold)
        prepared = prepared.with_interaction(interaction.interaction, values[keep[pairs.view.rows]])
    q, q_cross = _pair_scores(chosen, prepared, fold[keep][prepared.view.rows], params)
    report.update(fold_trees=chosen.trees, trees=int(sum(chosen.trees)))
    return PairStart(chosen, interaction, column, fold, values, q, q_cross, report)


def _choose_family(families: dict[str, PairRewardModel], rewards: np.ndarray, report) -> str:
    """The family whose held-out predictions rank the logged ``rewards`` best (the first of
    equals, the trees first); their squared errors and rank agreements go to ``report``.
    With :data:`FAMILY_BY_RANK` False, the rule before: "bilinear+trees" when its squared
    errors are below the trees' by ``CLEAR_GAIN_SE`` standard errors, else "trees"."""
    errors = {name: rewards - model.held for name, model in families.items()}
    report["held_out_mse"] = {name: float(np.mean(e**2)) for name, e in errors.items()}
    ranks = {name: rank_agreement(model.held, rewards) for name, model in families.items()}
    report["held_out_rank_agreement"] = ranks
    if FAMILY_BY_RANK:
        family = max(ranks, key=ranks.get)
        skipped = "the trees rank the held-out rewards better"
    else:
        gain = errors["trees"] ** 2 - errors["bilinear+trees"] ** 2
        clear = gain.mean() > CLEAR_GAIN_SE * gain.std(ddof=1) / np.sqrt(len(gain))
        family = "bilinear+trees" if clear else "trees"
        skipped = "no clear gain over the trees on held-out halves"
    if family == "trees":
        report["bilinear_skipped"] = skipped
    return family


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
    interaction column included (the column, itself cross-fitted, alone when
    ``model.column_only``)."""
    if model.column_only:
        column = np.asarray(pairs.interaction_values, dtype=np.float64)
        return column.copy(), column.copy()
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


def rank_agreement(predictions: np.ndarray, rewards: np.ndarray) -> float:
    """Spearman's correlation of held-out ``predictions`` (n,) with the logged ``rewards``
    (n,) (ties get their mean rank): how well a reward model orders the logged pairs, which is
    what a policy choosing among candidates uses; 0 when either is constant."""
    if np.ptp(predictions) == 0 or np.ptp(rewards) == 0:
        return 0.0
    return float(spearmanr(predictions, rewards)[0])
