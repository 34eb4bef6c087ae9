"""The fixed parts of a simulated catalogue (:func:`opboost.simulation.simulate_catalogue`):
reward parameters, the logger's temperature, the training items' features and the options
for other shapes of log (categorical item columns, one-hot contexts, positions), with the
seeded draws and checks those options need."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from opboost.api.data.tabular import TabularSchema
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_scalar

__all__ = ["CatalogueWorld", "categorical_codes", "category_counts", "position_bias_array"]


@dataclass(frozen=True)
class CatalogueWorld:
    """The fixed parts of a simulated catalogue: reward parameters, logger temperature, the
    training catalogue's item features (n_items, d_item + J), J categorical columns (codes)
    last, and the options of other shapes (``category_weights`` U_j (C_j, d_x) and
    ``category_bias`` v_j (C_j,) per categorical item column, ``context_categories``,
    ``position_bias``)."""

    item_features: np.ndarray
    reward_weights: np.ndarray
    reward_bias: np.ndarray
    reward_intercept: float
    logging_beta: float
    seed: int
    category_weights: tuple[np.ndarray, ...] = ()
    category_bias: tuple[np.ndarray, ...] = ()
    context_categories: tuple[int, ...] = ()
    position_bias: np.ndarray | None = None
    #: "bilinear" (x^T W phi as it is) or "cosine": c cos(pi x^T W phi / c), c the
    #: ``reward_scale``, an interaction no bilinear model fits (each item's best contexts
    #: lie in bands)
    interaction: str = "bilinear"
    reward_scale: float = 1.0

    @property
    def n_numeric(self) -> int:
        """d_item: the numeric item columns (the categorical codes follow them)."""
        return int(self.reward_weights.shape[1])

    @property
    def item_schema(self) -> TabularSchema | None:
        """The schema marking the categorical item columns (None without any)."""
        if not self.category_bias:
            return None
        numeric = tuple(f"phi{j}" for j in range(self.n_numeric))
        names = tuple(f"category{j}" for j in range(len(self.category_bias)))
        categories = {
            name: tuple(range(len(v))) for name, v in zip(names, self.category_bias, strict=True)
        }
        return TabularSchema(numeric + names, categories)

    def scores(self, contexts: np.ndarray, item_features: np.ndarray) -> np.ndarray:
        """s(x, a) = x^T W phi(a) + b^T phi(a) (+ the categorical columns' terms): (m, k) for
        item_features (k, d_item + J) (every pair), or (m, c) for item_features
        (m, c, d_item + J) (row i's own c items)."""
        x = np.asarray(contexts, dtype=np.float64)
        xw = x @ self.reward_weights
        features = np.asarray(item_features, dtype=np.float64)
        numeric = features[..., : self.n_numeric] if self.category_bias else features
        if features.ndim == 2:
            scores = self._shaped(xw @ numeric.T) + numeric @ self.reward_bias
        else:
            scores = self._shaped(np.einsum("md,mcd->mc", xw, numeric)) + numeric @ self.reward_bias
        for j, (weights, bias) in enumerate(
            zip(self.category_weights, self.category_bias, strict=True)
        ):
            codes = features[..., self.n_numeric + j].astype(np.intp)
            xu = x @ weights.T  # (m, C_j): every context against every category
            if codes.ndim == 1:
                scores += xu[:, codes] + bias[codes]
            else:
                scores += np.take_along_axis(xu, codes, axis=1) + bias[codes]
        return scores

    def _shaped(self, bilinear: np.ndarray) -> np.ndarray:
        """The interaction term of the score from x^T W phi (see ``interaction``)."""
        if self.interaction == "bilinear":
            return bilinear
        c = max(self.reward_scale, 1e-12)
        return c * np.cos(np.pi * bilinear / c)

    def position_factor(self, positions: np.ndarray | None) -> np.ndarray | float:
        """(n, 1) examination probabilities e_p of rows at ``positions``; 1.0 without."""
        if self.position_bias is None or positions is None:
            return 1.0
        return self.position_bias[positions][:, None]

    def contexts(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, d_x) contexts: N(0, I), or one-hot user features (``context_categories``)."""
        d_x = self.reward_weights.shape[0]
        if not self.context_categories:
            return rng.normal(size=(n, d_x))
        codes = categorical_codes(rng, n, self.context_categories)
        offsets = np.cumsum((0, *self.context_categories[:-1]))
        one_hot = np.zeros((n, d_x))
        one_hot[np.arange(n)[:, None], codes + offsets] = 1.0
        return one_hot

    def new_item_features(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """(count, d_item + J) features of new items, from the training items' distribution."""
        numeric = rng.normal(size=(count, self.n_numeric))
        if not self.category_bias:
            return numeric
        sizes = tuple(len(v) for v in self.category_bias)
        return np.hstack([numeric, categorical_codes(rng, count, sizes)])


def category_counts(counts: Sequence[int], name: str, owner: str) -> tuple[int, ...]:
    """``counts`` as a tuple of ints >= 2, or InvalidParameterError naming the bad entry."""
    counts = tuple(counts)
    for j, count in enumerate(counts):
        check_scalar(count, f"{name}[{j}]", owner, kind=Integral, low=2)
    return tuple(int(c) for c in counts)


def position_bias_array(values: Sequence[float], owner: str) -> np.ndarray:
    """``values`` as a read-only (P,) float array in (0, 1], P >= 1."""
    bias = np.array(values, dtype=np.float64)
    if bias.ndim != 1 or not len(bias) or not np.all((bias > 0) & (bias <= 1)):
        raise InvalidParameterError(
            f"The 'position_bias' parameter of {owner} must be a non-empty sequence of "
            f"examination probabilities in (0, 1], one per position. Got {values!r} instead."
        )
    bias.setflags(write=False)
    return bias


def categorical_codes(rng: np.random.Generator, n: int, categories: Sequence[int]) -> np.ndarray:
    """(n, len(categories)) int64 codes: column j's code k in range(categories[j]) has
    probability proportional to 1 / (k + 1)."""
    columns = []
    for count in categories:
        weights = 1.0 / np.arange(1, count + 1)
        columns.append(rng.choice(count, size=n, p=weights / weights.sum()))
    return np.column_stack(columns).astype(np.int64)
