"""Online feature standardisation shared by every online learner.

:class:`RunningScaler` keeps the running mean and variance of each feature (Welford's
update; Chan et al.'s merge for mini-batches) and maps a context to ``(x - mean) / std``,
like river's ``preprocessing.StandardScaler``. A feature whose variance is still 0 maps
to 0 (river's ``safe_div``).

Order: a learner standardises the context it acts on with the statistics of the contexts
before it, then adds the context to them (:meth:`RunningScaler.transform_learn_one`), so
``action_probs_one(x)`` is exactly the distribution ``predict_one(x)`` samples from, and the
first context maps to 0.

Running standardisation is equivariant to per-feature affine maps: a stream ``a x + b``
(``a > 0``) is mapped to the same standardised stream as ``x``, so a learner behind a scaler
plays the same actions on raw and on z-scored features (up to rounding). Contexts carry no
label, so learning their statistics is allowed in every feedback setting.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RunningScaler", "make_scaler", "scale_one"]


class RunningScaler:
    """Running per-feature mean and variance (ddof=0) of a stream of (d,) contexts.

    Parameters
    ----------
    n_features : d, the context dimension.

    State: ``n_seen`` (count), ``mean`` (d,), ``m2`` (d,) (sum of squared deviations) and
    ``inv_std`` (d,), 1 / std (0 where the variance is 0), refreshed by every update.
    Per-example methods compute in preallocated buffers and return a new (d,) array.

    Examples
    --------
    >>> import numpy as np
    >>> scaler = RunningScaler(2)
    >>> scaler.learn_many(np.array([[1.0, 10.0], [3.0, 10.0]]))
    >>> scaler.transform_one(np.array([3.0, 10.0]))
    array([1., 0.])
    """

    def __init__(self, n_features: int) -> None:
        self.n_features = int(n_features)
        self.n_seen = 0
        self.mean = np.zeros(self.n_features)
        self.m2 = np.zeros(self.n_features)
        self.inv_std = np.zeros(self.n_features)
        self._d1 = np.empty(self.n_features)
        self._d2 = np.empty(self.n_features)
        self._mask = np.empty(self.n_features, dtype=bool)

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

    def transform_one(self, x: np.ndarray) -> np.ndarray:
        """``x`` (d,) standardised with the current statistics, without learning; (d,)."""
        return np.multiply(np.subtract(x, self.mean, out=self._d1), self.inv_std)

    def transform_learn_one(self, x: np.ndarray) -> np.ndarray:
        """``x`` (d,) standardised with the current statistics, then added to them; (d,)."""
        d1 = np.subtract(x, self.mean, out=self._d1)  # x - mean_{t-1}
        z = np.multiply(d1, self.inv_std)
        self.n_seen += 1
        d2 = np.multiply(d1, 1.0 / self.n_seen, out=self._d2)
        self.mean += d2
        np.subtract(x, self.mean, out=d2)  # x - mean_t
        np.multiply(d1, d2, out=d1)
        self.m2 += d1
        self._refresh()
        return z

    def learn_one(self, x: np.ndarray) -> None:
        """Add one context ``x`` (d,) to the statistics (Welford)."""
        self.transform_learn_one(x)

    def transform_many(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` (n, d) standardised with the current statistics; a new (n, d)."""
        return (np.asarray(X, dtype=np.float64) - self.mean) * self.inv_std

    def learn_many(self, X: np.ndarray) -> None:
        """Add the rows of ``X`` (n, d) at once (Chan et al.'s merge; equals n learn_one)."""
        X = np.asarray(X, dtype=np.float64)
        n_b = X.shape[0]
        if n_b == 0:
            return
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


def make_scaler(standardize: bool, n_features: int, owner: str) -> RunningScaler | None:
    """A scaler for a learner's ``standardize`` parameter (validated), or None."""
    from opboost._validation import check_scalar

    check_scalar(standardize, "standardize", owner, kind=bool, fix="False feeds raw features")
    return RunningScaler(n_features) if standardize else None


def scale_one(scaler: RunningScaler | None, x: np.ndarray, learn: bool) -> np.ndarray:
    """``x`` (d,) standardised by ``scaler`` (then learnt if ``learn``); ``x`` if None."""
    if scaler is None:
        return x
    return scaler.transform_learn_one(x) if learn else scaler.transform_one(x)
