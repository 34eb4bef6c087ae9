"""XGBoost regression trees as an opboost base learner, and the XGBoost-JSON ensemble they build.

``XGBoostTree`` (kind "base_learner", name "xgboost_tree", regression reduction) grows one
XGBoost regression tree per boosting round, as the "-regr" variants of BOPL and BOPL-S do in
London et al. (2023, appendix G: "XGBoost as the base learner, configured to fit a single
regression tree using the 'exact' splitting algorithm"). ``tree_method`` "hist" is offered too.

Weighted least squares through a custom objective: gradient ``-w*y``, hessian ``w``, learning
rate 1 and ``base_score`` 0 make every leaf ``sum(w*y) / (sum(w) + reg_lambda)``, the weighted
mean of its targets when ``reg_lambda`` is 0 (for squared error XGBoost's second-order step is
exact). Weights are rescaled to mean 1 over their nonzero entries, so ``min_child_weight`` and
``reg_lambda`` are in units of "average rows" whatever the objective's weight scale.

Action design: the paper's stacked ``[x; onehot(a)]`` rows, example-major (row ``i*K + a`` is
context i with action a), shape (n*K, d+K), built once in ``prepare``. Dense contexts give
dense rows (zeros are values); CSR contexts give CSR rows whose absent entries XGBoost treats
as missing, and the ensemble records which, so prediction always uses the training convention.

Round weights: the custom objective never reads XGBoost's own margins, so the fitting booster
keeps every tree at its fitted scale and the learner records each round's alpha (a round
refitted before its commit, or committed with alpha 0, gets alpha 0). ``ensemble()`` writes a
new XGBoost model in which the leaves of tree t are multiplied by alpha_t and the alpha-0
trees are left out: an ordinary XGBoost model whose own ``predict(..., output_margin=True)``
is F(x) = sum_t alpha_t f_t(x), with no wrapper arithmetic.

:class:`XGBoostEnsemble` serialises as one JSON header line followed by XGBoost's JSON model
text (format "xgboost_json_v1"); XGBoost writes its float32 leaves in round-trip precision,
so predictions after ``loads`` are bit-identical. Nothing is pickled.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
import xgboost as xgb

from opboost.api import (
    HESSIAN_UNITS,
    BaseLearner,
    BaseProblem,
    Ensemble,
    Interval,
    InvalidParameterError,
    Options,
    as_contexts,
    dumps_checked,
    learner_seed,
    loads_checked,
    prepare_inputs,
    stacked_design,
    wls_terms,
)

__all__ = ["FORMAT", "TREE_METHODS", "XGBoostEnsemble", "XGBoostTree"]

FORMAT = "xgboost_json_v1"
TREE_METHODS = ("exact", "hist")
_PREDICT_CHUNK = 1 << 14  # contexts expanded to stacked rows at a time when predicting


def _stacked(X: Any, n_actions: int, sparse: bool) -> Any:
    """The stacked rows [x_i; onehot(a)] of contexts X (m, d): (m*K, d+K), row i*K + a.

    ``sparse`` gives a CSR matrix without explicit zeros (absent = missing for XGBoost),
    else a dense float32 array (zeros are values).
    """
    if sparse:
        out = stacked_design(sp.csr_matrix(X), n_actions, dtype=np.float32)
        out.eliminate_zeros()
        return out
    dense = X.toarray() if sp.issparse(X) else X
    return stacked_design(dense, n_actions, dtype=np.float32)


def _scaled_model(booster: xgb.Booster, alphas: list[float], nthread: int) -> xgb.Booster:
    """A new booster holding tree t with its leaves times ``alphas[t]``; alpha-0 trees dropped.

    ``alphas`` has one entry per tree of ``booster`` (one tree per round).
    """
    raw = json.loads(booster.save_raw("json"))
    model = raw["learner"]["gradient_booster"]["model"]
    trees = []
    for index, alpha in enumerate(alphas):
        if alpha == 0.0:
            continue
        tree = model["trees"][index]
        leaf = [left == -1 for left in tree["left_children"]]
        # A leaf's output is its split_conditions entry; base_weights hold every node's
        # weight (used for contributions). Both scale with the tree.
        tree["split_conditions"] = [
            alpha * v if is_leaf else v
            for v, is_leaf in zip(tree["split_conditions"], leaf, strict=True)
        ]
        tree["base_weights"] = [alpha * v for v in tree["base_weights"]]
        tree["id"] = len(trees)
        trees.append(tree)
    model["trees"] = trees
    model["tree_info"] = [0] * len(trees)
    model["iteration_indptr"] = list(range(len(trees) + 1))
    model["gbtree_model_param"]["num_trees"] = str(len(trees))
    out = xgb.Booster(model_file=bytearray(json.dumps(raw).encode()))
    out.set_param({"nthread": nthread})
    return out


class XGBoostEnsemble(Ensemble):
    """F(x) = sum_t alpha_t f_t(x) as one XGBoost model over stacked [x; onehot(a)] rows.

    ``decision_function(X)`` for (m, d) contexts (dense or CSR) returns (m, K) scores;
    ``booster`` is a plain ``xgboost.Booster`` that predicts F natively on the stacked rows.
    ``sparse`` records whether the trees were fitted on CSR rows (absent entries missing).
    """

    format: ClassVar[str] = FORMAT

    def __init__(
        self,
        booster: xgb.Booster,
        *,
        n_actions: int,
        n_features: int,
        n_rounds: int,
        sparse: bool,
        nthread: int = 1,
    ) -> None:
        self.booster = booster
        self.n_actions = n_actions
        self.n_features = n_features
        self.n_rounds = n_rounds
        self.sparse = sparse
        self.booster.set_param({"nthread": nthread})

    def _chunks(self, X: Any) -> Iterator[tuple[int, int, xgb.DMatrix]]:
        X = as_contexts(X, self.n_features, dtype=np.float32)
        for start in range(0, X.shape[0], _PREDICT_CHUNK):
            stop = min(start + _PREDICT_CHUNK, X.shape[0])
            rows = _stacked(X[start:stop], self.n_actions, self.sparse)
            yield start, stop, xgb.DMatrix(rows, nthread=1)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores F(X), shape (m, K)."""
        m = X.shape[0]
        out = np.zeros((m, self.n_actions))
        if self.n_rounds == 0:
            as_contexts(X, self.n_features, dtype=np.float32)
            return out
        for start, stop, dm in self._chunks(X):
            margin = self.booster.predict(dm, output_margin=True)
            out[start:stop] = margin.reshape(stop - start, self.n_actions)
        return out

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Yield F after rounds 1..n_rounds on X, each (m, K); the last is decision_function."""
        chunks = list(self._chunks(X))
        for t in range(self.n_rounds):
            out = np.zeros((X.shape[0], self.n_actions))
            for start, stop, dm in chunks:
                margin = self.booster.predict(dm, output_margin=True, iteration_range=(0, t + 1))
                out[start:stop] = margin.reshape(stop - start, self.n_actions)
            yield out

    def dumps(self) -> str:
        """One JSON header line (with the model text's SHA-256), then XGBoost's JSON model."""
        header = {
            "n_actions": self.n_actions,
            "n_features": self.n_features,
            "n_rounds": self.n_rounds,
            "sparse": self.sparse,
        }
        return dumps_checked(FORMAT, header, self.booster.save_raw("json").decode())

    @classmethod
    def loads(cls, text: str) -> XGBoostEnsemble:
        """Inverse of :meth:`dumps`; raises ValueError on foreign or corrupted text."""
        header, model = loads_checked(text, FORMAT, cls.__name__)
        first = json.dumps(header)
        K, d, rounds = header.get("n_actions"), header.get("n_features"), header.get("n_rounds")
        ints_ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (K, d, rounds))
        sparse_ok = isinstance(header.get("sparse"), bool)
        if not ints_ok or not sparse_ok or K < 2 or d < 0 or rounds < 0:
            raise ValueError(f"Corrupted {FORMAT} header: {first[:200]!r}.")
        try:
            booster = xgb.Booster(model_file=bytearray(model.encode()))
        except xgb.core.XGBoostError as exc:
            raise ValueError(
                f"Corrupted {FORMAT} text: XGBoost could not parse it ({exc})."
            ) from exc
        if booster.num_features() != d + K or booster.num_boosted_rounds() != rounds:
            raise ValueError(
                f"Corrupted {FORMAT} text: the header says d={d}, K={K} ({d + K} columns) and "
                f"{rounds} rounds but the model has {booster.num_features()} columns and "
                f"{booster.num_boosted_rounds()} rounds."
            )
        return cls(booster, n_actions=K, n_features=d, n_rounds=rounds, sparse=header["sparse"])


class XGBoostTree(BaseLearner):
    """One XGBoost regression tree per round on stacked [x; onehot(a)] rows (weighted LS).

    Parameters
    ----------
    tree_method : "exact" (the paper's choice: every split candidate) or "hist" (binned).
    max_depth : maximum tree depth, >= 1.
    min_child_weight : minimum sum of weights in a child, >= 0, in ``hessian_units``.
    hessian_units : "mean" (default: weights rescaled to mean 1 over the nonzero entries, so
        min_child_weight counts typical rows) or "raw" (the objective's weights as they are,
        e.g. |r_i|/p_i: London et al.'s units for Table 5's min_child_weight).
    reg_lambda : L2 penalty on leaf values, >= 0 (0: leaves are weighted means).
    max_bin : histogram bins per feature for "hist", >= 2 (ignored by "exact").
    nthread : XGBoost threads, >= 1 (default 1: OpenMP threads spin on busy machines).
    random_state : seed (int, Generator or None); None uses the booster's seed.

    Fitted attributes (after ``prepare``): ``booster_`` (the fitting ``xgboost.Booster``,
    trees at their fitted scale), ``n_actions_``, ``n_features_``, ``n_rounds_``.
    """

    name: ClassVar[str] = "xgboost_tree"
    reduction: ClassVar[str] = "regression"
    ensemble_class: ClassVar[type[Ensemble]] = XGBoostEnsemble
    _parameter_constraints: ClassVar[dict] = {
        "tree_method": [
            Options(
                TREE_METHODS, fix="'exact' as in London et al. (2023), or 'hist' for large data"
            )
        ],
        "max_depth": [Interval(numbers.Integral, 1, None)],
        "min_child_weight": [Interval(numbers.Real, 0.0, None)],
        "hessian_units": [Options(HESSIAN_UNITS)],
        "reg_lambda": [Interval(numbers.Real, 0.0, None)],
        "max_bin": [Interval(numbers.Integral, 2, None)],
        "nthread": [
            Interval(
                numbers.Integral,
                1,
                None,
                fix="use 1 on shared machines, or the number of free cores",
            )
        ],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        tree_method: str = "exact",
        max_depth: int = 6,
        min_child_weight: float = 1.0,
        hessian_units: str = "mean",
        reg_lambda: float = 0.0,
        max_bin: int = 256,
        nthread: int = 1,
        random_state: Any = None,
    ) -> None:
        self.tree_method = tree_method
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.hessian_units = hessian_units
        self.reg_lambda = reg_lambda
        self.max_bin = max_bin
        self.nthread = nthread
        self.random_state = random_state

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"max_depth": 3}

    # ----------------------------------------------------------------------------- setup
    def _xgb_params(self, seed: int) -> dict[str, Any]:
        """Validated XGBoost parameters for this fit."""
        self.validate_params()
        return {
            "booster": "gbtree",
            "tree_method": self.tree_method,
            "eta": 1.0,
            "base_score": 0.0,
            "max_depth": int(self.max_depth),
            "min_child_weight": float(self.min_child_weight),
            "reg_lambda": float(self.reg_lambda),
            "reg_alpha": 0.0,
            "gamma": 0.0,
            "max_bin": int(self.max_bin),
            "nthread": int(self.nthread),
            "seed": seed,
            "verbosity": 0,
            "disable_default_eval_metric": 1,
        }

    def prepare(
        self,
        contexts: Any,
        n_actions: int,
        *,
        random_state: Any = None,
        init_scores: np.ndarray | None = None,
    ) -> None:
        """Build the stacked DMatrix (n*K, d+K) and the XGBoost Booster once.

        ``contexts`` (n, d) dense or CSR. ``init_scores`` (n, K) is accepted for the contract
        and only checked: the trees fit the targets each round carries.
        """
        X, K = prepare_inputs(
            type(self).__name__, contexts, n_actions, init_scores, dtype=np.float32
        )
        n, d = X.shape
        seed = learner_seed(self.random_state, random_state)
        params = self._xgb_params(seed)
        self.sparse_ = bool(sp.issparse(X))
        self._dtrain = xgb.DMatrix(_stacked(X, K, self.sparse_), nthread=int(self.nthread))
        self.booster_ = xgb.Booster(params, [self._dtrain])
        self.n_actions_, self.n_features_, self.n_rows_ = K, d, n
        self._alphas: list[float | None] = []  # per tree: alpha, 0.0 dropped, None pending
        self._grad = np.empty(n * K, dtype=np.float32)
        self._hess = np.empty(n * K, dtype=np.float32)
        self._last: int | None = None  # index of the last committed tree
        self.n_rounds_ = 0

    # ----------------------------------------------------------------------------- rounds
    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        """Grow the next tree on ``problem``; return its outputs on the training rows (n, K)."""
        booster = self._check_prepared()
        self._drop_pending()
        n, K = self.n_rows_, self.n_actions_
        terms = wls_terms("XGBoostTree", problem, (n, K), hessian_units=self.hessian_units)
        if terms is None:  # every weight is 0: nothing to fit, f = 0 and no tree
            return np.zeros((n, K))
        work, scale = terms
        w = problem.weights
        np.multiply(work.reshape(-1), -scale, out=self._grad, casting="same_kind")
        np.multiply(np.reshape(w, -1), scale, out=self._hess, casting="same_kind")
        t = len(self._alphas)
        booster.boost(self._dtrain, t, grad=self._grad, hess=self._hess)
        self._alphas.append(None)
        f = booster.predict(self._dtrain, output_margin=True, iteration_range=(t, t + 1))
        return np.asarray(f, dtype=np.float64).reshape(n, K)

    def commit_round(self, alpha: float) -> None:
        """Give the last fitted tree weight ``alpha``; alpha 0 drops it."""
        self._check_prepared()
        alpha = float(alpha)
        if not np.isfinite(alpha):
            raise InvalidParameterError(
                f"XGBoostTree.commit_round: alpha must be finite; got {alpha!r}."
            )
        if not self._alphas or self._alphas[-1] is not None:
            return  # no pending tree (e.g. an all-zero-weight round)
        self._alphas[-1] = alpha
        if alpha != 0.0:
            self._last = len(self._alphas) - 1
            self.n_rounds_ += 1

    def ensemble(self) -> XGBoostEnsemble:
        """The committed rounds as an XGBoost model with alpha-scaled leaves (a new copy)."""
        booster = self._check_prepared()
        alphas = [0.0 if a is None else a for a in self._alphas]
        return XGBoostEnsemble(
            _scaled_model(booster, alphas, int(self.nthread)),
            n_actions=self.n_actions_,
            n_features=self.n_features_,
            n_rounds=self.n_rounds_,
            sparse=self.sparse_,
            nthread=int(self.nthread),
        )

    def predict_round(self, X: Any) -> np.ndarray:
        """The last committed f_t (without its alpha) on new contexts X (m, d): (m, K)."""
        booster = self._check_prepared()
        if self._last is None:
            raise InvalidParameterError("XGBoostTree.predict_round: no round committed yet.")
        X = as_contexts(X, self.n_features_, dtype=np.float32)
        dm = xgb.DMatrix(_stacked(X, self.n_actions_, self.sparse_), nthread=int(self.nthread))
        f = booster.predict(dm, output_margin=True, iteration_range=(self._last, self._last + 1))
        return np.asarray(f, dtype=np.float64).reshape(X.shape[0], self.n_actions_)

    # ----------------------------------------------------------------------------- helpers
    def _check_prepared(self) -> xgb.Booster:
        booster = getattr(self, "booster_", None)
        if booster is None:
            raise InvalidParameterError(
                "XGBoostTree: call prepare(contexts, n_actions) before fitting rounds."
            )
        return booster

    def _drop_pending(self) -> None:
        """A tree fitted but never committed stays in the booster with alpha 0."""
        if self._alphas and self._alphas[-1] is None:
            self._alphas[-1] = 0.0
