"""The reward-model start of a LightGBM policy: F_0 = s q(x, a), q a reward model chosen on
held-out logs.

``Booster(warm_start="reward_model")`` starts boosting at the direct-method policy. For
``lightgbm_tree`` the reward model itself becomes the ensemble's first members, scaled by
s = 1 / tau, so F_0 IS the reward model (no distillation). Two families of reward model are
fitted on the logged rows [x_i; a_i] -> r_i of a training part of the logs (80%), each with
early stopping on the squared error of the rest, and compared there (:func:`choose_family`):

``"trees"``          LightGBM least squares;
``"linear+trees"``   a per-action ridge model (:mod:`opboost.algorithms.learners.linear_reward`;
                     text, one-hot and pixel data, where trees need many splits for what a linear
                     model says at once), then LightGBM trees on its residuals.

The held-out fits that choose use :data:`SELECTION_PARAMS` (learning rate 0.1: half the trees
of the final settings, at most :data:`HELD_OUT_TREES`). If the trees win, the reward model is
LightGBM with the ``reward_regression`` policy learner's settings (:data:`REWARD_MODEL_PARAMS`:
200 trees at learning rate 0.05, 31 leaves) on every logged row, the start the linear family
was added to; with at least :data:`MIN_HOLDOUT_ROWS_FOR_COUNT` held-out rows, twice the
held-out number of trees instead, at most :data:`MOST_COUNTED_TREES` (noisy logs stop early: 9
trees at learning rate 0.1 on tuning world 26, and 200 cost time without value; rich large logs
go on: 200 trees left 0.06 to 0.10 of value on tuning worlds 4 and 7 at 100,000 rows, and
0.037 on letter). If the linear family wins, it is refitted on every
logged row: the ridge model, then twice its held-out number of trees at learning rate 0.05 on
its residuals (they are few when it wins); the linear part enters the ensemble as one LightGBM
tree with linear leaves (:mod:`opboost.algorithms.learners.lightgbm_linear_tree`). Without the
linear family (one action, every numeric column with missing values ...) or with too few rows to
hold any out there is no held-out fit: 200 trees on every row. docs/benchmarks/defaults.md has
the measurements behind every choice here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
import scipy.sparse as sp
from lightgbm.basic import _ConfigAliases
from threadpoolctl import threadpool_limits

from opboost.algorithms.learners.lightgbm_linear_tree import linear_tree_model
from opboost.algorithms.learners.linear_reward import LinearRewards, fit_linear_rewards
from opboost.api.numerics.design import action_rows
from opboost.lgbm.action_trees import per_action_model
from opboost.lgbm.layout import fetch_scores, merge_in_front
from opboost.lgbm.rows import design_rows, missing_categories_as_nan
from opboost.lgbm.threads import lightgbm_threads

__all__ = [
    "FAMILIES",
    "MIN_HOLDOUT_ROWS_FOR_COUNT",
    "REWARD_MODEL_PARAMS",
    "START_CHOICE",
    "LoggedRows",
    "RewardModel",
    "action_split_params",
    "binning_params",
    "choose_family",
    "fit_reward_model",
    "is_start_choice",
    "merge_in_front",
    "refit_choice",
    "scale_leaves",
    "thread_params",
]

#: LightGBM settings of the "trees" reward model (those of ``RewardRegression``'s defaults;
#: ``num_iterations`` is the most: after a held-out fit, twice its count).
REWARD_MODEL_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "num_iterations": 200,
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "verbose": -1,
    # the same model whatever the thread count (LightGBM then sums in one order)
    "deterministic": True,
}
#: Most trees of a held-out fit (learning rate 0.1). 150 capped the count where the logs had
#: more to give (docs/benchmarks/defaults.md, "The counted start grows past 200 trees").
HELD_OUT_TREES = 400
#: Most trees of a start whose trees follow their held-out count (twice the count, at learning
#: rate 0.05).
MOST_COUNTED_TREES = 2 * HELD_OUT_TREES
#: LightGBM settings of the held-out fits of both families: at most :data:`HELD_OUT_TREES` trees
#: at learning rate 0.1, stopped after 10 without a lower held-out squared error.
SELECTION_PARAMS: dict[str, Any] = {
    **REWARD_MODEL_PARAMS,
    "num_iterations": HELD_OUT_TREES,
    "learning_rate": 0.1,
    "metric": "l2",
}
STOPPING_ROUNDS = 10
#: Fewest held-out rows whose early-stopping count the final trees follow (twice it, at most
#: :data:`MOST_COUNTED_TREES`): a count read off fewer rows is too noisy to cut the trees by.
#: On letter@2000 (26 actions, 200-250 held-out rows) the count left 0.09 of the policy's 0.17
#: with 200 trees.
MIN_HOLDOUT_ROWS_FOR_COUNT = 1_000
#: The linear family's held-out fit stops at this many trees if its held-out squared error is
#: still above the trees' best: more trees make it more like the trees' fit, not better.
RACE_TREES = 20
#: Share of the logged rows held out to choose the reward model.
HOLDOUT_FRACTION = 0.2
#: Fewest held-out rows for a choice; with fewer, the trees are fitted on all rows.
MIN_HOLDOUT_ROWS = 20
#: Most context columns of the linear family (its Gram matrix is d x d).
MAX_LINEAR_FEATURES = 4096
#: Largest |context value| the linear family reads: its Gram matrix sums squares over the
#: rows, which overflow float64 near 1e154 (contexts scaled to 1e300 gave LinAlgError).
MAX_LINEAR_VALUE = 1e100
#: z of the paired test by which the linear family must beat the trees on held-out squared
#: error to be chosen (1.96: a two-sided 5% test); measured in docs/benchmarks/defaults.md.
CLEAR_GAIN_SE = 1.96
#: Contexts predicted per call when evaluating q on every training pair (bounds the designed
#: rows held at once to this many contexts times K).
_PREDICT_CHUNK = 20_000


#: The families of reward model the start chooses between.
FAMILIES = ("trees", "linear+trees")
#: What ``LightGBMTree(reward_start=...)`` takes (:func:`is_start_choice`).
START_CHOICE = (
    'a dict {"family": "auto" or "trees", "count": true or false} or {"family": '
    '"linear+trees", "count": true}'
)


def is_start_choice(value: Any) -> bool:
    """Whether ``value`` is a choice :func:`fit_reward_model` can repeat (:data:`START_CHOICE`;
    the linear family always follows its count)."""
    if not isinstance(value, dict) or set(value) != {"family", "count"}:
        return False
    if not isinstance(value["count"], bool) or value["family"] not in ("auto", *FAMILIES):
        return False
    return value["family"] != "linear+trees" or value["count"]


@dataclass
class RewardModel:
    """A fitted reward model q = linear (when present) + trees, and q (n, K) on the training
    contexts. ``report`` (JSON-ready) says what was chosen and why."""

    trees: lgb.Booster
    linear: LinearRewards | None
    q: np.ndarray
    report: dict[str, Any]

    def start_model(self, factor: float, per_action_header: str | None = None) -> lgb.Booster:
        """The model of ``factor`` q: the trees with their leaves scaled, the scaled linear
        tree (if any) in front of them. With ``per_action_header`` (the model text of an empty
        ``num_class=K`` booster on the contexts) the same q as per-action trees, each stacked
        tree read once per action (:func:`opboost.lgbm.action_trees.per_action_model`)."""
        model = scale_leaves(self.trees, factor)
        design, header = self.report["design"], per_action_header
        if header is not None:
            model = per_action_model(model, design, header)
            design = "per_action"
        if self.linear is not None:
            weights, intercepts = self.linear.weights * factor, self.linear.intercepts * factor
            header = header or model.model_to_string(num_iteration=1)
            merge_in_front(model, linear_tree_model(weights, intercepts, design, header))
        return model


def linear_family_problem(X: Any, n_actions: int, categorical: Any) -> str | None:
    """Why the linear family cannot be fitted on contexts ``X`` (None: it can)."""
    if n_actions < 2:
        return "one action"
    if X.shape[1] > MAX_LINEAR_FEATURES:
        return f"more than {MAX_LINEAR_FEATURES} context columns"
    if categorical != "auto" and len(categorical) >= X.shape[1]:
        return "no numeric context column"
    values = X.data if sp.issparse(X) else X
    if np.isinf(values).any():
        return "infinite context values"
    if not len(_linear_columns(X, categorical)):
        return "every numeric context column has missing values"
    largest = float(np.nanmax(np.abs(values), initial=0.0))
    if largest > MAX_LINEAR_VALUE:
        return (
            f"context values up to {largest:.3g}, above {MAX_LINEAR_VALUE:.0e} (squares overflow)"
        )
    return None


def _has_missing(X: Any) -> bool:
    """Whether the (finite or NaN) contexts ``X`` hold a NaN: one sum, no temporary, unless the
    sum is NaN without one (values near 1e308 of both signs overflow to inf - inf), which a
    second, exact pass then tells apart, without numpy's overflow warnings."""
    values = X.data if sp.issparse(X) else X
    with np.errstate(over="ignore", invalid="ignore"):
        total = values.sum()
    return bool(np.isnan(total)) and bool(np.isnan(values).any())


