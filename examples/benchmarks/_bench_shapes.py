"""The catalogue and small-log data sets of ``bench_peers.py`` (issue 34, items 2 and 3).

**Catalogues** (:data:`CATALOGUES`): each trial is a fresh world of
:func:`opboost.simulation.simulate_catalogue` seeded by the trial's seed (so seeds differ in
the reward parameters, the items and the logs), its logs, and :data:`CatalogueSpec.n_test`
held-out rows of the same world (``SimulatedCatalogue.test_rows``: new items, or items of
the training catalogue). The TRUE value of a policy is the mean of mu(x, chosen item) (times
the row's examination probability, with positions) over the held-out rows.

**Small and skewed logs** (:data:`SYNTHETIC`): seeded synthetic worlds turned into bandit logs
by the supervised-to-bandit protocol of :func:`_bench_common.simulate_trial`. A synthetic
bandit with known means mu(x, a) draws one Bernoulli(mu(x, a)) label per row and action as
multilabel labels (so the logged reward of action a is Bernoulli(mu(x, a))), and its trial
scores policies by the exact means of the test rows, not by the drawn labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from _bench_common import Trial, simulate_trial
from scipy.special import expit

from opboost.api.data import LoggedBandit
from opboost.simulation.datasets import SupervisedData
from opboost.simulation.items import SimulatedCatalogue, simulate_catalogue

__all__ = ["CATALOGUES", "SYNTHETIC", "CatalogueSpec", "CatalogueTrial", "SyntheticWorld"]


# --- catalogues -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CatalogueTrial:
    """A catalogue trial: the logs every method learns from and the held-out rows that score
    it. Methods serve ``X_test`` with ``serving`` (``candidates=``, ``action_features=``)."""

    seed: int
    logged: LoggedBandit
    test: SimulatedCatalogue
    masked: bool = True

    @property
    def X_test(self) -> np.ndarray:
        return self.test.logged.contexts

    @property
    def n_test(self) -> int:
        return len(self.test.logged)

    @property
    def serving(self) -> dict[str, Any]:
        """``action_features`` of the test catalogue and each test row's ``candidates`` (None
        for logs without a candidate mask: every item may be served)."""
        candidates = self.test.logged.candidates if self.masked else None
        return {"candidates": candidates, "action_features": self.test.item_features}

    def value(self, policy: Any) -> float:
        """True value on the test rows of (m,) items or (m, n_items) probabilities (dense or
        sparse), which must put no mass outside each row's candidates."""
        if sp.issparse(policy):
            rows = np.arange(self.n_test)[:, None]
            on = np.asarray(policy.tocsr()[rows, self.test.candidate_items].todense())
            if not np.allclose(on.sum(axis=1), np.asarray(policy.sum(axis=1)).ravel()):
                raise ValueError("the policy puts probability outside the test candidates")
            return float(np.mean(np.sum(on * self.test.candidate_means, axis=1)))
        return self.test.policy_value(policy)

    def logging_probs(self) -> sp.csr_matrix:
        """The logger's (m, n_items) probabilities on the test rows (sparse)."""
        m, c = self.test.candidate_items.shape
        return sp.csr_matrix(
            (self.test.candidate_probs.ravel(), self.test.candidate_items.ravel(),
             np.arange(0, m * c + 1, c)),
            shape=(m, self.test.logged.n_actions),
        )  # fmt: skip


