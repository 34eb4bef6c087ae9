"""Banks of online binary weak learners for one-vs-rest bandit boosting.

Chen, Lin & Lu (2014) run N copies of an online binary learner on the one-vs-rest examples
((x, k), y_k). As in their Section 3, each learner i is K binary hypotheses
h^{(i)}(x, k) = h^{(i)}_k(x): the pair (x, k) is encoded by giving every class its own block
of parameters (Kesler's construction). A bank therefore holds K x N binary learners and
exposes them as arrays:

``predict(x) -> (K, N)``
    hypotheses h^{(i)}_k(x) in [-1, 1] (here: {-1, +1} labels).
``margins(x) -> (K, N)``
    real-valued confidences (perceptron score, naive Bayes log-odds) for margin decoding.
``learn(k, x, y, w, h_k)``
    update the N learners of class k on label y in {-1, +1} with per-learner weights w (N,);
    ``h_k`` is row k of the last ``predict`` (saves recomputing it).

The numpy banks update all N learners with array operations (no loop over learners).
:class:`RiverBank` wraps any river binary classifier, one model per (k, i).

Weighted learning. Gaussian naive Bayes uses the weights exactly (weighted sufficient
statistics). The perceptron has two modes: ``weighting="step"`` scales the perceptron step
by w_i; ``weighting="poisson"`` treats w_i as a multiplicity and learns the example
Poisson(w_i) times (Oza & Russell 2001), in closed form: repeated perceptron steps on one
example stop as soon as it is classified correctly. ``ChenBanditBoost`` uses
``"poisson"``, because its weights w = wbar / p_t(k) reach K / delta on explored classes
and a step scaled by K / delta lets each explored example overwrite hundreds of others.
River models whose ``learn_one`` accepts ``w`` get ``w=w_i``; others (e.g.
``naive_bayes.GaussianNB``) learn the example Poisson(w_i) times, with a seeded rng.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opboost.algorithms.online.naive_bayes_bank import GaussianNBBank
from opboost.algorithms.online.river_bank import RiverBank
from opboost.api.exceptions import InvalidParameterError

__all__ = [
    "BANKS",
    "AveragedPerceptronBank",
    "GaussianNBBank",
    "PassiveAggressiveBank",
    "PerceptronBank",
    "RiverBank",
    "make_bank",
]


_MAX_REPEATS = 16  # above this many needed steps, draw Poisson(w) with numpy instead
_EXP_BLOCK = 256  # rows of exponentials drawn at once by the Poisson weighting
_min, _max = np.minimum.reduce, np.maximum.reduce  # without the ndarray.min/max wrappers


class PerceptronBank:
    """K x N online perceptrons with weighted mistake-driven updates.

    Parameters: ``n_actions`` K, ``n_learners`` N, ``n_features`` d, ``rng`` (seeded
    Generator, also used for the Poisson draws), ``learning_rate`` (step size),
    ``init_scale`` (std of the random initial weights: the paper's "random h_1"),
    ``weighting``: ``"step"`` (an erring learner steps by w_i * learning_rate) or
    ``"poisson"`` (learner i learns the example Poisson(w_i) times, each time a plain
    perceptron step if it still errs).
    State: ``W`` (K, N, d) and ``b`` (K, N). Hypothesis h = sign(W[k, i] . x + b[k, i]).
    Stored feature-major: ``W`` is a view of ``_both`` (d, S, K, N) (S = 1 here, 2 with the
    averaged bank's ``U``), so one product ``x @ _both.reshape(d, S K N)`` scores every
    learner and a context's non-zero features select contiguous rows (the compiled step of
    :mod:`opboost.algorithms.online.perceptron_kernel` skips the zero ones).
    """

    def __init__(
        self,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        *,
        learning_rate: float = 1.0,
        init_scale: float = 0.01,
        weighting: str = "step",
    ) -> None:
        if weighting not in ("step", "poisson"):
            raise InvalidParameterError(
                f"The 'weighting' parameter of {type(self).__name__} must be 'step' or "
                f"'poisson'. Got {weighting!r} instead."
            )
        self.n_actions, self.n_learners, self.n_features = n_actions, n_learners, n_features
        self.learning_rate = learning_rate
        self.weighting = weighting
        self._rng = rng
        self._cache: tuple[Any, np.ndarray] = (None, np.empty(0))
        self._exp = np.empty((0, n_learners))  # buffered standard exponentials, by row
        self._exp_pos = 0
        W = rng.normal(0.0, init_scale, size=(n_actions, n_learners, n_features))
        b = rng.normal(0.0, init_scale, size=(n_actions, n_learners))
        self._both = np.zeros((n_features, self._STACKS, n_actions, n_learners))
        self._both[:, 0] = W.transpose(2, 0, 1)
        self._biases = np.zeros((self._STACKS, n_actions, n_learners))
        self._biases[0] = b
        self._link()

    _STACKS = 1  # weight sets stored in _both: W (and U for the averaged bank)
    _VIEWS: tuple[str, ...] = ("W", "b", "_flat")

    def _link(self) -> None:
        """(Re)build the views of the stored arrays (after a copy, which detaches views)."""
        self._flat = self._both.reshape(self.n_features, -1)  # (d, S K N)
        self.W = self._both[:, 0].transpose(1, 2, 0)
        self.b = self._biases[0]

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._link()

    def margins(self, x: np.ndarray) -> np.ndarray:
        """Scores W[k, i] . x + b[k, i], shape (K, N)."""
        scores = (x @ self._flat).reshape(self.n_actions, self.n_learners)
        scores += self.b
        return scores

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Hypotheses sign(score) in {-1, 0, +1}, shape (K, N) (0 only on an exact tie)."""
        scores = self.margins(x)
        self._cache = (x, scores)  # ``learn`` on the same x reuses the scores
        return np.sign(scores)

    def _signed_scores_k(self, k: int, x: np.ndarray, y: float) -> np.ndarray:
        """y * score of the N learners of class k on x, a new (N,) array (cached if fresh)."""
        cached_x, scores = self._cache
        if cached_x is x:
            return scores[k] * y
        out = x @ self._both[:, 0, k]
        out += self.b[k]
        out *= y
        return out

    def predict_batch(self, X: np.ndarray) -> np.ndarray:
        """Hypotheses for every row of X (n, d): shape (n, K, N)."""
        scores = (X @ self._flat).reshape(len(X), self.n_actions, self.n_learners)
        scores += self.b
        return np.sign(scores)

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """Update every learner of class k that erred (y * h <= 0), by ``weighting``.

        ``"poisson"``: learner i repeats the perceptron step on (x, y) r_i ~ Poisson(w_i)
        times, stopping once y * score > 0. One step adds y * lr * (|x|^2 + 1) to the
        score, so it takes n_i = floor(-y s_i / (lr (|x|^2 + 1))) + 1 steps to fix, and the
        update is min(r_i, n_i) steps, applied at once.
        """
        if self.weighting == "poisson":
            step = self._poisson_steps(k, x, y, w)
            if step is None:
                return
            if step.dtype == bool:  # one step each where True
                self._cache = (None, self._cache[1])
                scale = self.learning_rate * y  # dense: + x scale on steppers, + 0 elsewhere
                W_k = self._both[:, 0, k]
                W_k += np.multiply.outer(x * scale, step)
                self.b[k] += scale * step
                return
        else:
            step = y * h_k <= 0.0
            if not step.any():
                return
            step = step * w
        self._cache = (None, self._cache[1])
        step *= self.learning_rate * y
        self.W[k] += step[:, None] * x
        self.b[k] += step

    def _exponentials(self, m: int) -> np.ndarray:
        """m fresh rows (m, N) of standard exponentials, drawn in blocks from ``rng``."""
        pos = self._exp_pos
        if pos + m > len(self._exp):
            self._exp = self._rng.standard_exponential((max(_EXP_BLOCK, m), self.n_learners))
            pos = 0
        self._exp_pos = pos + m
        return self._exp[pos : pos + m]

    def _poisson_steps(self, k: int, x: np.ndarray, y: float, w: np.ndarray) -> np.ndarray | None:
        """Steps min(r_i, n_i), r_i ~ Poisson(w_i), n_i = steps learner i needs; (N,).

        Exact and cheap: r >= j iff S_j <= w for S_j a sum of j standard exponentials, so
        with m = max_i n_i (almost always 1, at most a few), counting the partial sums
        S_1..S_m that are <= w_i gives min(r_i, m). Past ``_MAX_REPEATS`` steps it draws
        Poisson(w) directly. A bool array when every step is 0 or 1 (the usual case), else
        float counts; None when no learner errs (y * score > 0 for all).
        """
        margin = self._signed_scores_k(k, x, y)  # y * score
        worst = _min(margin)
        if worst > 0.0:
            return None
        unit = self.learning_rate * (x @ x + 1.0)  # y * score gained by one step
        if worst > -unit:  # one step fixes every erring learner: min(r, 1) = 1[S_1 <= w]
            step = margin <= 0.0
            step &= self._exponentials(1)[0] <= w
            return step
        need = margin
        need *= -1.0 / unit
        np.floor(need, out=need)
        need += 1.0  # steps to classify (x, y) correctly; <= 0 where it already is
        m = int(_max(need))
        if m <= _MAX_REPEATS:
            arrivals = self._exponentials(m)
            np.add.accumulate(arrivals, axis=0, out=arrivals)  # S_1..S_m
            reps = np.add.reduce(arrivals <= w, axis=0)
        else:
            reps = self._rng.poisson(w)
        np.minimum(need, reps, out=need)
        np.maximum(need, 0.0, out=need)
        return need


class AveragedPerceptronBank(PerceptronBank):
    """K x N averaged perceptrons (Freund & Schapire 1999): learn like
    :class:`PerceptronBank`, predict with each learner's weights averaged over its updates.

    Learner (k, i) at its c-th example predicts with the mean of its c weight vectors so far,
    kept in O(1) per update by Daumé's trick: ``W_avg = W - U / c`` with ``U += c * dW``.
    Mistakes (and the Poisson steps) are judged by the current weights ``W``; the
    hypotheses h (votes and boosting weights) are the averaged ones. Same parameters as
    :class:`PerceptronBank`; extra state ``U`` (K, N, d), ``ub`` (K, N), ``count`` (K,).
    ``W`` and ``U`` are views of one feature-major (d, 2, K, N) array, so one product
    scores both.
    """

    def __init__(
        self,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        *,
        learning_rate: float = 1.0,
        init_scale: float = 0.01,
        weighting: str = "step",
    ) -> None:
        super().__init__(
            n_actions,
            n_learners,
            n_features,
            rng,
            learning_rate=learning_rate,
            init_scale=init_scale,
            weighting=weighting,
        )
        self.count = np.ones(n_actions)
        self._inv_count = np.ones((n_actions, n_learners))  # 1 / count, per (k, i)

    _STACKS = 2
    _VIEWS = ("W", "U", "b", "ub", "_flat")

    def _link(self) -> None:
        super()._link()
        self.U = self._both[:, 1].transpose(1, 2, 0)
        self.ub = self._biases[1]

    def _scores(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(current scores, averaged scores), each (K, N)."""
        both = (x @ self._flat).reshape(self._biases.shape)
        both += self._biases
        raw, correction = both
        correction *= self._inv_count
        return raw, raw - correction

    def margins(self, x: np.ndarray) -> np.ndarray:
        """Averaged scores, shape (K, N)."""
        return self._scores(x)[1]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Hypotheses sign(averaged score), shape (K, N)."""
        raw, averaged = self._scores(x)
        self._cache = (x, raw)  # ``learn`` judges mistakes by the current weights
        return np.sign(averaged)

    def predict_batch(self, X: np.ndarray) -> np.ndarray:
        """Hypotheses for every row of X (n, d): shape (n, K, N)."""
        inv = self._inv_count
        averaged = self._both[:, 0] - self._both[:, 1] * inv  # (d, K, N): W - U / count
        scores = (X @ averaged.reshape(self.n_features, -1)).reshape(len(X), *inv.shape)
        scores += self.b - self.ub * inv
        return np.sign(scores)

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """A :class:`PerceptronBank` step on class k, added to ``U`` times the count too."""
        c = self.count[k]
        self.count[k] = c + 1.0
        self._inv_count[k] = 1.0 / (c + 1.0)
        if self.weighting == "poisson":
            step = self._poisson_steps(k, x, y, w)
            if step is None:
                return
        else:  # mistakes of the current weights, not of the averaged h_k
            step = self._signed_scores_k(k, x, y) <= 0.0
            if not step.any():
                return
            step = step * w
        self._cache = (None, self._cache[1])
        scale = self.learning_rate * y
        if step.dtype == bool:  # one step each where True: W and U at once, stepping learners
            coef = np.array([scale, scale * c])
            both = self._both[:, :, k]  # dense: + x coef on steppers, + 0 elsewhere
            both += np.multiply.outer(np.multiply.outer(x, coef), step)
            biases = self._biases[:, k]
            biases += np.multiply.outer(coef, step)
            return
        step *= scale
        delta = np.multiply.outer(step, x)
        self.W[k] += delta
        self.b[k] += step
        delta *= c
        self.U[k] += delta
        self.ub[k] += c * step


class PassiveAggressiveBank(PerceptronBank):
    """K x N passive-aggressive (PA-I, Crammer et al. 2006) learners, margin-driven.

    Same state as :class:`PerceptronBank`; ``learn`` takes the hinge loss
    l = max(0, 1 - y s) of the score s (not only sign mistakes) and steps
    tau = min(C w_i, l / (||x||^2 + 1)) along y [x, 1].
    """

    def __init__(
        self,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        *,
        C: float = 1.0,
        init_scale: float = 0.0,
    ) -> None:
        super().__init__(n_actions, n_learners, n_features, rng, init_scale=init_scale)
        self.C = C

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """PA-I step on every learner of class k with positive hinge loss; weights cap tau."""
        loss = np.maximum(0.0, 1.0 - y * (self.W[k] @ x + self.b[k]))
        if loss.any():
            tau = np.minimum(self.C * w, loss / (x @ x + 1.0)) * y
            self.W[k] += np.multiply.outer(tau, x)
            self.b[k] += tau


#: Names of the numpy banks accepted as ``weak_learner``.
BANKS: dict[str, type] = {
    "perceptron": PerceptronBank,
    "averaged_perceptron": AveragedPerceptronBank,
    "passive_aggressive": PassiveAggressiveBank,
    "gaussian_nb": GaussianNBBank,
}


def make_bank(
    spec: str,
    n_actions: int,
    n_learners: int,
    n_features: int,
    rng: np.random.Generator,
    params: dict[str, Any] | None = None,
    owner: str = "bank",
) -> PerceptronBank | GaussianNBBank | RiverBank:
    """Build the bank named ``spec``: "perceptron", "gaussian_nb" or "river:<module>.<Class>"."""
    params = dict(params or {})
    if isinstance(spec, str) and spec.startswith("river:"):
        return RiverBank(spec[len("river:") :], n_actions, n_learners, n_features, rng, **params)
    if spec not in BANKS:
        raise InvalidParameterError(
            f"The 'weak_learner' parameter of {owner} must be one of {sorted(BANKS)} or "
            f"'river:<module>.<Class>'. Got {spec!r} instead; e.g. "
            f"weak_learner='river:naive_bayes.GaussianNB'."
        )
    try:
        return BANKS[spec](n_actions, n_learners, n_features, rng, **params)
    except TypeError as err:
        raise InvalidParameterError(
            f"The 'weak_learner_params' parameter of {owner} has a key that weak learner "
            f"{spec!r} does not accept ({err}). Got {params!r} instead."
        ) from err