def _linear_columns(X: Any, categorical: Any) -> np.ndarray:
    """The context columns the linear family reads: the numeric ones (not the categorical
    codes) without missing values (NaN), which only the trees route."""
    skip = set() if categorical == "auto" else set(categorical)
    if _has_missing(X):
        missing = X.indices[np.isnan(X.data)] if sp.issparse(X) else np.isnan(X).any(axis=0)
        skip.update((missing if sp.issparse(X) else np.flatnonzero(missing)).tolist())
    return np.array([j for j in range(X.shape[1]) if j not in skip], dtype=np.intp)


def binning_params(pairs: lgb.Dataset, params: dict) -> dict:
    """The Dataset parameters of ``pairs`` but its categorical columns (set per Dataset): a
    Dataset binned as ``pairs`` takes them (LightGBM warns on any other); with the thread
    count of ``params``: a Dataset built without one resets LightGBM's process-wide OpenMP
    threads to every core, and the policy's rounds that follow then spin on a busy machine
    (a 10k-row catalogue start took 50 s instead of 2)."""
    aliases = _ConfigAliases.get("categorical_feature")
    binning = {k: v for k, v in pairs.get_params().items() if k not in aliases}
    return {**binning, **thread_params(params)}


def thread_params(params: dict) -> dict:
    # A predict without num_threads resets LightGBM's process-wide OpenMP threads to every
    # core, and the policy's rounds that follow would then spin on a busy machine.
    return {"num_threads": params["num_threads"]} if params.get("num_threads") else {}


