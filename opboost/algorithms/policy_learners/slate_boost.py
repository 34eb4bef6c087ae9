"""``slate_boost``: a boosted ranking policy learned off-policy from position-biased slate logs.

Design. The policy scores (context, item) pairs, F(x, a), with LightGBM trees on the rows
[x; phi(a)] (the items' features, so new catalogue items can be ranked) or [x; onehot(a)];
its ranking of an impression is the top L items by F among the row's candidates, and its
exploration is the Plackett–Luce (softmax without replacement) policy over F, whose exact
per-position propensities ``sample_slate`` returns. F is fitted in two stages on ``SlateLogs``:

1. **Reward-model start.** A LightGBM regressor q(x, a, k) on the per-position rows
   (``SlateLogs.per_position_rows``), the position k a feature, so the examination bias is
   modelled rather than mixed into the items' rewards; F_0(x, a) = logit q(x, a, k=1), the
   click rate of a at the top.
2. **Boosting rounds** on the IPS-weighted Plackett–Luce surrogate of the slate's value
   (``opboost.algorithms.policy_learners.slate_objective``, gradient and Hessian there): each
   logged click (i, k) is a target of the PL conditional of its item given the logged items
   above, weighted by alpha_k r_{ik} / pi_0(a_{ik} at k) under ``click_model="pbm"``
   (independent IPS: position-debiased, as the position-based model's value
   sum_k alpha_k E[r at k] is estimated) or alpha_k r_{ik} / pi_0(a_{i,1..k}) under
   ``"cascade"`` (reward-interaction IPS, prefix propensities). The weights are clipped at
   ``max_weight`` and scaled to mean 1 over the clicks; the trees start from F_0
   (LightGBM ``init_score``) and learn the correction.
3. **How many rounds** (``selection_share > 0``, the default): chosen on held-out impressions
   by a paired rule (``opboost.algorithms.policy_learners.slate_rounds``), 0 when the rounds
   show no gain over the start; then both stages are refitted on all the impressions.

This is a smooth surrogate, not the IPS value itself: at position 1 it is the log of the
value's integrand (log-IPS), below it the conditionals stand in for the marginals.
"""

from __future__ import annotations

import json
from numbers import Integral, Real
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.policy_learners.slate_objective import slate_surrogate
from opboost.algorithms.policy_learners.slate_rounds import (
    Checkpoint,
    PairedRounds,
    held_out_values,
    split_impressions,
)
from opboost.algorithms.policy_learners.slate_rows import one_slot_logs, pair_rows
from opboost.api.constraints import Interval, Options, Satisfies
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.memory_limit import check_memory
from opboost.api.numerics.plackett_luce import (
    marginal_distributions,
    prefix_probabilities,
    sample_plackett_luce,
)
from opboost.api.policy_learner import PolicyLearner
from opboost.api.slates import SlateLogs, position_weights_ok
from opboost.api.validation import check_fitted, check_random_state

__all__ = ["SlateBooster"]

_FORMAT = "opboost.slate_boost"
_EPS = 1e-4


