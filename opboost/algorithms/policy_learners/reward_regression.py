"""``reward_regression``: regress the reward on (x, a) with LightGBM and act greedily, the
"BRR-xgb" analogue of London et al. Table 1 (a direct-method policy). On logs with action
features the model reads [x; phi(a)] (the item's features), so it scores new items; with
candidates its policy plays the best candidate.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.api.constraints import Interval
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.pairs import ACTION_SCHEMA_KEY, ActionSchema, PairRows
from opboost.api.data.slots import SlotView
from opboost.api.data.tabular_frames import attach_schema
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.contexts import as_contexts
from opboost.api.numerics.design import action_rows
from opboost.api.numerics.memory_limit import check_memory
from opboost.api.policy_learner import PolicyLearner
from opboost.api.serving.masks import mask_scores, serving_mask
from opboost.api.serving.tie_order import logs_tie_order, record_tie_order
from opboost.api.validation import check_fitted, check_random_state
from opboost.lgbm.onehot_scores import onehot_action_scores, split_actions
from opboost.lgbm.rows import missing_categories_as_nan
from opboost.lgbm.threads import AUTO, NUM_THREADS, PREDICT_WORK_PER_THREAD, lightgbm_threads

__all__ = ["RewardRegression"]


_FIT_FIX = (
    "Use fewer actions, or a Booster with candidate sets on this catalogue "
    "(LoggedBandit(candidates=...)), which stacks only each row's candidates."
)


def _check_design(n_rows: int, n_features: int, n_actions: int, owner: str, fix: str) -> None:
    """Refuse a dense [x; onehot(a)] design of ``n_rows`` rows (8 bytes a value) that cannot
    fit in memory."""
    width = n_features + n_actions
    what = f"{n_rows:,} rows of [x; onehot(a)] with {width:,} float64 columns"
    check_memory(8 * n_rows * width, owner, what, fix)


class RewardRegression(PolicyLearner):
    """Greedy policy from a LightGBM reward model r(x, a) fitted on the logged rows.

    Parameters
    ----------
    n_estimators, num_leaves, learning_rate, min_child_samples
        LightGBM regressor settings.
    num_threads
        LightGBM's threads: "auto" (default) chooses them for each fit and prediction
        by its size and the free cores (``opboost.lgbm.threads.lightgbm_threads``); an int
        is used as it is (0: LightGBM's default, every core).
    random_state
        seed.

    Attributes
    ----------
    num_threads_
        the fit's LightGBM threads.
    tie_order_
        (K,) the order equal predicted rewards are broken in, best first: the logs' actions
        by SNIPS value as constant policies (None on logs with item features).
    """

    name: ClassVar[str] = "reward_regression"
    _parameter_constraints: ClassVar[dict] = {  # LightGBM's rules for these settings
        "n_estimators": [Interval(Integral, 1, None)],
        "num_leaves": [Interval(Integral, 2, 131072)],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither")],
        "min_child_samples": [Interval(Integral, 0, None)],
        "num_threads": NUM_THREADS,
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_estimators: int = 200,
        num_leaves: int = 31,
        learning_rate: float = 0.05,
        min_child_samples: int = 20,
        num_threads: int | str = AUTO,
        random_state: Any = None,
    ):
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.num_threads = num_threads
        self.random_state = random_state

    @staticmethod
    def check_fit_memory(data: LoggedBandit, owner: str) -> None:
        """Refuse, as ``owner``, a fit on ``data`` whose dense [x; onehot(a)] rows (8 bytes a
        value) cannot fit in memory (``opboost.api.numerics.memory_limit.check_memory``);
        logs with action features are fitted on their [x; phi(a)] pairs and pass."""
        if data.action_features is None:
            _check_design(len(data), data.n_features, data.n_actions, owner, _FIT_FIX)

    def fit(self, data: LoggedBandit) -> RewardRegression:
        """Fit r(x, a) on the logged (x_i, a_i) -> r_i pairs."""
        import lightgbm as lgb

        self.validate_params()
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        self.n_actions_, self.n_features_ = data.n_actions, data.n_features
        self.schema_ = data.schema  # from_dataframe's: categorical columns and action ids
        categorical = list(data.schema.categorical_features) if data.schema else []
        self.action_schema_ = None
        self.tie_order_ = logs_tie_order(data)
        self.check_fit_memory(data, "RewardRegression.fit")
        if data.action_features is None:
            rows = action_rows(data.contexts, data.actions, data.n_actions)  # [x; onehot(a)]
        else:  # [x; phi(a)]: the item's own features, so new items can be scored
            self.action_schema_ = ActionSchema.of_logs(
                data.action_features, data.n_actions, data.item_schema
            )
            view = SlotView.from_candidates(
                sp.csr_matrix((np.ones(len(data), bool), (np.arange(len(data)), data.actions)),
                              shape=(len(data), data.n_actions)),
                len(data), data.n_actions,
            )  # fmt: skip
            rows = PairRows(data.contexts, data.action_features, view).matrix()
        self.num_threads_ = lightgbm_threads(rows.shape[0] * rows.shape[1], self.num_threads)
        self.model_ = lgb.LGBMRegressor(
            n_estimators=self.n_estimators,
            num_leaves=self.num_leaves,
            learning_rate=self.learning_rate,
            min_child_samples=self.min_child_samples,
            random_state=seed,
            verbose=-1,
            n_jobs=self.num_threads_,
            deterministic=True,  # the same model whatever the thread count
        )
        rows = missing_categories_as_nan(rows, categorical)
        self.model_.fit(rows, data.rewards, categorical_feature=categorical or "auto")
        return self

    def decision_function(
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """Predicted rewards of every action, (m, K), -inf outside ``candidates`` (an (m, K)
        mask) when given; a DataFrame ``X`` of logs with a schema
        (``LoggedBandit.from_dataframe``) is encoded with it. A model fitted on action
        features scores the catalogue ``action_features`` (K', d_a) instead: (m, K')."""
        check_fitted(self, "model_")
        if self.action_schema_ is not None or action_features is not None:
            return self.to_policy().decision_function(
                X, candidates=candidates, action_features=action_features
            )
        owner = f"{type(self).__name__}.decision_function"
        X = self._contexts(X, owner)
        m, k = X.shape[0], self.n_actions_
        booster = self.model_.booster_
        split_on = len(split_actions(booster, self.n_features_, k))
        one = f"one context's scores, {k:,} actions (float64)"
        check_memory(8 * k, owner, one, "Refit with fewer actions; no call can score a context.")
        what = f"scores of {m:,} contexts x {k:,} actions (float64)"
        fix = f"Score fewer contexts per call (one context's scores take {8 * k / 1024:,.1f} KiB)."
        check_memory(8 * m * k, owner, what, fix)
        work = m * (split_on + 1) * booster.num_trees()
        threads = lightgbm_threads(work, self.num_threads, per_thread=PREDICT_WORK_PER_THREAD)
        scores = onehot_action_scores(self.model_, X, k, num_threads=threads)
        if candidates is None:
            return scores
        return mask_scores(scores, serving_mask(candidates, scores.shape, owner))

    def _contexts(self, X: Any, owner: str) -> Any:
        """``X`` as the fit's context columns (a DataFrame encoded with the fit's schema),
        their number checked before the design, whose width also counts the actions."""
        if self.schema_ is not None and hasattr(X, "columns"):
            X = self.schema_.encode(X, owner)
        X = as_contexts(X, missing=True)
        if X.shape[1] != self.n_features_:
            names = self.schema_.columns if self.schema_ is not None else ()
            named = f" ({', '.join(map(repr, names))})" if names else ""
            raise InvalidParameterError(
                f"{owner}: X has {X.shape[1]} context column(s), but the model was fitted on "
                f"{self.n_features_}{named}; pass all {self.n_features_} columns, in the fit's "
                f"order."
            )
        return X

    def predict(self, X: Any, *, candidates: Any = None, action_features: Any = None):
        """Greedy actions (m,): the best-predicted (candidate, when given) action or item."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        return self._greedy(scores)

    def predict_proba(self, X: Any, *, candidates: Any = None, action_features: Any = None):
        """The greedy policy as one-hot probabilities (m, K)."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        return self._greedy_probs(scores)

    def to_policy(self) -> Any:
        """The fitted model as a [`Policy`][opboost.api.policy.Policy] (scores = predicted
        rewards): its LightGBM model reads the rows [x; onehot(a)], the ``"stacked_onehot"`` design
        of ``lightgbm_tree``, so it saves and loads like a boosted policy."""
        from opboost.api.policy import Policy
        from opboost.lgbm.ensemble import LightGBMEnsemble

        check_fitted(self, "model_")
        booster, schema = self.model_.booster_, self.action_schema_
        ensemble = LightGBMEnsemble(
            booster,
            n_actions=self.n_actions_,
            action_design="stacked_onehot" if schema is None else "pairs",
            n_features=self.n_features_,
            n_rounds=booster.num_trees(),
            n_action_features=0 if schema is None else schema.n_features,
        )
        meta = {
            "base_learner": "lightgbm_tree",
            "policy_learner": self.name,
            "policy_learner_params": self.get_params(deep=False),
            "n_actions": self.n_actions_,
            "n_features": self.n_features_,
        }
        if schema is not None:
            meta[ACTION_SCHEMA_KEY] = schema.to_json()
        record_tie_order(meta, self.tie_order_)
        policy = Policy(ensemble, self.n_actions_, meta)
        attach_schema(policy, self.schema_)
        return policy
