"""``reward_regression``: regress the reward on (x, a) with LightGBM and act greedily, the
"BRR-xgb" analogue of London et al. Table 1 (a direct-method policy).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from opboost.api.constraints import Interval
from opboost.api.data import LoggedBandit
from opboost.api.design import action_rows, stacked_design
from opboost.api.policy_learner import PolicyLearner
from opboost.api.tabular import attach_schema
from opboost.api.validation import check_fitted, check_random_state

__all__ = ["RewardRegression"]


class RewardRegression(PolicyLearner):
    """Greedy policy from a LightGBM reward model r(x, a) fitted on the logged rows.

    Parameters
    ----------
    n_estimators, num_leaves, learning_rate, min_child_samples : LightGBM regressor settings.
    random_state : seed.
    """

    name: ClassVar[str] = "reward_regression"
    _parameter_constraints: ClassVar[dict] = {  # LightGBM's rules for these settings
        "n_estimators": [Interval(Integral, 1, None)],
        "num_leaves": [Interval(Integral, 2, 131072)],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither")],
        "min_child_samples": [Interval(Integral, 0, None)],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_estimators: int = 200,
        num_leaves: int = 31,
        learning_rate: float = 0.05,
        min_child_samples: int = 20,
        random_state: Any = None,
    ):
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.random_state = random_state

    def fit(self, data: LoggedBandit) -> RewardRegression:
        """Fit r(x, a) on the logged (x_i, a_i) -> r_i pairs."""
        import lightgbm as lgb

        self.validate_params()
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        self.n_actions_, self.n_features_ = data.n_actions, data.n_features
        self.schema_ = data.schema  # from_dataframe's: categorical columns and action ids
        categorical = list(data.schema.categorical_features) if data.schema else []
        self.model_ = lgb.LGBMRegressor(
            n_estimators=self.n_estimators,
            num_leaves=self.num_leaves,
            learning_rate=self.learning_rate,
            min_child_samples=self.min_child_samples,
            random_state=seed,
            verbose=-1,
            n_jobs=1,
        )
        rows = action_rows(data.contexts, data.actions, data.n_actions)  # [x; onehot(a)]
        self.model_.fit(rows, data.rewards, categorical_feature=categorical or "auto")
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Predicted rewards of every action, (m, K); a DataFrame ``X`` of logs with a
        schema (``LoggedBandit.from_dataframe``) is encoded with it."""
        check_fitted(self, "model_")
        if self.schema_ is not None and hasattr(X, "columns"):
            X = self.schema_.encode(X, f"{type(self).__name__}.decision_function")
        rows = stacked_design(X, self.n_actions_)
        return self.model_.predict(rows).reshape(X.shape[0], self.n_actions_)

    def to_policy(self) -> Any:
        """The fitted model as an :class:`opboost.policy.Policy` (scores = predicted rewards):
        its LightGBM model reads the rows [x; onehot(a)], the ``"stacked_onehot"`` design of
        ``lightgbm_tree``, so it saves and loads like a boosted policy."""
        from opboost.api.policy import Policy
        from opboost.learners.lightgbm_ensemble import LightGBMEnsemble

        check_fitted(self, "model_")
        booster = self.model_.booster_
        ensemble = LightGBMEnsemble(
            booster,
            n_actions=self.n_actions_,
            action_design="stacked_onehot",
            n_features=self.n_features_,
            n_rounds=booster.num_trees(),
        )
        meta = {
            "base_learner": "lightgbm_tree",
            "policy_learner": self.name,
            "policy_learner_params": self.get_params(deep=False),
            "n_actions": self.n_actions_,
            "n_features": self.n_features_,
        }
        policy = Policy(ensemble, self.n_actions_, meta)
        attach_schema(policy, self.schema_)
        return policy
