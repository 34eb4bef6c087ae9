"""``lightgbm_tree``'s rounds on candidate pairs: one tree per round on the rows [x_i; phi(a)]
of each row's candidates (boosting on a catalogue, :mod:`opboost.api.data.pairs`).

:class:`PairRounds` is the part of :class:`~opboost.algorithms.learners.lightgbm_tree.LightGBMTree`
that ``prepare_pairs`` switches on: the Dataset holds the P = sum_i C_i candidate pairs (built by
:func:`~opboost.lgbm.rows.pairs_dataset`, never n * K rows), each round gathers
the valid slots' targets and weights from the (n, C) problem, grows one tree and scatters its
change of LightGBM's cached scores back to an (n, C) slot matrix (0 in the padded slots).
The ensemble is a :class:`LightGBMEnsemble` of design ``"pairs"``, which scores pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightgbm as lgb
import numpy as np

from opboost.algorithms.learners.lightgbm_pair_start import fit_pair_start
from opboost.algorithms.learners.lightgbm_reward_start import merge_in_front
from opboost.api.data.pairs import PairRows
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.learner_toolkit import learner_seed, wls_terms
from opboost.api.numerics.contexts import as_contexts
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.layout import fit_layout, update_one_iter
from opboost.lgbm.rows import (
    PAIRS_DESIGN,
    DesignedRowsCache,
    action_tilt,
    categorical_columns,
    pairs_dataset,
)
from opboost.lgbm.threads import lightgbm_threads

__all__ = ["PairRounds"]


class PairRounds:
    """Mixin of ``LightGBMTree``: its state and rounds when fitted on candidate pairs."""

    def prepare_pairs(self, pairs: PairRows, *, random_state: Any = None) -> None:
        """Get ready to boost on the candidate pairs [x_i; phi(a)] (P rows, one tree per round
        on them; their Dataset is built when first needed, after any reward-model start has
        chosen the columns); problems and predictions are then (n, C) slot matrices."""
        X = as_contexts(pairs.contexts, missing=True)
        self._seed = learner_seed(self.random_state, random_state)
        self._context_categorical = categorical_columns(self.categorical_features, X.shape[1])
        pairs = PairRows(
            X, pairs.action_features, pairs.view, pairs.categorical, pairs.interaction,
            pairs.interaction_values,
        )  # fmt: skip
        self.booster_ = None
        self._use_pairs(pairs)
        view = pairs.view
        P, C = view.n_pairs, view.n_slots
        self.n_actions_, self.n_features_, self.n_rows_ = C, X.shape[1], X.shape[0]
        self._view = view
        self._per_iter = 1
        # the tilt of the stacked design (action_tilt), by slot: without it every context
        # feature has exactly zero gain at the root, the targets summing to 0 over a row
        self._tilt = action_tilt(C)[view.flat % C]
        self._grad = np.empty(P, dtype=np.float32)
        self._hess = np.empty(P, dtype=np.float32)
        self._scores, self._next = np.zeros(P), np.empty(P)
        self._pending, self._last_alpha, self.n_rounds_ = 0, 1.0, 0
        self._unscaled = []  # committed rounds whose leaves are not scaled yet
        self._designed_pairs = DesignedRowsCache(lambda pairs: pairs.matrix())

    def _use_pairs(self, pairs: PairRows) -> None:
        """Boost on ``pairs`` (its columns: the interaction column when the start adds one)."""
        self._prepared_pairs = pairs
        self._pair_meta = (pairs.view.n_actions, pairs.n_item_columns)
        d, categorical = pairs.contexts.shape[1], self._context_categorical
        context = [] if categorical == "auto" else list(categorical)
        self._pair_categorical = [*context, *(d + j for j in pairs.categorical)]

    def _pair_booster_on_first_use(self) -> lgb.Booster | None:
        """The Booster of the prepared pairs, built now if they are prepared and it is not
        (after any reward-model start chose the pairs' columns); None without pairs."""
        if getattr(self, "_view", None) is None or getattr(self, "booster_", None) is not None:
            return None
        return self._build_pair_booster()

    def _build_pair_booster(self) -> lgb.Booster:
        """The Dataset of the prepared pairs and an empty LightGBM Booster on it."""
        params, pairs = self._lgb_params(self._seed), self._prepared_pairs
        work = pairs.n_pairs * pairs.width
        self.num_threads_ = params["num_threads"] = lightgbm_threads(work, self.num_threads)
        dataset = pairs_dataset(pairs, params, self._context_categorical)
        if not {"force_col_wise", "force_row_wise"} & set(params):
            params[fit_layout(dataset, PAIRS_DESIGN, params)] = True
        self.histogram_layout_ = (
            "force_row_wise" if params.get("force_row_wise") else "force_col_wise"
        )
        self.booster_ = lgb.Booster(params, dataset)
        self._empty_text = self.booster_.model_to_string()
        return self.booster_

    def offers_pair_reward_start(self) -> bool:
        """True for regression trees: a reward model on [x; phi(a)] is a LightGBM model of
        the pairs' own columns."""
        return self.reduction == "regression"

    def start_from_pair_rewards(
        self,
        pairs: PairRows,
        actions: np.ndarray,
        rewards: np.ndarray,
        scale: Callable[[np.ndarray], float],
        *,
        rows: np.ndarray | None = None,
    ) -> np.ndarray:
        """F_0 = scale(q) q, q the cross-fitted reward model of the logged pairs of every row
        of ``pairs`` (``lightgbm_pair_start``: LightGBM trees on
        [x_i; phi(a_i)] -> r_i on each half of the rows, stopped on the other; a bilinear model
        of x and phi(a) as one more column of every pair, "bilinear"; or that column and the
        trees on its residuals, "bilinear+trees": whichever family's held-out predictions rank
        the logged rewards best). Scaled, in front of the ensemble; returns F_0 on the
        prepared pairs (``rows`` (n,) bool: the rows of ``pairs`` that ``prepare_pairs``
        received; None: all) as a slot matrix (0 in padded slots). Records what was fitted
        in ``reward_start_``, the cross-fitted q of the prepared pairs in
        ``pair_reward_predictions_`` (slots), the interaction in ``pair_interaction_`` and
        its cross-fitted column on every pair of ``pairs`` in ``pair_interaction_values_``
        (P,) (both None without one). Call right after ``prepare_pairs``."""
        if getattr(self, "_view", None) is None or self.booster_ is not None or self.n_rounds_:
            raise InvalidParameterError(
                "LightGBMTree.start_from_pair_rewards: call it right after prepare_pairs, "
                "before rounds."
            )
        X, actions = as_contexts(pairs.contexts, missing=True), np.asarray(actions)
        n, view = X.shape[0], self._view
        keep = np.ones(n, dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
        pairs = PairRows(X, pairs.action_features, pairs.view, pairs.categorical)
        threads = lightgbm_threads(n * pairs.width, self.num_threads)  # the logged pairs' size
        start = fit_pair_start(
            pairs, actions, np.asarray(rewards, dtype=np.float64), self._prepared_pairs, keep,
            self._context_categorical, self._seed, threads,
        )  # fmt: skip
        interaction, values = start.interaction, start.pair_values
        if interaction is not None:  # the design gains the interaction column
            own = values[keep[pairs.view.rows]]
            interaction = interaction.interaction
            self._use_pairs(self._prepared_pairs.with_interaction(interaction, own))
        factor = float(scale(view.scatter(start.q, np.nan)))
        booster = self._check_prepared()  # the Dataset of the pairs, built once
        merge_in_front(booster, start.start_model(factor))
        self.reward_start_ = {**start.report, "scale": factor}
        self.pair_interaction_ = (
            None if start.interaction is None else start.interaction.interaction
        )
        self.pair_interaction_values_ = values
        self.pair_reward_predictions_ = view.scatter(start.q_cross, 0.0)
        return view.scatter(start.q * factor, 0.0)

    def _fit_pairs_round(self, booster: lgb.Booster, problem: BaseProblem) -> np.ndarray:
        """fit_round on candidate pairs: the valid slots' targets and weights, one tree."""
        view, shape = self._view, (self.n_rows_, self.n_actions_)
        if np.shape(problem.targets) != shape or np.shape(problem.weights) != shape:
            raise InvalidParameterError(
                f"LightGBMTree.fit_round: targets and weights must be (n, C) = {shape} slot "
                f"matrices; got {np.shape(problem.targets)} and {np.shape(problem.weights)}."
            )
        pairs = BaseProblem(
            problem.reduction,
            view.gather(problem.targets)[:, None],
            view.gather(problem.weights)[:, None],
        )
        terms = wls_terms(
            "LightGBMTree", pairs, (view.n_pairs, 1), hessian_units=self.hessian_units
        )
        if terms is None:
            return np.zeros(shape)
        work, scale = terms
        scale = scale * self._tilt
        np.multiply(work[:, 0], -scale, out=self._grad, casting="same_kind")
        np.multiply(pairs.weights[:, 0], scale, out=self._hess, casting="same_kind")
        self._pending = update_one_iter(booster, self._grad, self._hess)
        if self._pending == 0:
            return np.zeros(shape)
        self._fetch_scores(self._next)
        f = view.scatter(self._next - self._scores, 0.0)
        self._scores, self._next = self._next, self._scores
        return f

    def _pairs_ensemble(self, text: str) -> LightGBMEnsemble:
        """The ensemble of model ``text`` fitted on pairs (design "pairs")."""
        n_actions, d_a = self._pair_meta
        return LightGBMEnsemble(
            lgb.Booster(model_str=text),
            n_actions=n_actions,
            action_design=PAIRS_DESIGN,
            n_features=self.n_features_,
            n_rounds=self.n_rounds_,
            n_action_features=d_a,
        )

    def _predict_pairs_round(
        self, booster: lgb.Booster, pairs: PairRows, last: int, threads: dict[str, Any]
    ) -> np.ndarray:
        """Tree ``last`` (without its alpha) on other rows' pairs: an (n', C') slot matrix."""
        out = booster.predict(
            self._designed_pairs.rows(pairs),
            start_iteration=last,
            num_iteration=1,
            raw_score=True,
            **threads,
        )
        return pairs.view.scatter(np.asarray(out) / self._last_alpha, 0.0)
