"""Built-in policy learners (kind "policy_learner") the boosted policies are compared against.

``reward_regression``: regress the reward on (x, a) with LightGBM and act greedily, the
"BRR-xgb" analogue of London et al. Table 1 (a direct-method policy). Registered through the
same hook a third-party policy learner uses.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from opboost._validation import check_fitted, check_random_state
from opboost.data import LoggedBandit
from opboost.design import action_rows, stacked_design
from opboost.hookspecs import hookimpl
from opboost.policy_learners import PolicyLearner

__all__ = ["RewardRegression"]


class RewardRegression(PolicyLearner):
    """Greedy policy from a LightGBM reward model r(x, a) fitted on the logged rows.

    Parameters
    ----------
    n_estimators, num_leaves, learning_rate, min_child_samples : LightGBM regressor settings.
    random_state : seed.
    """

    name: ClassVar[str] = "reward_regression"

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

        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        self.n_actions_ = data.n_actions
        self.model_ = lgb.LGBMRegressor(
            n_estimators=self.n_estimators,
            num_leaves=self.num_leaves,
            learning_rate=self.learning_rate,
            min_child_samples=self.min_child_samples,
            random_state=seed,
            verbose=-1,
            n_jobs=1,
        )
        self.model_.fit(action_rows(data.contexts, data.actions, data.n_actions), data.rewards)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Predicted rewards of every action, (m, K)."""
        check_fitted(self, "model_")
        rows = stacked_design(X, self.n_actions_)
        return self.model_.predict(rows).reshape(X.shape[0], self.n_actions_)


@hookimpl
def opboost_register_policy_learners():
    return [RewardRegression]