@dataclass
class LoggedRows:
    """The designed logged rows [x_i; a_i] (n, .), their rewards (n,), the scores the trees
    start from (n,) or None (LightGBM starts from the mean reward), the categorical columns
    and the policy's Dataset of every designed pair (n*K rows, or None): its bins are the
    reward model's, and the final trees' scores on it are q on every pair."""

    rows: Any
    rewards: np.ndarray
    start: np.ndarray | None
    categorical: list
    pairs: lgb.Dataset | None = None

    def dataset(self, mask: np.ndarray | None, params: dict) -> lgb.Dataset:
        """The LightGBM Dataset of the rows of ``mask`` (None: every row), binned as the
        policy's pairs when there are any."""
        rows, rewards, start = (self.rows, self.rewards, self.start) if mask is None else (
            self.part(mask))  # fmt: skip
        if self.pairs is None:  # binned on its own (with the pairs, by their bins)
            rows = missing_categories_as_nan(rows, self.categorical)
        return lgb.Dataset(
            rows,
            rewards,
            init_score=start,
            reference=self.pairs,
            feature_name=[f"Column_{j}" for j in range(rows.shape[1])],
            categorical_feature=self.categorical,
            params=params if self.pairs is None else binning_params(self.pairs, params),
            free_raw_data=mask is None,
        )

    def part(self, mask: np.ndarray) -> tuple:
        start = None if self.start is None else self.start[mask]
        return self.rows[mask], self.rewards[mask], start


def _reward_trees(
    params: dict, data: LoggedRows, score_pairs: bool = True
) -> tuple[lgb.Booster, np.ndarray | None]:
    """LightGBM trees on every logged row, from ``data.start`` (None: the mean reward), and
    their scores on the policy's pairs ((n*K,), None without ``data.pairs`` or
    ``score_pairs``): LightGBM adds each new tree to the scores of its validation data on the
    binned rows, far cheaper than predicting every pair afterwards, but still most of the
    fit's time (n*K rows a tree)."""
    model = lgb.Booster(dict(params, metric="None"), data.dataset(None, params))
    score_pairs = score_pairs and data.pairs is not None
    if score_pairs:
        model.add_valid(data.pairs, "pairs")
    for _ in range(params["num_iterations"]):
        model.update()
    if not score_pairs:
        return model, None
    scores = np.empty(data.pairs.num_data())
    fetch_scores(model, scores, data_idx=1)
    return model, scores


