"""LightGBM regression trees as the base learner, and the LightGBM-text ensemble they build.

``LightGBMTree`` ("lightgbm_tree", regression reduction) grows one LightGBM tree per round by
weighted least squares, through a custom objective: gradient ``-w*y``, hessian ``w`` and
learning rate 1 make every leaf the weighted mean of its targets. The ``lgb.Dataset`` is built
once (``prepare``); each round only writes two float32 buffers.

Action designs (how f(x, a) is featurised):

``"stacked"``         one tree on the n*K rows [x; a] with the action as ONE categorical column
                      (London et al., appendix F.5, the one-hot block folded into a categorical
                      feature; example-major rows i*K + a, binned without a float matrix).
``"stacked_onehot"``  the paper's literal [x; onehot(a)]: K 0/1 columns instead of one.
``"per_action"``      one tree per action on the n context rows (a LightGBM model with
                      ``num_class=K``), so each round adds K trees.

Per round the new tree's outputs on the training rows are the change of LightGBM's cached
training scores (``LGBM_BoosterGetPredict``). ``commit_round(alpha)`` records alpha; the leaves
are scaled when the model is read (``lightgbm_commits``): an ordinary LightGBM model of
F(x) = sum_t alpha_t f_t(x), a reward model's trees in front (``lightgbm_reward_start``).

:class:`LightGBMEnsemble` serialises as one JSON header line followed by LightGBM's model text
(format "lightgbm_text_v1"); leaf values are written with 17 significant digits, so
predictions after ``loads`` are bit-identical.
"""

from __future__ import annotations

from typing import Any, ClassVar

import lightgbm as lgb
import numpy as np

from opboost.algorithms.learners.lightgbm_commits import CommittedRounds
from opboost.algorithms.learners.lightgbm_pairs import PairRounds
from opboost.algorithms.learners.lightgbm_reward_start import (
    START_CHOICE,
    is_start_choice,
    merge_in_front,
)
from opboost.algorithms.learners.lightgbm_start_hooks import RewardStartHooks
from opboost.api.constraints import Options, Satisfies
from opboost.api.data.pairs import PairRows
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseLearner, BaseProblem, Ensemble
from opboost.api.learner_toolkit import (
    learner_seed,
    prepare_inputs,
    wls_gradients,
)
from opboost.lgbm import sampling as sampling_rules
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.layout import (
    fit_layout,
    update_one_iter,
)
from opboost.lgbm.params import (
    CATEGORICAL_FEATURES,
    LIGHTGBM_PARAMS,
    LIGHTGBM_TREE_CONSTRAINTS,
    lightgbm_params_problem,
    tree_params,
)
from opboost.lgbm.rows import (
    ACTION_DESIGNS,
    action_tilt,
    categorical_columns,
    context_rows_cache,
    missing_categories_as_nan,
    stacked_dataset,
)
from opboost.lgbm.threads import AUTO, lightgbm_threads

__all__ = [
    "ACTION_DESIGNS",
    "LIGHTGBM_PARAMS",
    "LIGHTGBM_TREE_CONSTRAINTS",
    "LightGBMEnsemble",
    "LightGBMTree",
    "lightgbm_params_problem",
]


