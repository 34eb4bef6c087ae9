"""Slate worlds: catalogue logs of rankings with position bias and cascade clicks.

A world has K items with features phi_a (d_item,), contexts x ~ N(0, I_d), and each
impression shows L of its C candidates (a uniform subset of the catalogue). Item a's
attractiveness at x is theta(x, a) = sigmoid(x^T W phi_a + b_a + c); position k (0 at the top)
is examined with probability e_k = 1 / (k + 1)^eta. Two click models:

* ``"pbm"`` (position-based): a click at k with probability e_k theta(x, a_k), independently;
* ``"cascade"``: the user scans down from the top, examines position k (when no click above)
  with probability e_k, clicks with probability theta(x, a_k), and stops after a click; so
  P(click at k) = e_k theta_k prod_{j<k} (1 - e_j theta_j).

Both are exact in ``SlateWorld.click_probabilities``, so the true expected clicks of any
ranking are known. The logger is Plackett–Luce over its candidates with scores
x^T W phi_a + b_a (the true logits) at ``logging_temperature``: large is near uniform, small
heavily skewed toward the attractive items; its per-position propensities are exact
(``opboost.api.numerics.plackett_luce``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.plackett_luce import (
    marginal_distributions,
    plackett_luce_weights,
    prefix_probabilities,
    sample_plackett_luce,
)
from opboost.api.slates import SlateLogs, check_ranking
from opboost.api.validation import check_random_state

__all__ = ["CLICK_MODELS", "SlateWorld", "make_slate_world"]

CLICK_MODELS = ("cascade", "pbm")


@dataclass(frozen=True, eq=False)
class SlateWorld:
    """A simulated slate world (build it with ``make_slate_world``).

    Parameters
    ----------
    item_features
        (K, d_item) phi_a.
    reward_weights
        (d, d_item) W.
    item_bias
        (K,) b_a.
    intercept
        c, the attractiveness logits' offset (lower: fewer clicks).
    examination
        (L,) e_k, the examination probability of each position.
    click_model
        "cascade" or "pbm".
    n_candidates
        C, items per impression to rank from (L <= C <= K).
    logging_temperature
        T of the Plackett–Luce logger.
    """

    item_features: np.ndarray
    reward_weights: np.ndarray
    item_bias: np.ndarray
    intercept: float
    examination: np.ndarray
    click_model: str
    n_candidates: int
    logging_temperature: float

    @property
    def n_items(self) -> int:
        """K, the catalogue size."""
        return int(self.item_features.shape[0])

    @property
    def slate_size(self) -> int:
        """L, the positions of a ranking."""
        return int(self.examination.shape[0])

    def logits(self, contexts: np.ndarray) -> np.ndarray:
        """x^T W phi_a + b_a, (n, K): the logger's scores (theta's logits less c)."""
        return contexts @ self.reward_weights @ self.item_features.T + self.item_bias

    def attractiveness(self, contexts: np.ndarray) -> np.ndarray:
        """theta(x_i, a), (n, K)."""
        return 1.0 / (1.0 + np.exp(-(self.logits(contexts) + self.intercept)))

    def click_probabilities(self, contexts: np.ndarray, ranking: np.ndarray) -> np.ndarray:
        """P(click at k), (n, L), of showing ``ranking`` (n, L) item ids at ``contexts``."""
        ranking = self._check_ranking(contexts, ranking)
        theta = np.take_along_axis(self.attractiveness(contexts), ranking, axis=1)
        return self._clicks(theta)

    def _clicks(self, theta: np.ndarray) -> np.ndarray:
        """P(click at k), (n, L), from the shown items' attractiveness (n, L)."""
        clicks = self.examination * theta
        if self.click_model == "pbm":
            return clicks
        no_click_above = np.cumprod(1.0 - clicks, axis=1) / (1.0 - clicks)
        return clicks * no_click_above

    def expected_clicks(self, contexts: np.ndarray, ranking: np.ndarray) -> np.ndarray:
        """The true expected clicks of each impression, (n,): ``click_probabilities``
        summed over positions."""
        return self.click_probabilities(contexts, ranking).sum(axis=1)

    def plackett_luce_value(
        self, contexts: np.ndarray, scores: np.ndarray, temperature: float = 1.0
    ) -> np.ndarray:
        """The true expected clicks (n,) of the Plackett–Luce policy of (n, K) ``scores``
        (-inf for items a row cannot show), exact: a sum over every ordered L-tuple of the
        m items a row can show (O(n m!/(m-L)!) work)."""
        w = plackett_luce_weights(scores, temperature)
        m = int((w > 0).sum(axis=1).max())
        live = np.argsort(-w, axis=1, kind="stable")[:, :m]
        with np.errstate(divide="ignore"):
            local = np.log(np.take_along_axis(w, live, axis=1))
        theta = np.take_along_axis(self.attractiveness(contexts), live, axis=1)
        value = np.zeros(len(contexts))
        for order in itertools.permutations(range(m), self.slate_size):
            slots = np.broadcast_to(np.array(order), (len(contexts), self.slate_size))
            with np.errstate(invalid="ignore", divide="ignore"):
                prob = np.nan_to_num(prefix_probabilities(local, slots)[:, -1])
            value += prob * self._clicks(theta[:, list(order)]).sum(axis=1)
        return value

    def sample_contexts(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n contexts (n, d) and each row's candidates, (n, C) distinct item ids."""
        contexts = rng.normal(size=(n, self.reward_weights.shape[0]))
        candidates = np.argsort(rng.random((n, self.n_items)), axis=1)[:, : self.n_candidates]
        return contexts, candidates

    def candidate_scores(self, scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """(n, K) ``scores`` with -inf outside each row's (n, C) ``candidates``."""
        out = np.full(np.shape(scores), -np.inf)
        rows = np.arange(len(candidates))[:, None]
        out[rows, candidates] = np.asarray(scores)[rows, candidates]
        return out

    def simulate(self, n: int, seed: int | np.random.Generator | None = None) -> SlateLogs:
        """n logged impressions: the logger's rankings, clicks from the click model and the
        logger's exact marginal and cascade propensities; ``candidates`` (n, K) and
        ``item_features`` set."""
        rng = check_random_state(seed)
        return self.log(*self.sample_contexts(n, rng), rng)

    def log(
        self, contexts: np.ndarray, candidates: np.ndarray, rng: np.random.Generator
    ) -> SlateLogs:
        """The logger's impressions of ``contexts`` (n, d) with their (n, C) ``candidates``:
        its Plackett–Luce rankings, their clicks and exact propensities (``simulate``)."""
        n = len(contexts)
        rows = np.arange(n)[:, None]
        local = self.logits(contexts)[rows, candidates]  # (n, C) candidate coordinates
        t = self.logging_temperature
        order = sample_plackett_luce(local, self.slate_size, rng, t)
        slates = candidates[rows, order]
        marginal = marginal_distributions(local, self.slate_size, t)
        marginal = np.take_along_axis(marginal, order[:, :, None], axis=2)[:, :, 0]
        clicks = self.draw_clicks(contexts, slates, rng)
        mask = np.zeros((n, self.n_items), dtype=bool)
        mask[rows, candidates] = True
        return SlateLogs(
            contexts,
            slates,
            clicks,
            marginal,
            self.n_items,
            cascade_propensities=prefix_probabilities(local, order, t),
            candidates=mask,
            item_features=self.item_features,
        )

    def logging_scores(self, logs: SlateLogs) -> np.ndarray:
        """The logger's (n, K) scores on ``logs`` (-inf outside the candidates), for
        ``SlatePolicy.plackett_luce(logs, scores, world.logging_temperature)``."""
        return np.where(logs.candidates, self.logits(logs.contexts), -np.inf)

    def draw_clicks(
        self, contexts: np.ndarray, ranking: np.ndarray, seed: int | np.random.Generator | None
    ) -> np.ndarray:
        """Clicks (n, L) of showing ``ranking`` (n, L) item ids at ``contexts``, drawn from
        the click model (its means are ``click_probabilities``)."""
        rng = check_random_state(seed)
        theta = np.take_along_axis(
            self.attractiveness(contexts), self._check_ranking(contexts, ranking), axis=1
        )
        u = rng.random(theta.shape)
        clicks = (u < self.examination * theta).astype(np.float64)
        if self.click_model == "cascade":
            # a click at k ends the scan: no click below the first
            first = np.cumsum(np.cumsum(clicks, axis=1), axis=1) <= 1
            clicks = clicks * first
        return clicks

    def _check_ranking(self, contexts: np.ndarray, ranking: np.ndarray) -> np.ndarray:
        shape = (len(contexts), self.slate_size)
        return check_ranking(ranking, shape, self.n_items, "SlateWorld")


def make_slate_world(
    *,
    n_items: int = 20,
    n_candidates: int = 8,
    slate_size: int = 3,
    context_dim: int = 5,
    item_dim: int = 4,
    eta: float = 1.0,
    click_model: str = "cascade",
    logging_temperature: float = 1.0,
    intercept: float = -1.0,
    seed: int = 0,
) -> SlateWorld:
    """A seeded ``SlateWorld``: phi_a, W ~ N(0, 1/d) entries, b_a ~ N(0, 0.5^2),
    examination e_k = 1 / (k + 1)^eta (eta = 0: no position bias)."""
    if click_model not in CLICK_MODELS:
        raise InvalidParameterError(
            f"make_slate_world: click_model={click_model!r} is not one of {CLICK_MODELS}."
        )
    if not slate_size <= n_candidates <= n_items:
        raise InvalidParameterError(
            f"make_slate_world: need slate_size <= n_candidates <= n_items; got "
            f"{slate_size}, {n_candidates}, {n_items}."
        )
    if not logging_temperature > 0:
        raise InvalidParameterError(
            f"make_slate_world: logging_temperature must be > 0; got {logging_temperature!r}."
        )
    rng = np.random.default_rng(seed)
    return SlateWorld(
        item_features=rng.normal(size=(n_items, item_dim)),
        reward_weights=rng.normal(size=(context_dim, item_dim)) / np.sqrt(context_dim),
        item_bias=rng.normal(scale=0.5, size=n_items),
        intercept=float(intercept),
        examination=1.0 / np.arange(1, slate_size + 1) ** float(eta),
        click_model=click_model,
        n_candidates=int(n_candidates),
        logging_temperature=float(logging_temperature),
    )