@dataclass(frozen=True)
class CatalogueSpec:
    """A catalogue world: ``simulate_catalogue(n, n_items, n_candidates, d_x, d_item,
    **options)``, its held-out rows on new (``new_items``) or training items, and whether the
    logs keep the candidate mask (``masked``; False: every item is a candidate, the mask is
    dropped, as in the Open Bandit logs)."""

    description: str
    n: int
    n_items: int
    n_candidates: int
    d_x: int
    d_item: int
    options: Mapping[str, Any] = field(default_factory=dict)
    new_items: bool = True
    masked: bool = True
    n_test: int = 3000

    def trial(self, seed: int, n: int | None = None) -> CatalogueTrial:
        """The world of ``seed`` with ``n`` logged rows (default ``self.n``), at most as many
        test rows."""
        n = self.n if n is None else n
        sim = simulate_catalogue(
            n, self.n_items, self.n_candidates, self.d_x, self.d_item, random_state=seed,
            **self.options,
        )  # fmt: skip
        logged = sim.logged
        if not self.masked:
            logged = replace(logged, candidates=None)
        test = sim.test_rows(min(self.n_test, n), new_items=self.new_items)
        return CatalogueTrial(seed, logged, test, self.masked)

    def summary(self, n: int | None = None) -> str:
        """One line: sizes (``n`` logged rows), the test items and the options."""
        n = self.n if n is None else n
        options = ", ".join(f"{k}={v}" for k, v in self.options.items())
        items = "new items" if self.new_items else "training items"
        mask = "" if self.masked else " (no candidate mask: every item a candidate)"
        return (
            f"{self.description}: simulate_catalogue({n:,} rows, {self.n_items} items, "
            f"{self.n_candidates} candidates a row{mask}, d_x={self.d_x}, d_item={self.d_item}"
            f"{', ' + options if options else ''}), test rows on {items}"
        )


_BILINEAR = {"reward_scale": 1.5, "logging_beta": 0.3}
_SIZES = {"n": 10_000, "n_items": 300, "n_candidates": 20, "d_x": 5, "d_item": 6}

CATALOGUES: dict[str, CatalogueSpec] = {
    "catalogue_bilinear": CatalogueSpec(
        "bilinear context x item reward", **_SIZES, options=_BILINEAR
    ),
    "catalogue_seen": CatalogueSpec(
        "catalogue_bilinear's logs, test items seen in training",
        **_SIZES,
        options=_BILINEAR,
        new_items=False,
    ),
    "catalogue_nonlinear": CatalogueSpec(
        "a context x item reward no bilinear model fits (cosine of x^T W phi)",
        **_SIZES,
        options={**_BILINEAR, "reward_scale": 2.0, "interaction": "cosine"},
    ),
    "catalogue_popular": CatalogueSpec(
        "item popularity dominating, low click rate",
        **{**_SIZES, "n_candidates": 30},
        options={
            "popularity_scale": 2.0,
            "reward_scale": 0.5,
            "reward_intercept": -4.0,
            "logging_beta": 0.3,
        },
    ),
    "catalogue_categorical": CatalogueSpec(
        "sparse categorical item features (50, 20 and 8 categories, long-tailed)",
        **{**_SIZES, "d_item": 2},
        options={"item_categories": (50, 20, 8), "reward_scale": 1.0, "logging_beta": 0.3},
    ),
    "catalogue_few": CatalogueSpec(
        "5 candidates a row", **{**_SIZES, "n_candidates": 5}, options=_BILINEAR
    ),
    "catalogue_many": CatalogueSpec(
        "100 candidates a row",
        **{**_SIZES, "n_items": 1000, "n_candidates": 100},
        options=_BILINEAR,
    ),
    "catalogue_rare": CatalogueSpec(
        "click rate near 1%",
        **{**_SIZES, "n": 30_000},
        options={"reward_scale": 1.0, "reward_intercept": -6.0, "logging_beta": 0.3},
    ),
    "open_bandit_like": CatalogueSpec(
        "shaped like the Open Bandit sample: 3 positions, 80 items (1 numeric, 3 categorical "
        "features), one-hot user features, a uniform logger, click rate about 0.5%",
        n=10_000,
        n_items=80,
        n_candidates=80,
        d_x=24,
        d_item=1,
        options={
            "item_categories": (12, 21, 7),
            "context_categories": (3, 5, 8, 8),
            "position_bias": (1.0, 0.9, 0.8),
            "reward_scale": 0.5,
            "reward_intercept": -5.5,
            "logging_beta": 0.0,
        },
        new_items=False,
        masked=False,
    ),
}