class LightGBMTree(CommittedRounds, PairRounds, RewardStartHooks, BaseLearner):
    """LightGBM regression tree per round, fitted by weighted least squares.

    Parameters
    ----------
    num_leaves, max_depth, min_data_in_leaf, min_sum_hessian_in_leaf, lambda_l2
        the LightGBM parameters of the same names. By default the
        weights are rescaled to mean 1 over the nonzero entries each round (the weighted
        least-squares fit is scale invariant), so ``min_sum_hessian_in_leaf`` and
        ``lambda_l2`` are in units of "typical rows".
    feature_fraction, max_bin
        the LightGBM parameters of the same names.
    num_threads
        LightGBM's threads. "auto" (default): chosen for each fit (rounds and start
        alike) by the designed data's size and the free cores
        (``opboost.lgbm.threads.lightgbm_threads``); an int is used as it is (0: LightGBM's
        default, every core).
    hessian_units
        "mean" (default, the rescaling above) or "raw": the hessians are the
        objective's weights as they are (BOPL: |r_i|/p_i), the units of XGBoost's
        ``min_child_weight`` in London et al.'s Table 5.
    action_design
        "stacked" (default), "stacked_onehot" or "per_action"; see the module doc.
    random_state
        seed of LightGBM's randomness (binning sample, feature_fraction). If None,
        the ``random_state`` passed to ``prepare`` by the booster is used.
    categorical_features
        indices of the categorical context columns (integer codes; -1 is
        missing), split as LightGBM categorical features; None (default): none. The booster
        sets it from the logs' schema (``LoggedBandit.from_dataframe``) when left None.
    row_sampling
        which rows grow a round's trees. "auto" (default): LightGBM's
        gradient-based one-side sampling (GOSS, a tenth of the rows by gradient and a tenth
        of the rest at random; each tree's leaves then set from every row) on stacked designs
        of at least ``opboost.lgbm.sampling.GOSS_MIN_CELLS`` designed cells (n*K
        rows x their columns) and ``GOSS_MIN_COLUMNS`` columns whose ``params`` set no
        sampling, column-wise; "none": every row; "goss": always, also the K trees a round
        of "per_action". The step is computed on every row either way; a sampled tree that splits on
        no action column (it would change no policy) is dropped, and that round and the rest
        grow on every row (``opboost.lgbm.sampling``).
    reward_start
        None (default): the reward-model start chooses its family on held-out logs, and the
        trees follow their held-out count (twice the number a held-out fit keeps at learning
        rate 0.1, at most 200) on 1,000 held-out rows or more
        (``opboost.algorithms.learners.lightgbm_reward_start``). Else
        ``{"family": F, "count": C}``: F "auto" (chosen so), "trees" or "linear+trees" (not
        chosen); C whether the trees follow the count at any number of held-out rows (True
        for "linear+trees", which always does). A Booster's refit on all the logs sets it
        to what its held-out fit did (``refit_params``).
    params
        extra LightGBM parameters (e.g. ``{"force_col_wise": True}`` to override
        ``histogram_layout``); may not set the objective, learning rate, boosting type,
        number of classes or a named parameter.

    Notes
    -----
    After ``prepare``: ``booster_`` (the LightGBM Booster), ``histogram_layout_``
    ("force_row_wise" or "force_col_wise"), ``row_sampling_`` ("goss" or "none", "none"
    too once a fit stopped sampling) and
    ``num_threads_`` (the rounds' threads); after
    ``start_from_rewards``: ``reward_start_`` (what the reward model chose, JSON-ready).
    """

    name: ClassVar[str] = "lightgbm_tree"
    reduction: ClassVar[str] = "regression"
    ensemble_class: ClassVar[type[Ensemble]] = LightGBMEnsemble
    supports_pairs: ClassVar[bool] = True
    accepts_missing: ClassVar[bool] = True  # NaN: LightGBM's missing value, routed per split
    _parameter_constraints: ClassVar[dict] = {
        **LIGHTGBM_TREE_CONSTRAINTS,
        "categorical_features": CATEGORICAL_FEATURES,
        "row_sampling": [Options(sampling_rules.ROW_SAMPLINGS)],
        "reward_start": [None, Satisfies(is_start_choice, START_CHOICE)],
    }

    def __init__(
        self,
        *,
        num_leaves: int = 31,
        max_depth: int = -1,
        min_data_in_leaf: int = 20,
        min_sum_hessian_in_leaf: float = 1e-3,
        lambda_l2: float = 0.0,
        feature_fraction: float = 1.0,
        max_bin: int = 255,
        num_threads: int | str = AUTO,
        hessian_units: str = "mean",
        action_design: str = "stacked",
        random_state: Any = None,
        categorical_features: list[int] | None = None,
        row_sampling: str = "auto",
        reward_start: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> None:
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_data_in_leaf = min_data_in_leaf
        self.min_sum_hessian_in_leaf = min_sum_hessian_in_leaf
        self.lambda_l2 = lambda_l2
        self.feature_fraction = feature_fraction
        self.max_bin = max_bin
        self.num_threads = num_threads
        self.hessian_units = hessian_units
        self.action_design = action_design
        self.random_state = random_state
        self.categorical_features = categorical_features
        self.row_sampling = row_sampling
        self.reward_start = reward_start
        self.params = params

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}

    # ----------------------------------------------------------------------------- setup
    def _lgb_params(self, seed: int) -> dict[str, Any]:
        """Validated LightGBM parameters for this fit (:func:`tree_params`)."""
        return tree_params(self, seed)

    def prepare(
        self,
        contexts: Any,
        n_actions: int,
        *,
        random_state: Any = None,
        init_scores: np.ndarray | None = None,
    ) -> None:
        """Build the LightGBM Dataset and Booster once; ``contexts`` (n, d) dense or CSR.

        ``init_scores`` (n, K) is accepted for the contract and only checked: the trees fit
        the targets each round carries, whatever the current scores are.
        """
        X, K = prepare_inputs(type(self).__name__, contexts, n_actions, init_scores, missing=True)
        n, d = X.shape
        seed = learner_seed(self.random_state, random_state)
        params = self._lgb_params(seed)
        design = self.action_design
        per_iter = 1
        categorical = categorical_columns(self.categorical_features, d)
        shape = sampling_rules.designed_shape(n, d, K, design)
        work = shape[0] * shape[1]
        self.num_threads_ = params["num_threads"] = lightgbm_threads(work, self.num_threads)
        sampling = sampling_rules.row_sampling_params(self.row_sampling, shape, design, self.params)
        self.row_sampling_ = "goss" if sampling else "none"
        if design == "per_action":
            params["num_class"] = K
            per_iter = K
            dataset = lgb.Dataset(
                missing_categories_as_nan(X, categorical),
                params=params,
                categorical_feature=categorical,
                free_raw_data=True,
            )
        else:
            dataset = stacked_dataset(X, K, design, params, categorical)
        # the rounds' sampling goes to their Booster only: the Dataset's parameters are also
        # the reward-model start's (lightgbm_reward_start.binning_params), which uses every row
        params.update({k: v for k, v in sampling.items() if k.startswith("force_")})
        if not {"force_col_wise", "force_row_wise"} & set(params):
            params[fit_layout(dataset, design, params)] = True
        self.histogram_layout_ = (
            "force_row_wise" if params.get("force_row_wise") else "force_col_wise"
        )
        self.booster_ = lgb.Booster({**params, **sampling}, dataset)
        self._empty_text = self.booster_.model_to_string()  # the model of no rounds
        self.n_actions_, self.n_features_, self.n_rows_ = K, d, n
        self._seed = seed
        self._per_iter = per_iter
        # gradient and hessian factors by action: the tilt on stacked rows (action_tilt)
        self._tilt = action_tilt(K) if per_iter == 1 else np.ones(K)
        self._scores = np.zeros(n * K)  # LightGBM's cached training scores, its layout
        self._next = None if per_iter == 1 else np.empty(n * K)  # class-major: fetched here
        self._pending = 0  # trees of a fitted but uncommitted round
        self._unscaled: list[tuple[int, float]] = []  # committed (first tree, alpha), unscaled
        self._last_alpha = 1.0
        self._designed = context_rows_cache(d, K, design)
        self._start_choice = None  # the reward-model start's (refit_params)
        self.n_rounds_ = 0
        self._view = None  # the slot view of a fit on candidate pairs (prepare_pairs)

    # ----------------------------------------------------------------------------- rounds
    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        """Grow the next tree on ``problem``; return its outputs on the training rows (n, K)."""
        booster = self._check_prepared()
        if self._pending:
            self._discard_pending()
        if self._view is not None:
            return self._fit_pairs_round(booster, problem)
        n, K = self.n_rows_, self.n_actions_
        sampled = self.row_sampling_ == "goss"
        # One n*K float64 buffer a round: the weights' scratch, then the float32 gradients
        # and hessians (its two halves), then, once LightGBM has grown the tree, the outputs.
        # A sampled tree's full-row leaves read the gradients after the outputs: they get
        # their own arrays, and the buffer is freed while LightGBM grows the tree.
        f = np.empty((n, K))
        grad, hess = (np.empty((2, n * K), np.float32) if sampled else
                      f.reshape(-1).view(np.float32).reshape(2, n * K))  # fmt: skip
        if self._per_iter == 1:  # example-major rows: the (n, K) layout as is
            rows = grad.reshape(n, K), hess.reshape(n, K)
        else:  # LightGBM multiclass layout is class-major (K, n)
            rows = grad.reshape(K, n).T, hess.reshape(K, n).T
        units = self.hessian_units
        fitted = wls_gradients(
            "LightGBMTree", problem, *rows, self._tilt, scratch=f, hessian_units=units
        )
        if sampled:
            del f
        if fitted:
            self._pending = update_one_iter(booster, grad, hess)
            if self._pending and self._sampled_without_actions():
                booster = self._stop_sampling()
                self._pending = update_one_iter(booster, grad, hess)
            self._grow_with_actions(grad, hess)
        if self._pending == 0:  # every weight 0, or no split: nothing was fitted
            return np.zeros((n, K))
        f = np.empty((n, K)) if sampled else f
        self._fetch_change(f)
        if sampled and self.row_sampling_ == "goss":  # the sample chose the splits only
            trees = self._per_iter  # (trees, rows): one stacked tree, or one per action
            outputs = f.reshape(-1, trees).T
            sampling_rules.use_full_row_leaves(
                booster, outputs, grad.reshape(trees, -1), hess.reshape(trees, -1)
            )
        return f

    def commit_round(self, alpha: float) -> None:
        """Commit the last round with weight ``alpha`` (its leaves are scaled when the model is
        read); alpha 0 removes the round."""
        booster = self._check_prepared()
        alpha = float(alpha)
        if not np.isfinite(alpha):
            raise InvalidParameterError(
                f"LightGBMTree.commit_round: alpha must be finite; got {alpha!r}."
            )
        if not self._pending:
            return
        if alpha == 0.0:
            self._discard_pending()
            return
        self._commit_leaves(booster.num_trees() - self._pending, alpha)  # scaled when read
        self._pending = 0
        self._last_alpha = alpha
        self.n_rounds_ += 1

    def ensemble(self) -> LightGBMEnsemble:
        """A detached copy of the committed rounds (an uncommitted round is left out)."""
        booster = self._check_prepared()
        self._scale_committed()
        iterations = booster.num_trees() // self._per_iter - (1 if self._pending else 0)
        if iterations > 0:
            text = booster.model_to_string(num_iteration=iterations)
        else:  # LightGBM reads num_iteration=0 as "all"
            text = self._empty_text
        if self._view is not None:
            return self._pairs_ensemble(text)
        return LightGBMEnsemble(
            lgb.Booster(model_str=text),
            n_actions=self.n_actions_,
            action_design=self.action_design,
            n_features=self.n_features_,
            n_rounds=self.n_rounds_,
        )

    def predict_round(self, X: Any) -> np.ndarray:
        """The last committed f_t (without its alpha) on new contexts X (m, d): (m, K)."""
        booster = self._check_prepared()
        if self.n_rounds_ == 0:
            raise InvalidParameterError("LightGBMTree.predict_round: no round committed yet.")
        last = booster.num_trees() // self._per_iter - 1 - (1 if self._pending else 0)
        # Pass num_threads: a predict without it resets LightGBM's OpenMP threads to all
        # cores, and the next rounds' updates then spin (20x slower measured on 2 busy cores).
        threads = {"num_threads": self.num_threads_}
        if isinstance(X, PairRows):  # other rows' candidate pairs: an (n', C') slot matrix
            self._scale_committed()
            return self._predict_pairs_round(booster, X, last, threads)
        rows = self._designed.rows(X)
        out = booster.predict(
            rows, start_iteration=last, num_iteration=1, raw_score=True, **threads
        )
        return self._last_round_outputs(np.asarray(out).reshape(-1, self.n_actions_))

    def warm_start(self, ensemble: Ensemble) -> None:
        """Continue from ``ensemble``'s rounds (resuming a checkpointed fit); after prepare."""
        booster = self._check_prepared()
        ok = (
            isinstance(ensemble, LightGBMEnsemble)
            and ensemble.action_design == self.action_design
            and ensemble.n_actions == self.n_actions_
            and ensemble.n_features == self.n_features_
        )
        if not ok or booster.num_trees() or self.n_rounds_:
            raise InvalidParameterError(
                f"LightGBMTree cannot continue from {ensemble!r}: call it right after prepare, "
                f"with a LightGBMEnsemble of action_design={self.action_design!r}, "
                f"K={self.n_actions_} and d={self.n_features_}."
            )
        merge_in_front(booster, ensemble.booster)
        self.n_rounds_ = ensemble.n_rounds
        self._last_alpha = 1.0

    # ----------------------------------------------------------------------------- helpers
    def _check_prepared(self) -> lgb.Booster:
        booster = getattr(self, "booster_", None) or self._pair_booster_on_first_use()
        if booster is None:
            raise InvalidParameterError(
                "LightGBMTree: call prepare(contexts, n_actions) before fitting rounds."
            )
        return booster