class SlateBooster(PolicyLearner):
    """Boosted slate (ranking) policy from ``SlateLogs``; see the module docstring.

    Parameters
    ----------
    click_model
        "pbm" (independent IPS weights) or "cascade" (reward-interaction IPS weights; the
        logs need ``cascade_propensities``).
    n_rounds, learning_rate, num_leaves, min_child_samples, reg_lambda
        the correction rounds' LightGBM settings (``n_rounds=0``: the reward-model ranking);
        with ``selection_share > 0``, ``n_rounds`` is the most rounds the held-out rule may
        choose.
    selection_share
        share of the impressions held out to choose the number of rounds by the paired DR
        gain over the start (``opboost.algorithms.policy_learners.slate_rounds``), then
        refitted on all of them; 0: exactly ``n_rounds`` rounds, no hold-out.
    selection_metric
        what the held-out rule compares row by row: "surrogate" (each held-out impression's
        surrogate loss, the rounds' own objective, start minus rounds) or "dr" (each
        impression's slate DR value of the two rankings, rounds minus start).
    confidence
        one-sided confidence, in (0.5, 1), of the lower bound on the paired gain that must
        be above 0 for the rounds to be taken.
    patience
        checkpoints without a better mean gain before the held-out rounds stop growing.
    check_every
        rounds between two checkpoints of the held-out rule.
    start_estimators
        trees of the reward-model start q(x, a, k).
    max_weight
        clip of the importance weights before scaling (a low clip trades the weights' bias
        for their variance; 5 did better than 10 and 50 on the benchmark's worlds).
    position_weights
        (L,) alpha_k, or None (1: the expected clicks).
    random_state
        seed (of the LightGBM fits and of the held-out split).

    Attributes
    ----------
    n_rounds_
        the rounds fitted (the held-out rule's choice, or ``n_rounds``).
    checkpoints_
        the held-out rule's ``Checkpoint`` list (rounds, mean paired gain over the start and
        its interval); empty without the rule (and after ``load``).
    """

    name: ClassVar[str] = "slate_boost"
    _parameter_constraints: ClassVar[dict] = {
        "click_model": [Options(("pbm", "cascade"))],
        "n_rounds": [Interval(Integral, 0, None)],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither")],
        "num_leaves": [Interval(Integral, 2, 131072)],
        "min_child_samples": [Interval(Integral, 0, None)],
        "reg_lambda": [Interval(Real, 0.0, None)],
        "start_estimators": [Interval(Integral, 1, None)],
        "max_weight": [Interval(Real, 0.0, None, closed="neither")],
        "selection_share": [
            Interval(Real, 0.0, 1.0, closed="left", fix="use a share such as 0.25, or 0")
        ],
        "selection_metric": [Options(("surrogate", "dr"))],
        "confidence": [
            Interval(Real, 0.5, 1.0, closed="neither", fix="use a one-sided confidence such as 0.9")
        ],
        "patience": [Interval(Integral, 1, None)],
        "check_every": [Interval(Integral, 1, None)],
        "position_weights": [
            Satisfies(
                position_weights_ok, "None or a 1-D sequence of finite numbers, one per position"
            )
        ],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        click_model: str = "pbm",
        n_rounds: int = 200,
        learning_rate: float = 0.1,
        num_leaves: int = 15,
        min_child_samples: int = 20,
        reg_lambda: float = 1.0,
        start_estimators: int = 100,
        max_weight: float = 5.0,
        selection_share: float = 0.25,
        selection_metric: str = "surrogate",
        confidence: float = 0.9,
        patience: int = 5,
        check_every: int = 10,
        position_weights: Any = None,
        random_state: Any = None,
    ):
        self.click_model = click_model
        self.n_rounds = n_rounds
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.reg_lambda = reg_lambda
        self.start_estimators = start_estimators
        self.max_weight = max_weight
        self.selection_share = selection_share
        self.selection_metric = selection_metric
        self.confidence = confidence
        self.patience = patience
        self.check_every = check_every
        self.position_weights = position_weights
        self.random_state = random_state

    def fit(self, data: SlateLogs | LoggedBandit) -> SlateBooster:
        """Fit the reward-model start, then the correction rounds, on the slate logs (a
        ``LoggedBandit`` without positions: slates of one position); with
        ``selection_share > 0`` the number of rounds is first chosen on held-out impressions
        (``opboost.algorithms.policy_learners.slate_rounds``)."""
        self.validate_params()
        logs = self._check_logs(data)
        self.check_fit_memory(logs, "SlateBooster.fit")
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        self.n_items_, self.n_features_ = logs.n_items, logs.contexts.shape[1]
        self.slate_size_ = logs.slate_size
        self.item_features_ = logs.item_features
        self.checkpoints_: list[Checkpoint] = []
        rounds = self.n_rounds
        if self.selection_share > 0 and self.n_rounds > 0:
            rounds = self._choose_rounds(logs, seed)
        self.n_rounds_ = rounds
        self.start_model_ = self._fit_start(logs, seed)
        self.correction_model_ = self._fit_rounds(logs, self.start_model_, rounds, seed)
        return self

    def _choose_rounds(self, logs: SlateLogs, seed: int) -> int:
        """The paired held-out rule's number of rounds (``slate_rounds``); the checkpoints
        are kept in ``checkpoints_``."""
        train, held = split_impressions(logs, self.selection_share, seed)
        start = self._fit_start(train, seed)
        rows, items = np.nonzero(self._candidate_mask(held.candidates, len(held)))
        pairs = self._design(held.contexts, rows, items)
        start_scores = self._start_scores(pairs, start)
        if self.selection_metric == "surrogate":
            weights = self._weights(held)

            def values(correction: np.ndarray) -> np.ndarray:
                losses = slate_surrogate(scores_of(correction), held.slates, weights, per_row=True)
                return -losses[0]
        else:
            q = self._held_out_q(held, rows, items, start)
            alpha = np.ones(held.slate_size)
            if self.position_weights is not None:
                alpha = np.asarray(self.position_weights, dtype=np.float64)

            def values(correction: np.ndarray) -> np.ndarray:
                scores = scores_of(correction)
                ranking = np.argsort(-scores, axis=1, kind="stable")[:, : held.slate_size]
                return held_out_values(held, ranking, q, self.click_model, alpha)

        def scores_of(correction: np.ndarray) -> np.ndarray:
            scores = np.full((len(held), held.n_items), -np.inf)
            scores[rows, items] = start_scores + correction
            return scores

        rule = PairedRounds(
            lambda booster, t: values(booster.predict(pairs, num_iteration=t)),
            values(np.zeros(len(rows))),
            every=self.check_every,
            patience=self.patience,
            confidence=self.confidence,
        )
        self._fit_rounds(train, start, self.n_rounds, seed, callbacks=[rule])
        self.checkpoints_ = rule.checkpoints
        return rule.chosen

    def _held_out_q(
        self, held: SlateLogs, rows: np.ndarray, items: np.ndarray, start: Any
    ) -> np.ndarray:
        """q[i, k, a] (n, L, K): the start's reward of each held-out candidate at each
        position (``selection_metric="dr"``'s reward model, fitted without these rows)."""
        q = np.zeros((len(held), held.slate_size, held.n_items))
        for k in range(held.slate_size):
            at_k = self._design(held.contexts, rows, items, positions=np.full(len(rows), k))
            q[rows, k, items] = start.predict(at_k)
        return q

    def _lgb_common(self, seed: int) -> dict[str, Any]:
        return {"verbose": -1, "seed": seed, "deterministic": True, "num_threads": 1}

    def _fit_start(self, logs: SlateLogs, seed: int) -> Any:
        """The reward-model start q(x, a, k) on the logs' per-position rows."""
        import lightgbm as lgb

        rows, item = np.nonzero(logs.observed)
        design = self._design(logs.contexts, rows, logs.slates[rows, item], positions=item)
        params = {
            **self._lgb_common(seed),
            "objective": "regression",
            "learning_rate": 0.05,
            "num_leaves": 31,
            "min_child_samples": 20,
        }
        data = lgb.Dataset(design, logs.rewards[rows, item])
        return lgb.train(params, data, num_boost_round=self.start_estimators)

    def _fit_rounds(
        self, logs: SlateLogs, start: Any, rounds: int, seed: int, callbacks: list | None = None
    ) -> Any:
        """The correction rounds from the start's scores (None for 0 rounds)."""
        import lightgbm as lgb

        if rounds == 0:
            return None
        pair_row, pair_item = np.nonzero(self._candidate_mask(logs.candidates, len(logs)))
        pairs = self._design(logs.contexts, pair_row, pair_item)
        weights = self._weights(logs)
        n, k = len(logs), logs.n_items

        def objective(preds: np.ndarray, _: Any) -> tuple[np.ndarray, np.ndarray]:
            scores = np.full((n, k), -np.inf)
            scores[pair_row, pair_item] = preds
            _, grad, hess = slate_surrogate(scores, logs.slates, weights)
            return grad[pair_row, pair_item] * n, hess[pair_row, pair_item] * n

        params = {
            **self._lgb_common(seed),
            "objective": objective,
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_child_samples": self.min_child_samples,
            "lambda_l2": self.reg_lambda,
        }
        init = self._start_scores(pairs, start)
        train = lgb.Dataset(pairs, np.zeros(len(pairs)), init_score=init)
        return lgb.train(params, train, num_boost_round=rounds, callbacks=callbacks)

    def check_fit_memory(self, data: SlateLogs | LoggedBandit, owner: str) -> None:
        """Refuse, as ``owner``, a fit on ``data`` whose dense (context, item) pair rows (8
        bytes a value: [x; onehot(a) or phi(a); position]) and the rounds' four (n, K) float64
        arrays (scores, probabilities, gradients, Hessians) cannot fit in memory."""
        logs = data if isinstance(data, SlateLogs) else self._check_logs(data)
        n, k = len(logs), logs.n_items
        candidates = logs.candidates
        if candidates is None:
            n_pairs = n * k
        else:
            n_pairs = int(getattr(candidates, "nnz", None) or np.count_nonzero(candidates))
        items = k if logs.item_features is None else logs.item_features.shape[1]
        width = logs.contexts.shape[1] + items + 1
        what = (
            f"{n_pairs:,} (context, item) pairs of {width:,} columns and four {n:,} x {k:,} "
            "arrays (float64)"
        )
        fix = (
            "Give each impression its candidate set or the items their features, or use fewer "
            "items."
        )
        check_memory(8 * (n_pairs * width + 4 * n * k), owner, what, fix)

    def _check_logs(self, data: Any) -> SlateLogs:
        owner = f"{type(self).__name__}.fit"
        if isinstance(data, LoggedBandit) and data.positions is None:
            data = one_slot_logs(data)
        if not isinstance(data, SlateLogs):
            raise InvalidParameterError(
                f"{owner}: data must be SlateLogs (opboost.api.slates), one row per impression "
                f"with (n, L) slates, or a LoggedBandit without positions (one slot); got "
                f"{type(data).__name__}"
                f"{' with positions' if isinstance(data, LoggedBandit) else ''}. Per-position "
                f"rows do not say which rows share an impression."
            )
        if self.click_model == "cascade" and data.cascade_propensities is None:
            raise InvalidParameterError(
                f"{owner}: click_model='cascade' weighs clicks by the logger's prefix "
                f"propensities, and these logs have cascade_propensities=None; pass them, or "
                f"use click_model='pbm'."
            )
        alpha = self.position_weights
        if alpha is not None and np.shape(alpha) != (data.slate_size,):
            raise InvalidParameterError(
                f"{owner}: position_weights has shape {np.shape(alpha)}; it must be "
                f"(L,) = ({data.slate_size},), one weight per position."
            )
        return data

    def _weights(self, logs: SlateLogs) -> np.ndarray:
        """w_{ik}: the clipped importance-weighted clicks, scaled to mean 1 over the clicks."""
        if self.click_model == "pbm":
            propensity = logs.marginal_propensities
        else:
            propensity = logs.cascade_propensities
        alpha = 1.0 if self.position_weights is None else np.asarray(self.position_weights)
        w = np.where(logs.observed, alpha * logs.rewards / propensity, 0.0)
        w = np.minimum(w, self.max_weight)
        clicked = w > 0
        return w / w[clicked].mean() if clicked.any() else w

    def _candidate_mask(self, candidates: Any, m: int, k: int | None = None) -> np.ndarray:
        k = self.n_items_ if k is None else k
        if candidates is None:
            return np.ones((m, k), dtype=bool)
        mask = np.asarray(candidates)
        if mask.shape != (m, k) or mask.dtype != bool:
            raise InvalidParameterError(
                f"{type(self).__name__}: candidates must be an (m, K) = {(m, k)} boolean "
                f"mask; got shape {mask.shape} and dtype {mask.dtype}."
            )
        return mask

    def _design(
        self,
        contexts: np.ndarray,
        rows: np.ndarray,
        items: np.ndarray,
        *,
        positions: np.ndarray | None = None,
        features: np.ndarray | None = None,
    ) -> np.ndarray:
        """Pair rows with the position column (the top, 0, unless ``positions``) last."""
        features = self.item_features_ if features is None else features
        pairs = pair_rows(contexts, rows, items, features, self.n_items_)
        column = np.zeros(len(rows)) if positions is None else positions
        return np.hstack([pairs, np.asarray(column, dtype=np.float64)[:, None]])

    def _start_scores(self, pairs: np.ndarray, start: Any = None) -> np.ndarray:
        """F_0 = logit q(x, a, k=1) on pair rows whose position column is 0 (q: ``start``,
        the fitted ``start_model_`` by default)."""
        start = self.start_model_ if start is None else start
        q = np.clip(start.predict(pairs), _EPS, 1.0 - _EPS)
        return np.log(q / (1.0 - q))

    def decision_function(  # type: ignore[override]
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """F(x, a), (m, K), -inf outside ``candidates`` (an (m, K) boolean mask); a model
        fitted on item features scores the catalogue ``action_features`` (K', d_item) when
        given: (m, K')."""
        check_fitted(self, "start_model_")
        owner = f"{type(self).__name__}.decision_function"
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_:
            raise InvalidParameterError(
                f"{owner}: X has shape {X.shape}; the model was fitted on "
                f"{self.n_features_} context features."
            )
        features = self.item_features_
        if action_features is not None:
            if features is None:
                raise InvalidParameterError(
                    f"{owner}: the model was fitted without item features (one-hot items) "
                    f"and cannot score a new catalogue; drop action_features=."
                )
            features = np.asarray(action_features, dtype=np.float64)
            if features.ndim != 2 or features.shape[1] != self.item_features_.shape[1]:
                raise InvalidParameterError(
                    f"{owner}: action_features has shape {features.shape}; it must be "
                    f"(K', {self.item_features_.shape[1]}), the fitted items' feature count."
                )
        k = self.n_items_ if features is None else features.shape[0]
        mask = self._candidate_mask(candidates, len(X), k)
        rows, items = np.nonzero(mask)
        pairs = self._design(X, rows, items, features=features)
        score = self._start_scores(pairs)
        if self.correction_model_ is not None:
            score = score + self.correction_model_.predict(pairs)
        out = np.full(mask.shape, -np.inf)
        out[rows, items] = score
        return out

    def rank(
        self, X: Any, *, candidates: Any = None, action_features: Any = None, k: int | None = None
    ) -> np.ndarray:
        """The ranking, (m, k) item ids (best first; k = the logs' L by default), among each
        row's ``candidates``."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        k = self._slate_length(scores, k, "rank")
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]

    def _slate_length(self, scores: np.ndarray, k: int | None, method: str) -> int:
        k = self.slate_size_ if k is None else k
        fewest = int(np.isfinite(scores).sum(axis=1).min()) if len(scores) else k
        if not isinstance(k, Integral) or not 1 <= k <= fewest:
            raise InvalidParameterError(
                f"{type(self).__name__}.{method}: k={k!r} must be an int in [1, {fewest}], "
                f"the fewest candidates of a row."
            )
        return int(k)

    def sample_slate(  # type: ignore[override]
        self,
        X: Any,
        k: int | None = None,
        *,
        temperature: float = 1.0,
        random_state: Any = None,
        candidates: Any = None,
        action_features: Any = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Plackett–Luce slates of F / ``temperature``: ``(slates, marginal, cascade)``, all
        (m, k): the item ids, each item's exact probability at its position, and the
        probability of each prefix (the logs' ``marginal_propensities`` and
        ``cascade_propensities``)."""
        if not (isinstance(temperature, Real) and temperature > 0):
            raise InvalidParameterError(
                f"{type(self).__name__}.sample_slate: temperature must be a number > 0; got "
                f"{temperature!r}."
            )
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        k = self._slate_length(scores, k, "sample_slate")
        rng = check_random_state(random_state)
        slates = sample_plackett_luce(scores, k, rng, temperature)
        marginal = marginal_distributions(scores, k, temperature)
        marginal = np.take_along_axis(marginal, slates[:, :, None], axis=2)[:, :, 0]
        return slates, marginal, prefix_probabilities(scores, slates, temperature)

    def save(self, path: str | Path) -> Path:
        """Write the fitted policy as one JSON file (the LightGBM models as text)."""
        check_fitted(self, "start_model_")
        params = {
            key: value
            for key, value in self.get_params(deep=False).items()
            if key != "random_state"
        }
        if self.position_weights is not None:
            params["position_weights"] = np.asarray(self.position_weights, float).tolist()
        features = self.item_features_
        state = {
            "format": _FORMAT,
            "version": 1,
            "params": params,
            "n_items": self.n_items_,
            "n_features": self.n_features_,
            "slate_size": self.slate_size_,
            "item_features": None if features is None else np.asarray(features).tolist(),
            "start_model": self.start_model_.model_to_string(),
            "correction_model": None
            if self.correction_model_ is None
            else self.correction_model_.model_to_string(),
        }
        path = Path(path)
        path.write_text(json.dumps(state))
        return path

    @classmethod
    def load(cls, path: str | Path) -> SlateBooster:
        """Read a policy ``save`` wrote (JSON and LightGBM text; nothing is unpickled)."""
        import lightgbm as lgb

        state = json.loads(Path(path).read_text())
        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            raise InvalidParameterError(
                f"SlateBooster.load: {path} is not a saved slate_boost policy (no "
                f"'format': {_FORMAT!r}); write one with SlateBooster.save."
            )
        model = cls(**state["params"])
        model.n_items_, model.n_features_ = state["n_items"], state["n_features"]
        model.slate_size_ = state["slate_size"]
        model.checkpoints_ = []
        features = state["item_features"]
        model.item_features_ = None if features is None else np.asarray(features)
        model.start_model_ = lgb.Booster(model_str=state["start_model"])
        text = state["correction_model"]
        model.correction_model_ = None if text is None else lgb.Booster(model_str=text)
        model.n_rounds_ = 0 if text is None else model.correction_model_.current_iteration()
        return model