# --- small synthetic worlds -------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticWorld:
    """A seeded synthetic data set for the supervised-to-bandit protocol.

    ``make(seed, n)`` returns the labelled rows and, for a bandit with known means, the
    function x (m, d) -> mu (m, K) that scores the test rows (None: score by the labels)."""

    description: str
    n: int
    make: Callable[[int, int], tuple[SupervisedData, Callable[[np.ndarray], np.ndarray] | None]]

    def trial(self, seed: int, n: int | None = None) -> Trial:
        """The world of ``seed`` with ``n`` rows (default ``self.n``) through
        :func:`_bench_common.simulate_trial`, scored by its exact means when it has them."""
        data, means = self.make(seed, self.n if n is None else n)
        trial = simulate_trial(data, seed)
        if means is None:
            return trial
        return replace(trial, table=means(np.asarray(trial.X_test)))

    def summary(self, n: int | None = None) -> str:
        return f"{self.n if n is None else n:,} rows, {self.description}; a new world each seed"


def _bernoulli_labels(
    name: str, X: np.ndarray, mu: Callable[[np.ndarray], np.ndarray], rng: np.random.Generator
) -> tuple[SupervisedData, Callable[[np.ndarray], np.ndarray]]:
    """One Bernoulli(mu(x, a)) label per row and action: multilabel rows with known means."""
    means = mu(X)
    labels = (rng.random(means.shape) < means).astype(np.int64)
    k = means.shape[1]
    return SupervisedData(name, X, labels, "multilabel", k, "multilabel"), mu


def skewed_multilabel(seed: int, n: int) -> tuple[SupervisedData, None]:
    """Small multilabel rows: 100 count features, 14 labels (sklearn's
    ``make_multilabel_classification``), label 0 then set on a random 75% of the rows, so one
    label is very common and the best constant action is hard to beat."""
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(
        n_samples=n, n_features=100, n_classes=14, n_labels=2, random_state=seed
    )
    rng = np.random.default_rng([seed, 34])
    Y[:, 0] = rng.random(n) < 0.75
    X = X.astype(np.float64)
    return SupervisedData("multilabel_skewed", X, Y, "multilabel", 14, "multilabel"), None


def one_best(seed: int, n: int) -> tuple[SupervisedData, Callable[[np.ndarray], np.ndarray]]:
    """6 actions, 10 Gaussian features, mu(x, a) = sigmoid(c_a + w_a^T x): c_0 = 1 and
    c_a = -1 for the others, w_a with entries N(0, 0.25^2): action 0 is the best for about
    80% of the contexts, and the best policy beats it by about 0.025."""
    rng = np.random.default_rng([seed, 35])
    d, k = 10, 6
    intercept = np.r_[1.0, np.full(k - 1, -1.0)]
    weights = rng.normal(scale=0.25, size=(d, k))

    def mu(X: np.ndarray) -> np.ndarray:
        return expit(intercept + X @ weights)

    return _bernoulli_labels("one_best", rng.normal(size=(n, d)), mu, rng)


def smooth(seed: int, n: int) -> tuple[SupervisedData, Callable[[np.ndarray], np.ndarray]]:
    """3 actions, 3 Gaussian features, mu(x, a) = sigmoid(w_a^T x + x^T A_a x / 2), w_a with
    entries N(0, 1), A_a symmetric with entries N(0, 0.5^2): rewards smooth in x, every
    action the best somewhere."""
    rng = np.random.default_rng([seed, 36])
    d, k = 3, 3
    weights = rng.normal(size=(d, k))
    quad = rng.normal(scale=0.5, size=(k, d, d))
    quad = (quad + quad.transpose(0, 2, 1)) / 2

    def mu(X: np.ndarray) -> np.ndarray:
        return expit(X @ weights + 0.5 * np.einsum("md,kde,me->mk", X, quad, X))

    return _bernoulli_labels("smooth", rng.normal(size=(n, d)), mu, rng)


SYNTHETIC: dict[str, SyntheticWorld] = {
    "multilabel_skewed": SyntheticWorld(
        "100 features, 14 labels, one on 75% of the rows", 2000, skewed_multilabel
    ),
    "one_best": SyntheticWorld(
        "10 features, 6 actions, action 0 the best for most contexts", 3000, one_best
    ),
    "smooth": SyntheticWorld(
        "3 features, 3 actions, sigmoid of quadratic functions of x", 3000, smooth
    ),
}
