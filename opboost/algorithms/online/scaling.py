"""Online feature standardisation shared by every online learner.

:class:`RunningScaler` keeps running per-feature statistics (Welford's mean and variance;
Chan et al.'s merge for mini-batches) and maps a context to ``(x - c) / std`` with the
centre ``c`` set by ``center``:

- ``"mean"``: the running mean, i.e. river's ``preprocessing.StandardScaler``;
- ``"auto"``: the running mean, except for features that have taken at most two distinct
  values so far (indicators, one-hot columns), which are centred at their smaller value,
  so their zeros stay zeros and one-hot rows stay sparse (the scale is still 1 / std).
  Mean-centring one-hot data makes every feature of every row non-zero; that costs the
  perceptron-based learners 0.01-0.03 progressive reward on Car, DNA and Connect-4
  (docs/online.md), while centring continuous features at their minimum costs Chen et al.
  0.12 on ImageSegments. A feature leaves the two-valued set for good at its third value.

A feature whose variance is still 0 maps to 0 (river's ``safe_div``).

Order: a learner standardises the context it acts on with the statistics of the contexts
before it, then adds the context to them (:meth:`RunningScaler.transform_learn_one`), so
``action_probs_one(x)`` is exactly the distribution ``predict_one(x)`` samples from, and the
first context maps to 0. For speed, contexts are buffered and merged into the statistics in
blocks (Chan et al.'s update) of ``n_seen // 16`` contexts, at least 1 and at most
``max_block`` (64): the statistics lag by less than 1/16 of the contexts they summarise
(exact for the first 31), and a context costs about 3 numpy calls.

Both centres make the map invariant to per-feature affine maps ``a x + b`` (``a > 0``): the
mean, the smaller of two values and the std all move with the map, and being two-valued
does not change, so a learner behind a scaler plays the same actions on raw and on
z-scored features (up to rounding). Contexts carry no label, so learning their statistics
is allowed in every feedback setting.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CENTERS", "RunningScaler", "make_scaler", "scale_one"]

#: What a :class:`RunningScaler` subtracts before dividing by the running std.
CENTERS: tuple[str, ...] = ("auto", "mean")


class RunningScaler:
    """Running per-feature standardisation of a stream of (d,) contexts (ddof=0).

    Parameters
    ----------
    n_features
        d, the context dimension.
    center
        ``"auto"`` or ``"mean"`` (see the module doc).
    max_block
        the largest block of buffered contexts merged at once (:meth:`flush`
        merges the buffer now).

    Notes
    -----
    State: ``n_seen`` (merged count), ``mean`` (d,), ``m2`` (d,) (sum of squared deviations),
    ``inv_std`` (d,) (1 / std, 0 where the variance is 0), ``centre`` (d,), the extremes
    ``lo``, ``hi`` (d,) and ``two_valued`` (d,) bool (no value strictly between them yet).
    Per-example methods compute in preallocated buffers and return a new (d,) array.

    Examples
    --------
    >>> import numpy as np
    >>> scaler = RunningScaler(3)
    >>> scaler.learn_many(np.array([[1.0, 10.0, 0.0], [3.0, 10.0, 1.0], [5.0, 10.0, 0.0]]))
    >>> scaler.transform_one(np.array([5.0, 10.0, 1.0])).round(3)  # 3 values, 1, 2 values
    array([1.225, 0.   , 2.121])
    """

    def __init__(self, n_features: int, center: str = "auto", *, max_block: int = 64) -> None:
        if center not in CENTERS:
            raise ValueError(f"center must be one of {CENTERS}. Got {center!r} instead.")
        d = int(n_features)
        self.n_features = d
        self.center = center
        self.n_seen = 0
        self.mean = np.zeros(d)
        self.m2 = np.zeros(d)
        self.inv_std = np.zeros(d)
        self.centre = self.mean if center == "mean" else np.zeros(d)
        self.lo = np.zeros(d)
        self.hi = np.zeros(d)
        self.two_valued = np.ones(d, dtype=bool)
        self.max_block = max(int(max_block), 1)
        self._buffer = np.empty((self.max_block, d))
        self._pending = 0
        self._d1 = np.empty(d)
        self._d2 = np.empty(d)
        self._mask = np.empty(d, dtype=bool)

    @property
    def var(self) -> np.ndarray:
        """Population variance of each feature so far, (d,); 0 before the first context."""
        return self.m2 / max(self.n_seen, 1)

    def _refresh(self) -> None:
        # m2 never decreases, so an entry of inv_std left at 0 (var = 0) stays right until
        # its variance turns positive, and only positive entries need writing.
        std = np.multiply(self.m2, 1.0 / self.n_seen, out=self._d2)
        np.sqrt(std, out=std)
        np.greater(std, 0.0, out=self._mask)
        np.divide(1.0, std, out=self.inv_std, where=self._mask)
        if self.center == "auto":
            np.copyto(self.centre, self.mean)
            np.copyto(self.centre, self.lo, where=self.two_valued)

    def transform_one(self, x: np.ndarray) -> np.ndarray:
        """``x`` (d,) standardised with the current statistics, without learning; (d,)."""
        return np.multiply(np.subtract(x, self.centre, out=self._d1), self.inv_std)

    def transform_learn_one(self, x: np.ndarray) -> np.ndarray:
        """``x`` (d,) standardised with the current statistics, then added to them; (d,)."""
        z = np.subtract(x, self.centre)
        z *= self.inv_std
        self._buffer[self._pending] = x
        self.count_buffered()
        return z

    def next_row(self) -> np.ndarray:
        """The (d,) buffer row the next context is written to (then :meth:`count_buffered`)."""
        return self._buffer[self._pending]

    def count_buffered(self) -> None:
        """Count the context just written to :meth:`next_row`; merge the buffer when due."""
        self._pending += 1
        if self._pending >= min(self.max_block, max(self.n_seen >> 4, 1)):
            self.flush()

    def flush(self) -> None:
        """Merge the buffered contexts into the statistics now."""
        if self._pending:
            pending, self._pending = self._pending, 0
            self.learn_many(self._buffer[:pending])

    def learn_one(self, x: np.ndarray) -> None:
        """Add one context ``x`` (d,) to the statistics."""
        self.transform_learn_one(x)

    def transform_many(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` (n, d) standardised with the current statistics; a new (n, d)."""
        return (np.asarray(X, dtype=np.float64) - self.centre) * self.inv_std

    def learn_many(self, X: np.ndarray) -> None:
        """Add the rows of ``X`` (n, d) at once (Chan et al.'s merge; equals n learn_one)."""
        X = np.asarray(X, dtype=np.float64)
        if self._pending:
            self.flush()
        n_b = X.shape[0]
        if n_b == 0:
            return
        if self.n_seen == 0:
            self.lo[:] = X[0]
            self.hi[:] = X[0]
        # two-valued after the batch iff every value, old (lo, hi) and new, is one of the two
        # extremes of the union; lo and hi are the extremes so far
        low = np.minimum(self.lo, X.min(axis=0))
        high = np.maximum(self.hi, X.max(axis=0))
        self.two_valued &= ((low == X) | (high == X)).all(axis=0)
        self.two_valued &= (self.lo == low) | (self.lo == high)
        self.two_valued &= (self.hi == low) | (self.hi == high)
        self.lo, self.hi = low, high
        mean_b = X.mean(axis=0)
        m2_b = ((X - mean_b) ** 2).sum(axis=0)
        n = self.n_seen + n_b
        delta = mean_b - self.mean
        self.mean += delta * (n_b / n)
        self.m2 += m2_b + delta * delta * (self.n_seen * n_b / n)
        self.n_seen = n
        self._refresh()

    def transform_learn_many(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` (n, d) standardised with the statistics before the batch, then
        added to them (a mini-batch acted on with a frozen model); a new (n, d)."""
        out = self.transform_many(X)
        self.learn_many(X)
        return out


def make_scaler(standardize: Any, n_features: int, owner: str) -> RunningScaler | None:
    """The scaler of a learner's ``standardize`` parameter: ``"auto"`` or ``"mean"`` (the
    centre, see :class:`RunningScaler`), or False for none; anything else raises."""
    if standardize is False:
        return None
    if not (isinstance(standardize, str) and standardize in CENTERS):
        from opboost.api.exceptions import InvalidParameterError

        raise InvalidParameterError(
            f"The 'standardize' parameter of {owner} must be 'auto', 'mean' or False. Got "
            f"{standardize!r} instead; 'auto' keeps one-hot zeros, 'mean' is river's "
            f"StandardScaler, False feeds raw features."
        )
    return RunningScaler(n_features, center=standardize)


def scale_one(scaler: RunningScaler | None, x: np.ndarray, learn: bool) -> np.ndarray:
    """``x`` (d,) standardised by ``scaler`` (then learnt if ``learn``); ``x`` if None."""
    if scaler is None:
        return x
    return scaler.transform_learn_one(x) if learn else scaler.transform_one(x)
