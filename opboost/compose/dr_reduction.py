"""``dr_reduction``: the doubly robust reduction of policy learning to regression.

A cross-fitted reward model q(x, a) (the doubly robust estimator's own,
``opboost.algorithms.estimators.direct.DoublyRobust``) gives every logged row and
action k the DR pseudo-reward

    Gamma_i(k) = q(x_i, k) + 1[a_i = k] (r_i - q(x_i, a_i)) / p_i,

an unbiased estimate of the mean reward of k at x_i when the propensities are right. LightGBM
then regresses Gamma on the contexts, one regressor per action (``regressor="per_action"``,
the default) or one on the stacked rows [x_i; onehot(k)] (``"stacked"``), and the policy plays
the argmax of the regressors' outputs (Dudik, Langford & Li 2011; the "DR + regression oracle"
reduction). Cross-fitting keeps each row's q from a model that never saw the row, so its
residual r_i - q(x_i, a_i) is not shrunk by the model's own fit.

It lives in the composition layer because it composes two algorithm families: the DR
estimator's reward model and LightGBM regressors as a policy learner.

On logs with candidate sets q and Gamma exist only at each row's candidates, so each regressor
learns only from the rows where its action is a candidate (stacked: only the candidate pairs).
On logs with item features (``action_features``) q reads [x; phi(a)] and one regressor learns
Gamma on the candidate pairs [x_i; phi(k)] whatever ``regressor`` says, so that items never
logged are scored by their features (``predict(X, candidates=..., action_features=...)``).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.estimators.direct import (
    DoublyRobust,
    default_reward_model,
    dr_coefficients,
)
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.api.constraints import Interval, Options
from opboost.api.data.candidates import candidate_pairs
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.pairs import ACTION_SCHEMA_KEY, ActionSchema, PairRows
from opboost.api.data.slots import SlotView
from opboost.api.data.tabular_frames import attach_schema
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.design import action_rows, stacked_design
from opboost.api.numerics.memory_limit import check_memory
from opboost.api.policy_learner import PolicyLearner
from opboost.api.serving.masks import mask_scores, serving_mask
from opboost.api.serving.tie_order import logs_tie_order, record_tie_order
from opboost.api.validation import check_fitted, check_random_state
from opboost.lgbm.rows import missing_categories_as_nan
from opboost.lgbm.threads import AUTO, PREDICT_WORK_PER_THREAD, lightgbm_threads

__all__ = ["DRReduction", "dr_pseudo_rewards"]

REGRESSORS = ("per_action", "stacked")


class _CategoricalRegressor:
    """The default reward model told which context columns are categorical (their indices
    are unchanged in the reward model's rows [x; onehot(a)])."""

    def __init__(self, model: Any, categorical: list[int]) -> None:
        self.model = model
        self.categorical = categorical

    def fit(self, X: Any, y: np.ndarray) -> _CategoricalRegressor:
        X = missing_categories_as_nan(X, self.categorical)
        self.model.fit(X, y, categorical_feature=self.categorical)
        return self

    def predict(self, X: Any, **kwargs: Any) -> np.ndarray:
        return self.model.predict(X, **kwargs)

    @property
    def booster_(self) -> Any:
        """The fitted LightGBM booster (its prediction threads are chosen by the work)."""
        return self.model.booster_


#: The most actions ``regressor="per_action"`` fits one regressor each for.
MAX_PER_ACTION_MODELS = 10_000


def _dr_estimator(data: LoggedBandit, n_folds: int, random_state: Any) -> DoublyRobust:
    """The DR estimator whose reward model gives q: its default LightGBM regressor, with the
    logs' categorical context columns split as categories."""
    model = default_reward_model(int(check_random_state(random_state).integers(2**31 - 1)))
    categorical = list(data.schema.categorical_features) if data.schema else []
    reward_model = _CategoricalRegressor(model, categorical) if categorical else model
    return DoublyRobust(reward_model=reward_model, n_folds=n_folds, random_state=random_state)


def dr_pseudo_rewards(data: LoggedBandit, *, n_folds: int = 2, random_state: Any = None):
    """The cross-fitted DR pseudo-rewards Gamma (n, K) of the logs, and the q (n, K) they
    come from: q from the DR estimator's reward model (LightGBM on [x; onehot(a)], categorical
    context columns split as categories), fitted on ``n_folds`` - 1 folds and predicted on the
    held-out one; 0 outside each row's candidates."""
    q = _dr_estimator(data, n_folds, random_state).reward_predictions(data)
    return dr_coefficients(data, q), q


def _empty_class_model(X: Any, n_classes: int, categorical: list[int]) -> str:
    """The model text of an empty ``num_class=K`` LightGBM booster on X's columns: the
    header of the per-action policy."""
    import lightgbm as lgb

    params = {"objective": "multiclass", "num_class": n_classes, "verbose": -1}
    categorical = categorical or "auto"
    X = missing_categories_as_nan(X, categorical)
    rows = lgb.Dataset(X, label=np.zeros(X.shape[0]), categorical_feature=categorical)
    return lgb.Booster(params=params, train_set=rows).model_to_string()


class DRReduction(PolicyLearner):
    """Greedy policy of LightGBM regressors fitted to the doubly robust pseudo-rewards.

    Parameters
    ----------
    regressor
        "per_action" (default): one LightGBM regressor per action on (x_i,
        Gamma_i(k)); "stacked": one regressor on the rows [x_i; onehot(k)] -> Gamma_i(k).
    n_folds
        cross-fitting folds of the reward model q (>= 2).
    n_estimators, num_leaves, learning_rate, min_child_samples
        the LightGBM regressors' settings. Small trees on many rows (100, 7, 0.05, 200)
        because the pseudo-rewards are noisy (a 1/p term on the logged action): on the tuning
        worlds 0-7 of ``bench_peers.py --suite tabular`` (3,000 rows) they were worth 0.29
        more on average than reward regression's (200, 31, 0.05, 20).
    num_threads
        LightGBM's threads: "auto" (default) by the size of each fit and prediction;
        an int as it is (0: every core).
    random_state
        seed of the folds, the reward model and the regressors.

    Attributes
    ----------
    models_
        the fitted regressors (``lightgbm.Booster``): K (None for an action never a
        candidate, scored 0) for "per_action", one for "stacked".
    n_actions_, n_features_
        K and d.
    tie_order_
        (K,) the order equal scores are broken in, best first: the logs' actions by SNIPS
        value as constant policies (None on logs with item features).
    """

    name: ClassVar[str] = "dr_reduction"
    _parameter_constraints: ClassVar[dict] = {
        "regressor": [Options(REGRESSORS)],
        "n_folds": [Interval(Integral, 2, None, fix="use 2 to 5 folds")],
        # the LightGBM regressors' settings, checked as reward regression checks them
        **RewardRegression._parameter_constraints,
    }

    def __init__(
        self,
        *,
        regressor: str = "per_action",
        n_folds: int = 2,
        n_estimators: int = 100,
        num_leaves: int = 7,
        learning_rate: float = 0.05,
        min_child_samples: int = 200,
        num_threads: int | str = AUTO,
        random_state: Any = None,
    ):
        self.regressor = regressor
        self.n_folds = n_folds
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.num_threads = num_threads
        self.random_state = random_state

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_estimators": 20, "num_threads": 1}

    def fit(self, data: LoggedBandit) -> DRReduction:
        """Cross-fit q, form Gamma (n, K), fit the regressors; return self."""
        self.validate_params()
        if len(data) < 2 * self.n_folds:
            raise InvalidParameterError(
                f"DRReduction.fit: {len(data)} logged rows are too few for n_folds="
                f"{self.n_folds} (at least 2 rows a fold); use more logs or fewer folds."
            )
        rng = check_random_state(self.random_state)
        q_seed, seed = (int(s) for s in rng.integers(2**31 - 1, size=2))
        self.n_actions_, self.n_features_ = data.n_actions, data.n_features
        self.schema_, self.action_schema_ = data.schema, None
        self.tie_order_ = logs_tie_order(data)
        self._categorical = list(data.schema.categorical_features) if data.schema else []
        if data.action_features is not None:
            return self._fit_pairs(data, q_seed, seed)
        self.check_fit_memory(data, "DRReduction.fit")
        gamma, _ = dr_pseudo_rewards(data, n_folds=self.n_folds, random_state=q_seed)
        n, k = len(data), data.n_actions
        if data.candidates is None:
            rows, actions = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
        else:
            rows, actions = candidate_pairs(data.candidates)
        targets = gamma[rows, actions]
        if self.regressor == "stacked":
            what = f"{len(rows):,} stacked rows [x; onehot(a)] of {data.n_features + k:,} columns"
            fix = "Use regressor='per_action', which fits on the contexts alone."
            check_memory(8 * len(rows) * (data.n_features + k), "DRReduction.fit", what, fix)
            design = action_rows(data.contexts[rows], actions, k)
            self.models_ = [self._fit_one(design, targets, seed)]
            return self
        self._empty_text = _empty_class_model(data.contexts[:2], k, self._categorical)
        if data.candidates is None:  # every regressor learns from every context
            shared = self._dataset(data.contexts, gamma[:, 0], seed)
            self.models_ = [self._fit_one(shared, gamma[:, a], seed) for a in range(k)]
            return self
        order = np.argsort(actions, kind="stable")
        bounds = np.searchsorted(actions[order], np.arange(k + 1))
        self.models_ = []
        for a in range(k):  # one regressor per action: a loop over K, not over rows
            at = order[bounds[a] : bounds[a + 1]]
            if len(at) == 0:
                self.models_.append(None)
                continue
            self.models_.append(self._fit_one(data.contexts[rows[at]], targets[at], seed + a))
        return self

    def check_fit_memory(self, data: LoggedBandit, owner: str) -> None:
        """Refuse, as ``owner``, a fit on logs without item features that cannot run: q and
        Gamma (n, K) and the (row, action) index pairs, 32 bytes a cell, beyond the memory
        left; or ``regressor="per_action"`` with more than ``MAX_PER_ACTION_MODELS``
        actions (one LightGBM fit each). Logs with item features are checked on their pairs."""
        if data.action_features is not None:
            return
        n, k = len(data), data.n_actions
        what = f"q and Gamma of {n:,} rows x {k:,} actions and their pairs (32 bytes a cell)"
        fix = "Give each row its candidate set or the items their features, or use fewer actions."
        check_memory(32 * n * k, owner, what, fix)
        if self.regressor == "per_action" and k > MAX_PER_ACTION_MODELS:
            raise InvalidParameterError(
                f"{owner}: regressor='per_action' fits one LightGBM model per action, "
                f"{k:,} models (at most {MAX_PER_ACTION_MODELS:,}); use regressor='stacked', "
                "or give the items their features (LoggedBandit(action_features=...))."
            )

    def _fit_pairs(self, data: LoggedBandit, q_seed: int, seed: int) -> DRReduction:
        """Logs with item features: one regressor on the candidate pairs [x_i; phi(k)] ->
        Gamma_i(k), q from the DR estimator's reward model on [x; phi(a)], so new items are
        scored by their features."""
        self.action_schema_ = ActionSchema.of_logs(
            data.action_features, data.n_actions, data.item_schema
        )
        view = SlotView.from_candidates(data.candidates, len(data), data.n_actions)
        pairs = PairRows(data.contexts, data.action_features, view)
        what = f"{pairs.n_pairs:,} candidate pairs [x; phi(a)] of {pairs.width:,} columns"
        fix = "Use fewer candidates a row (LoggedBandit(candidates=...)) or fewer logged rows."
        check_memory(8 * pairs.n_pairs * pairs.width, "DRReduction.fit", what, fix)
        gamma = _dr_estimator(data, self.n_folds, q_seed).pair_coefficients(data, pairs)
        d = data.n_features
        self._categorical += [d + j for j in self.action_schema_.categorical]
        self.models_ = [self._fit_one(pairs.matrix(), view.gather(gamma), seed)]
        return self

    def _params(self, X: Any, seed: int) -> dict[str, Any]:
        """LightGBM's settings of a regressor on the rows ``X`` (n, d): least squares with this
        learner's trees, threads by the fit's size."""
        self.num_threads_ = lightgbm_threads(X.shape[0] * X.shape[1], self.num_threads)
        return {
            "objective": "regression",
            "num_iterations": self.n_estimators,
            "num_leaves": self.num_leaves,
            "learning_rate": self.learning_rate,
            "min_data_in_leaf": self.min_child_samples,
            "seed": seed % (2**31 - 1),
            "verbose": -1,
            "num_threads": self.num_threads_,
            "deterministic": True,  # the same model whatever the thread count
        }

    def _dataset(self, X: Any, y: np.ndarray, seed: int) -> Any:
        """The LightGBM Dataset of the rows ``X`` and targets ``y`` (kept: the per-action
        regressors of logs without candidate sets share one Dataset of the contexts, binned
        once, and each sets its own targets)."""
        import lightgbm as lgb

        categorical = self._categorical or "auto"
        params = self._params(X, seed)
        X = missing_categories_as_nan(X, categorical)
        return lgb.Dataset(
            X, y, params=params, categorical_feature=categorical, free_raw_data=False
        )

    def _fit_one(self, rows: Any, y: np.ndarray, seed: int) -> Any:
        """A ``lightgbm.Booster`` fitted to targets ``y`` on ``rows``: an array (a Dataset of
        its own, seeded with ``seed``), or a Dataset shared by the per-action regressors of
        logs without candidate sets (from :meth:`_dataset`, binned once with its first
        regressor's seed). The seed draws nothing in these fits but the rows the bins are
        read from, and only above LightGBM's 200,000 (``bin_construct_sample_cnt``)."""
        import lightgbm as lgb

        if isinstance(rows, lgb.Dataset):
            dataset = rows
            dataset.set_label(y)  # the shared Dataset's targets become this regressor's
        else:
            dataset = self._dataset(rows, y, seed)
        return lgb.train(dataset.params, dataset)

    def decision_function(
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """The regressors' predicted pseudo-rewards of every action, (m, K), -inf outside
        ``candidates`` (an (m, K) mask) when given; a DataFrame ``X`` of logs with a schema
        (``LoggedBandit.from_dataframe``) is encoded with it. Fitted on item features, it
        scores the catalogue ``action_features`` (K', d_a) instead: (m, K')."""
        check_fitted(self, "models_")
        if self.action_schema_ is not None or action_features is not None:
            if self.action_schema_ is None:
                raise InvalidParameterError(
                    "DRReduction: this learner was fitted without action features (its actions "
                    f"are the {self.n_actions_} logged action indices); drop action_features=."
                )
            return self.to_policy().decision_function(
                X, candidates=candidates, action_features=action_features
            )
        owner = f"{type(self).__name__}.decision_function"
        if self.schema_ is not None and hasattr(X, "columns"):
            X = self.schema_.encode(X, owner)
        scores = self._scores(X, owner)
        if candidates is None:
            return scores
        return mask_scores(scores, serving_mask(candidates, scores.shape, owner))

    def predict(self, X: Any, *, candidates: Any = None, action_features: Any = None):
        """Greedy actions (m,): the best-scored (candidate, when given) action or item."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        return self._greedy(scores)

    def predict_proba(self, X: Any, *, candidates: Any = None, action_features: Any = None):
        """The greedy policy as one-hot probabilities (m, K)."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        return self._greedy_probs(scores)

    def to_policy(self) -> Any:
        """The fitted regressors as an ``opboost.api.policy.Policy`` (scores = predicted
        pseudo-rewards) that saves and loads like a boosted policy: per-action regressors as
        one ``num_class=K`` LightGBM model (design ``"per_action"``, class a = regressor a),
        the stacked one on [x; onehot(a)] (``"stacked_onehot"``), the one on item features on
        pairs (``"pairs"``)."""
        from opboost.api.policy import Policy
        from opboost.lgbm.action_trees import class_model
        from opboost.lgbm.ensemble import LightGBMEnsemble

        check_fitted(self, "models_")
        schema, n_extra, meta = self.action_schema_, 0, {}
        if schema is not None:
            design, booster = "pairs", self.models_[0]
            n_extra, meta = schema.n_features, {ACTION_SCHEMA_KEY: schema.to_json()}
        elif self.regressor == "stacked":
            design, booster = "stacked_onehot", self.models_[0]
        else:
            design = "per_action"
            booster = class_model(self.models_, self._empty_text)
        rounds = booster.num_trees() // (self.n_actions_ if design == "per_action" else 1)
        ensemble = LightGBMEnsemble(
            booster, n_actions=self.n_actions_, action_design=design,
            n_features=self.n_features_, n_rounds=rounds, n_action_features=n_extra,
        )  # fmt: skip
        meta = {
            "base_learner": "lightgbm_tree",
            "policy_learner": self.name,
            "policy_learner_params": self.get_params(deep=False),
            "n_actions": self.n_actions_,
            "n_features": self.n_features_,
            **meta,
        }
        record_tie_order(meta, self.tie_order_)
        policy = Policy(ensemble, self.n_actions_, meta)
        attach_schema(policy, self.schema_)
        return policy

    def _scores(self, X: Any, owner: str) -> np.ndarray:
        """(m, K) scores of encoded contexts by the per-action or stacked regressors."""
        m, k = X.shape[0], self.n_actions_
        if self.regressor == "stacked":
            what = f"{m * k:,} stacked rows of {self.n_features_ + k:,} columns"
            fix = "Score fewer contexts per call (each is stacked with every action)."
            check_memory(8 * m * k * (self.n_features_ + k), owner, what, fix)
            return self._predict(self.models_[0], stacked_design(X, k)).reshape(m, k)
        scores = np.zeros((m, k))
        for a, model in enumerate(self.models_):
            if model is not None:
                scores[:, a] = self._predict(model, X)
        return scores

    def _predict(self, model: Any, rows: Any) -> np.ndarray:
        work = rows.shape[0] * model.num_trees()
        threads = lightgbm_threads(work, self.num_threads, per_thread=PREDICT_WORK_PER_THREAD)
        return np.asarray(model.predict(rows, num_threads=threads), dtype=np.float64)