class _HeldOutStop:
    """LightGBM callback: stop after :data:`STOPPING_ROUNDS` trees without a lower held-out
    squared error, or at :data:`RACE_TREES` trees while the best error so far is above
    ``target`` (None: no race). ``best`` is (0-based iteration, LightGBM's evaluation list)
    of the lowest error so far."""

    order = 30

    def __init__(self, target: float | None) -> None:
        self.target, self.best = target, (0, [])

    def __call__(self, env: Any) -> None:
        score = env.evaluation_result_list[0]
        if not self.best[1] or score[2] < self.best[1][0][2]:
            self.best = (env.iteration, [score])
        stalled = env.iteration - self.best[0] >= STOPPING_ROUNDS
        behind = self.target is not None and self.best[1][0][2] > self.target
        if stalled or (behind and env.iteration + 1 >= RACE_TREES):
            raise lgb.callback.EarlyStopException(*self.best)


def _held_out_fit(params, data: LoggedRows, train, held, target: float | None = None) -> tuple:
    """LightGBM trees on the ``train`` rows, stopped on the squared error of the ``held``
    rows (:class:`_HeldOutStop`): (best number of trees, held-out errors (n_held,))."""
    fit_set = data.dataset(train, params)
    rows, rewards, start = data.part(held)
    held_set = lgb.Dataset(
        rows, rewards, init_score=start, reference=fit_set, params=binning_params(fit_set, params)
    )
    stop = _HeldOutStop(target)
    model = lgb.train(params, fit_set, valid_sets=[held_set], callbacks=[stop])
    best = stop.best[0] + 1  # LightGBM leaves best_iteration 0 when no stop was raised
    predicted = model.predict(rows, num_iteration=best, **thread_params(params))
    return best, rewards - (0.0 if start is None else start) - predicted


def choose_family(errors: dict[str, np.ndarray]) -> str:
    """The family to use from each family's held-out errors (n_held,): "linear+trees" when
    its squared errors are below those of "trees" by more than :data:`CLEAR_GAIN_SE`
    standard errors of the paired difference (a paired z-test on the same held-out rows),
    else "trees". The trees stay unless the logs clearly say otherwise: a lower mean error
    alone picked the linear family on letter, and the policy lost there."""
    gain = errors["trees"] ** 2 - errors["linear+trees"] ** 2
    se = gain.std(ddof=1) / np.sqrt(len(gain))
    return "linear+trees" if gain.mean() > CLEAR_GAIN_SE * se else "trees"


def fit_reward_model(
    X: Any,
    actions: np.ndarray,
    rewards: np.ndarray,
    n_actions: int,
    design: str,
    categorical: Any,
    seed: int,
    num_threads: int | str,
    *,
    pairs: lgb.Dataset | None = None,
    repeat: dict[str, Any] | None = None,
    q_sample: int | None = None,
) -> RewardModel:
    """The reward model of the module doc on contexts ``X`` (n, d), ``actions`` and
    ``rewards`` (n,). ``design`` is the policy's "stacked" (action as one categorical column)
    or "stacked_onehot"; ``categorical`` the context columns LightGBM treats as categorical
    (a list, or "auto" for none). ``num_threads``: "auto" (chosen by the logged rows' size,
    :func:`opboost.lgbm.threads.lightgbm_threads`) or a count, 0 meaning LightGBM's (and BLAS's)
    default.
    ``pairs``: the policy's constructed Dataset of the n*K designed rows of ``X``
    (example-major), whose bins the reward model then uses; q on the pairs comes from it.
    ``repeat``: ``{"family": ..., "count": ...}``, what to fit instead of the rule above:
    the family ("auto": chosen on held-out rows as above; "trees" or "linear+trees": that
    one, fitted alone on the held-out rows for its count), and whether the trees family
    follows its held-out count (``count``) whatever the number of held-out rows.
    :func:`refit_choice` of a fit's report is what a refit on every logged row repeats.
    ``q_sample``: None, q (n, K) on every training pair; m, for a fit that ends at its start
    and needs q only for its scale: q on at most m contexts drawn at random (every one when
    n <= m), and the n*K pairs are not scored.

    LightGBM's "categorical_column in param dict is overridden" warnings are silenced: these
    Datasets take their bins, categorical ones included, from ``pairs`` (or their own rows),
    whatever the parameters they inherit say."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "categorical_.* in param dict is overridden")
        return _fit_reward_model(X, actions, rewards, n_actions, design, categorical, seed,
                                 num_threads, pairs, repeat, q_sample)  # fmt: skip


def refit_choice(report: dict[str, Any]) -> dict[str, Any]:
    """What a refit on every logged row repeats of a fit's reward model (its ``report``), as
    :func:`fit_reward_model`'s ``repeat`` takes it: whether the trees follow the held-out
    count. Logs of 5,000 to 6,250 rows hold out 1,000 in a refit on every row, but fewer on
    the 80% the booster's rounds were judged on: chosen again, the refitted start would not
    be the one judged (tabular_1026 lost 0.05 to it, docs/benchmarks/defaults.md). The family
    is chosen again, on more rows: repeating it cost 0.025 on tuning world 10."""
    return {"family": "auto", "count": bool(report["trees_follow_count"])}


def _fit_reward_model(X, actions, rewards, n_actions, design, categorical, seed, num_threads,
                      pairs, repeat, q_sample) -> RewardModel:  # fmt: skip
    """:func:`fit_reward_model`'s work: the held-out choice, then the refit of the winner."""
    n, d = X.shape
    onehot = design == "stacked_onehot"
    context_columns = [] if categorical == "auto" else list(categorical)
    data = LoggedRows(
        action_rows(X, actions, n_actions, action_encoding="onehot" if onehot else "index"),
        np.asarray(rewards, dtype=np.float64),
        None,
        context_columns if onehot else [*context_columns, d],
        pairs,
    )
    num_threads = lightgbm_threads(data.rows.shape[0] * data.rows.shape[1], num_threads)
    splits = action_split_params(n_actions)
    params = dict(REWARD_MODEL_PARAMS, seed=seed, num_threads=num_threads, **splits)
    n_held = round(HOLDOUT_FRACTION * n)
    problem = linear_family_problem(X, n_actions, categorical)
    report: dict[str, Any] = {"design": design, "family": "trees", "linear_skipped": problem}
    report["trees_follow_count"] = False
    if repeat is not None:
        report["repeated"] = dict(repeat)
    if problem is None and n_held < MIN_HOLDOUT_ROWS:
        report["linear_skipped"] = f"fewer than {MIN_HOLDOUT_ROWS} rows to hold out"

    def finish(linear: LinearRewards | None) -> RewardModel:
        """The final trees on every row (after ``linear``, when given), q on the contexts."""
        trees = _reward_trees(params, data, score_pairs=q_sample is None)
        return _finish(*trees, linear, _q_contexts(X, q_sample, seed), n_actions, params, report)

    wanted = _held_out_families(repeat, report["linear_skipped"] is None, n_held)
    if wanted:
        held = np.zeros(n, dtype=bool)
        held[np.random.default_rng(seed).permutation(n)[:n_held]] = True
        select = dict(SELECTION_PARAMS, num_iterations=HELD_OUT_TREES, seed=seed,
                      num_threads=num_threads, **splits)  # fmt: skip
        counts, errors = {}, {}
        if "trees" in wanted:
            counts["trees"], errors["trees"] = _held_out_fit(select, data, ~held, held)
        if "linear+trees" in wanted:
            linear = _fit_linear(X, actions, data.rewards, n_actions, categorical, ~held,
                                 num_threads)  # fmt: skip
            data.start = linear.predict(X)[np.arange(n), actions]
            target = float(np.mean(errors["trees"] ** 2)) if errors else None
            counts["linear+trees"], errors["linear+trees"] = _held_out_fit(
                select, data, ~held, held, target
            )
        report["family"] = choose_family(errors) if len(wanted) == 2 else wanted[0]
        follow = n_held >= MIN_HOLDOUT_ROWS_FOR_COUNT if repeat is None else repeat["count"]
        report.update(
            holdout_rows=n_held,
            holdout_mse={name: float(np.mean(e**2)) for name, e in errors.items()},
            holdout_trees=counts,
            trees_follow_count=bool(follow),
        )
        if report["family"] == "linear+trees":  # refitted on every row, as the trees are
            every = np.ones(n, dtype=bool)
            linear = _fit_linear(
                X, actions, data.rewards, n_actions, categorical, every, num_threads
            )
            data.start = linear.predict(X)[np.arange(n), actions]
            params["num_iterations"] = 2 * counts["linear+trees"]  # the count at half the rate
            return finish(linear)
        if report["trees_follow_count"]:  # the held-out count at half the rate
            params["num_iterations"] = min(MOST_COUNTED_TREES, 2 * counts["trees"])
    data.start = None
    return finish(None)


def _q_contexts(X: Any, q_sample: int | None, seed: int) -> Any:
    """The contexts q is computed on (:func:`fit_reward_model`'s ``q_sample``)."""
    n = X.shape[0]
    if q_sample is None or n <= q_sample:
        return X
    return X[np.sort(np.random.default_rng(seed).choice(n, q_sample, replace=False))]


def _held_out_families(repeat: dict | None, linear_ok: bool, n_held: int) -> tuple[str, ...]:
    """The families to fit on the held-out split: both to choose (none without the linear
    family: the trees then take 200 trees); with ``repeat`` of one family, that one alone,
    for its count (none when it follows no count, or with too few rows to hold out)."""
    if repeat is None or repeat["family"] == "auto":
        return FAMILIES if linear_ok else ()
    if repeat["family"] == "linear+trees" and linear_ok:
        return ("linear+trees",)
    return ("trees",) if repeat["count"] and n_held >= MIN_HOLDOUT_ROWS else ()


def action_split_params(n_actions: int) -> dict[str, int]:
    """LightGBM settings under which a tree splits the categorical action column of the
    stacked rows as it would K one-hot columns: one category against the rest for up to
    max(64, ``n_actions``) categories (the context's categorical columns alike), and a group of
    20 rows (``min_data_in_leaf``) enough to split off. Under LightGBM's defaults (4 categories,
    100 rows a group) actions logged fewer than 100 times stayed unsplit, and on small or skewed
    logs the start fell below reward regression on [x; onehot(a)]: on the tuning worlds 12 and 14
    of ``examples/benchmarks/_bench_tabular.py``, seeds 0-2, 0.47 and 0.81 against 0.51 and 0.92;
    0.53 and 0.97 with these (docs/benchmarks/defaults.md)."""
    return {"max_cat_to_onehot": max(64, int(n_actions)), "min_data_per_group": 20}


def _fit_linear(X, actions, rewards, n_actions, categorical, rows, num_threads) -> LinearRewards:
    """The linear family on the ``rows`` (mask) and the numeric columns of ``X``, with
    weights (d, K) that are exactly 0 on the categorical columns."""
    columns = _linear_columns(X, categorical)
    part = X[rows][:, columns]
    with threadpool_limits(limits=num_threads or None):  # BLAS threads as LightGBM's
        fitted = fit_linear_rewards(part, actions[rows], rewards[rows], n_actions)
    weights = np.zeros((X.shape[1], n_actions))
    weights[columns] = fitted.weights
    read = columns if _has_missing(X) else None  # NaN * 0 is NaN: read only these
    return LinearRewards(weights, fitted.intercepts, fitted.alphas, read)


def _finish(trees, scores, linear, X, n_actions, params, report) -> RewardModel:
    """The RewardModel of ``trees`` (and ``linear``), with q on the contexts ``X`` (m, d): the
    trees' ``scores`` on their pairs (m*K,), or their predictions when None."""
    report["trees"] = trees.num_trees()
    n = X.shape[0]
    if scores is not None:
        q = scores.reshape(n, n_actions)
    else:
        q = np.empty((n, n_actions))
        for start in range(0, n, _PREDICT_CHUNK):
            part = X[start : start + _PREDICT_CHUNK]
            pairs = design_rows(part, n_actions, report["design"])
            q[start : start + part.shape[0]] = np.asarray(
                trees.predict(pairs, raw_score=True, **thread_params(params))
            ).reshape(-1, n_actions)
    if linear is not None:
        q += linear.predict(X)
    return RewardModel(trees, linear, q, report)


def scale_leaves(model: lgb.Booster, factor: float) -> lgb.Booster:
    """A new model: ``model`` with every leaf output multiplied by ``factor`` (its trees must
    not be linear). Rewrites the model text once (the ``tree_sizes`` index goes: LightGBM then
    reads the trees in order), which is several times faster than ``set_leaf_output`` on every
    leaf; each output is the same double ``set_leaf_output(value * factor)`` would store."""
    lines = model.model_to_string().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("leaf_value="):
            values = [float(v) * factor for v in line[len("leaf_value=") :].split()]
            lines[i] = "leaf_value=" + " ".join(map(repr, values))
    text = "\n".join(line for line in lines if not line.startswith("tree_sizes="))
    return lgb.Booster(model_str=text + "\n")
