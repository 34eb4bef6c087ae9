"""Bandit boosting with online binary weak learners (Chen, Lin & Lu 2014, Algorithm 1).

N online binary weak learners each hold one hypothesis per class, h^{(i)}_{tk}(x) =
h^{(i)}_t(x, k) in [-1, 1] (one-vs-rest examples ((x, k), y_tk), y_tk = +1 iff y = k).
At step t, for context x_t:

- scores f_tk = sum_i alpha^{(i)}_tk h^{(i)}_tk(x_t); H_t = argmax_k f_tk;
- exploration: p_t(k) = (1 - delta) 1[k = H_t] + delta / K; sample yhat_t ~ p_t;
- feedback: only the reward of yhat_t; y_tk for k = yhat_t is +1 iff reward > 0.5
  (i.e. 1[yhat_t = y_t] under 0/1 reward);
- example weights (eqs. 2-4), for k = yhat_t only (they are 0 for every other k):
  z^{(i-1)} = sum_{j<i} (y_tk h^{(j)}_tk(x_t) - theta), theta = gamma / (2 + gamma)   (3)
  wbar^{(i)} = min{(1 - gamma)^{z^{(i-1)}/2}, 1}                                    (2)
  w^{(i)} = wbar^{(i)} / p_t(k)                                                      (4)
  and weak learner i is updated on ((x_t, k), y_tk) with weight w^{(i)} (Algorithm 1);
  the perceptron bank reads w^{(i)} as a multiplicity (Poisson(w^{(i)}) repeated steps);
- voting weights (eq. 6), on the simplex per class: with the hinge loss
  L_tk(alpha) = max{0, theta - y_tk sum_i alpha^{(i)} h^{(i)}_tk(x_t)} and the estimated
  subgradient l_tk = grad L_tk(alpha_tk) / p_t(k) if yhat_t = k (else 0),
  alpha^{(i)}_{(t+1)k} = alpha^{(i)}_tk exp(-eta l^{(i)}_tk) / Z_{(t+1)k}, eta = delta^3 / K.

Claim 1: E[w^{(i)}_tk] = E[wbar^{(i)}_tk] (tested in tests/property/test_chen_claims.py).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.parameters import BANDIT, N_LEARNERS, OPTIONAL_DICT, WEAK_LEARNER
from opboost.algorithms.online.perceptron_kernel import HAVE_NUMBA, PerceptronKernel
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.algorithms.online.weak_learners import (
    AveragedPerceptronBank,
    PerceptronBank,
    make_bank,
)
from opboost.api.bandit import BanditLearner, as_context
from opboost.api.constraints import Interval, Options
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state

__all__ = ["ENGINES", "ChenBanditBoost", "example_weights"]

_BUFFER = 4096  # uniforms drawn per refill of the sampling buffer
_TIE = 1e-9  # scale of the random jitter that breaks ties of f_tk
_F64 = np.dtype(np.float64)
ENGINES = ("auto", "numpy", "numba")


def example_weights(h: np.ndarray, y: float, gamma: float, p: float) -> np.ndarray:
    """The weights w^{(i)} (N,) of eqs. 2-4 for the chosen class, given its hypotheses h (N,).

    ``y`` is y_tk in {-1, +1}, ``p`` is p_t(k), the probability the class was chosen.
    """
    theta = gamma / (2.0 + gamma)
    z = np.concatenate(([0.0], np.cumsum(y * h - theta)[:-1]))  # z^{(i-1)}, eq. 3
    wbar = np.minimum((1.0 - gamma) ** (z / 2.0), 1.0)  # eq. 2
    return wbar / p  # eq. 4


class ChenBanditBoost(BanditLearner):
    """Bandit boosting of online binary weak learners (Chen, Lin & Lu 2014, Algorithm 1).

    Parameters
    ----------
    n_actions
        number of classes/actions K (required, >= 2).
    n_learners
        number of weak learners N (paper's experiments: 100).
    weak_learner
        "averaged_perceptron" (default), "perceptron", "passive_aggressive",
        "gaussian_nb" (vectorised numpy banks) or "river:<module>.<Class>", e.g.
        "river:linear_model.LogisticRegression" or "river:tree.HoeffdingTreeClassifier".
    weak_learner_params
        keyword arguments for the bank / river model. For the
        perceptrons the default is ``{"weighting": "poisson"}``: learner i learns the
        example Poisson(w_i) times (Oza & Russell 2001) rather than stepping by w_i.
    delta
        exploration rate delta in (0, 1). The paper's grid is 0.01 to 0.1; the default
        0.003 (with gamma = 0.05 and averaged perceptrons) is the best of
        {0.003, 0.005, 0.01} x {0.05, 0.1} on Car, Nursery, DNA, Connect-4 and
        ImageSegments (docs/benchmarks/online.md).
    gamma
        assumed weak-learner advantage gamma in (0, 1/2) (paper: 0.1); sets
        theta = gamma / (2 + gamma).
    learning_rate
        eta of eq. 6; None uses the paper's delta^3 / K.
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        when ``predict_one`` acts on it): ``"auto"`` centres at the running mean except two-valued
        features (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw
        features.
    random_state
        seed of the initial hypotheses and of the exploration.
    engine
        "auto" (default) runs the compiled step of
        ``perceptron_kernel`` when numba is installed
        (``pip install "opboost[fast]"``) and the weak learners are perceptrons with Poisson
        weighting, else numpy; "numpy" always runs the numpy reference; "numba" requires the
        compiled step. Both consume the same random numbers and differ only by
        floating-point reassociation.

    Notes
    -----
    Fitted state: ``alpha_`` (K, N) voting weights (each row on the simplex), ``bank_``,
    ``scaler_`` (None when ``standardize=False``), ``n_features_in_``, ``n_updates_``.
    """

    name: ClassVar[str] = "chen_bandit_boost"

    _parameter_constraints: ClassVar[dict] = {
        **BANDIT,
        "n_learners": N_LEARNERS("the paper uses n_learners=100"),
        "weak_learner": WEAK_LEARNER,
        "weak_learner_params": OPTIONAL_DICT,
        "delta": [
            Interval(Real, 0.0, 1.0, closed="neither", fix="the paper uses delta in [0.01, 0.1]")
        ],
        "gamma": [Interval(Real, 0.0, 0.5, closed="neither", fix="the paper uses gamma=0.1")],
        "learning_rate": [
            Interval(Real, 0.0, None, fix="use None for the paper's delta**3 / n_actions"),
            None,
        ],
        "engine": [Options(ENGINES, fix='"numpy" runs without numba')],
    }

    _in_shape: tuple[int] | None = None  # (d,) once the first context fixed d
    _kernel: PerceptronKernel | None = None

    def __init__(
        self,
        *,
        n_actions: int = 2,
        n_learners: int = 100,
        weak_learner: str = "averaged_perceptron",
        weak_learner_params: dict | None = None,
        delta: float = 0.003,
        gamma: float = 0.05,
        learning_rate: float | None = None,
        standardize: str | bool = "auto",
        random_state: int | None = None,
        engine: str = "auto",
    ) -> None:
        self.n_actions = n_actions
        self.n_learners = n_learners
        self.weak_learner = weak_learner
        self.weak_learner_params = weak_learner_params
        self.delta = delta
        self.gamma = gamma
        self.learning_rate = learning_rate
        self.standardize = standardize
        self.random_state = random_state
        self.engine = engine

    # --- setup ------------------------------------------------------------------------------

    def _setup(self, n_features: int) -> None:
        owner = type(self).__name__
        self.validate_params()
        K, N = int(self.n_actions), int(self.n_learners)
        self.scaler_ = make_scaler(self.standardize, n_features, owner)
        self._rng = check_random_state(self.random_state)
        params = dict(self.weak_learner_params or {})
        if self.weak_learner in ("perceptron", "averaged_perceptron"):
            # w reaches K / delta on explored classes: a perceptron step scaled by w lets one
            # explored example overwrite hundreds of others. Weights are multiplicities.
            params.setdefault("weighting", "poisson")
        self.bank_ = make_bank(self.weak_learner, K, N, n_features, self._rng, params, owner)
        self.alpha_ = np.full((K, N), 1.0 / N)
        self.n_features_in_ = n_features
        self.n_updates_ = 0
        self._K, self._N = K, N
        self._delta = float(self.delta)
        self._explore = self._delta / K
        self._theta = self.gamma / (2.0 + self.gamma)
        self._log_decay = 0.5 * math.log(1.0 - self.gamma)
        eta = self.learning_rate
        self._eta = self._delta**3 / K if eta is None else float(eta)
        self._v = np.zeros(N)  # buffer for the log weights of eqs. 2-4
        self._v_tail = self._v[1:]
        self._refill()
        self._last_x: Any = None
        self._kernel = self._make_kernel(owner)
        self._in_shape = (n_features,)

    def _make_kernel(self, owner: str) -> PerceptronKernel | None:
        """The compiled step when ``engine`` and the weak learners allow it, else None."""
        bank = self.bank_
        fits = type(bank) in (PerceptronBank, AveragedPerceptronBank) and (
            bank.weighting == "poisson"
        )
        if self.engine == "numba" and not (HAVE_NUMBA and fits):
            why = "numba is not installed" if not HAVE_NUMBA else "it needs perceptrons"
            raise InvalidParameterError(
                f"The 'engine' parameter of {owner} is 'numba' but {why} (weak_learner="
                f"{self.weak_learner!r}). Got engine='numba'; use engine='auto' or 'numpy', "
                f'or pip install "opboost[fast]".'
            )
        if self.engine == "numpy" or not (HAVE_NUMBA and fits):
            return None
        try:
            return PerceptronKernel(
                self.bank_, self.scaler_, (self._log_decay, self._theta, self._eta)
            )
        except ImportError:  # numba found but not importable (e.g. too new a numpy)
            if self.engine == "numba":
                raise
            return None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_kernel", "_v_tail")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "bank_" in state:  # a copy gets its own compiled step and views of its own arrays
            self._v_tail = self._v[1:]
            self._kernel = self._make_kernel(type(self).__name__)

    def _context(self, x: Any) -> np.ndarray:
        """``x`` as a checked (d,) float64 array; the first context builds the model."""
        if type(x) is np.ndarray and x.dtype is _F64 and x.shape == self._in_shape:
            return x
        if self._in_shape is None:
            self._setup(as_context(x, None, type(self).__name__).shape[0])
        return as_context(x, self.n_features_in_, type(self).__name__)

    def _prepare(self, x: Any, learn: bool = False) -> np.ndarray:
        """``x`` as a (d,) array, standardised; ``learn`` adds it to the scaler first."""
        x = self._context(x)  # before reading scaler_: the first context builds it
        return scale_one(self.scaler_, x, learn)

    def _observe(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(z (d,), hyp (K, N), f (K,), H_t) of context x, which joins the scaler."""
        x = self._context(x)
        if self._u_pos == _BUFFER:
            self._refill()
        kernel = self._kernel
        if kernel is not None:
            top = kernel.scores(x, self.alpha_, self._jitter[self._u_pos])
            return kernel.z, kernel.hyp, kernel.f, top
        arr = scale_one(self.scaler_, x, True)
        return (arr, *self._scores(arr))

    def _refill(self) -> None:
        self._uniform = self._rng.random(_BUFFER)
        self._jitter = self._rng.random((_BUFFER, self._K)) * _TIE
        self._u_pos = 0

    def _next_uniform(self) -> float:
        if self._u_pos == _BUFFER:
            self._refill()
        u = self._uniform[self._u_pos]
        self._u_pos += 1
        return float(u)

    # --- protocol ---------------------------------------------------------------------------

    def _scores(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """(hyp (K, N), f (K,), H_t) of a standardised context x (d,)."""
        if self._u_pos == _BUFFER:
            self._refill()
        if self._kernel is not None:
            return self._kernel.scores_fresh(x, self.alpha_, self._jitter[self._u_pos])
        hyp = self.bank_.predict(x)  # (K, N): h^{(i)}_tk(x_t)
        f = np.vecdot(self.alpha_, hyp)  # f_tk
        # H_t(x_t) = argmax_k f_tk; votes tie often (f is a mean of signs), so ties are
        # broken uniformly at random by a seeded jitter far below the vote resolution.
        top = int((f + self._jitter[self._u_pos]).argmax())
        return hyp, f, top

    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """p_t (K,): 1 - delta + delta/K on H_t(x), delta/K elsewhere (Algorithm 1).

        When several classes tie for argmax_k f_tk, H_t is drawn uniformly among them and
        the 1 - delta is split evenly (this marginal is what ``predict_one`` samples from).
        ``learn_one`` uses p_t(k) given the drawn H_t, as in the paper: the estimator of
        eq. 4 is unbiased conditionally on H_t, hence also marginally (Claim 1).
        """
        f = self._scores(self._prepare(x))[1]
        ties = f >= f.max() - _TIE
        probs = np.full(self._K, self._explore)
        probs[ties] += (1.0 - self._delta) / ties.sum()
        return probs

    def predict_one(self, x: np.ndarray) -> int:
        """Sample yhat_t ~ p_t: H_t(x) w.p. 1 - delta, a uniform class w.p. delta."""
        arr, hyp, f, top = self._observe(x)
        self._last_x, self._last_arr, self._last = x, arr, (hyp, f, top)
        u = self._next_uniform()
        if u < self._delta:  # u / delta is uniform on [0, 1): reuse it for the class
            return min(int(u / self._delta * self._K), self._K - 1)
        return top

    def greedy_action_one(self) -> int | None:
        """H_t(x_t) of the last ``predict_one``: the argmax class before exploration."""
        return None if self._last_x is None else self._last[2]

    def predict_many(self, X: np.ndarray) -> np.ndarray:
        """Sample one action per row of X (n, d) with the current (frozen) model; (n,)."""
        X = np.asarray(X, dtype=np.float64)
        self._prepare(X[0])
        if self.scaler_ is not None:
            X = self.scaler_.transform_many(X)
        hyp = self.bank_.predict_batch(X)  # (n, K, N)
        top = np.einsum("mkn,kn->mk", hyp, self.alpha_).argmax(axis=1)
        u = self._rng.random(len(X))
        explore = u < self._delta
        random_class = np.minimum((u / self._delta * self._K).astype(np.int64), self._K - 1)
        return np.where(explore, random_class, top)

    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        """One step of Algorithm 1 after the reward of ``action`` (= yhat_t) is revealed."""
        if x is self._last_x and x is not None:
            arr, (hyp, f, top) = self._last_arr, self._last
        else:
            arr, hyp, f, top = self._observe(x)
        K = self._K
        k = action if type(action) is int and 0 <= action < K else self._check_action(action, K)
        y = 1.0 if reward > 0.5 else -1.0  # y_tk for k = yhat_t
        p = self._explore + (1.0 - self._delta) * (k == top)  # p_t(k)
        if self._kernel is not None:  # the same step, compiled (perceptron_kernel)
            self._kernel.learn(k, y, p, self.alpha_)
            self.n_updates_ += 1
            self._last_x = None
            return
        h = hyp[k]
        # eq. 3: z^{(i-1)} = sum_{j<i} (y h^{(j)} - theta); eq. 2: wbar = min{(1-gamma)^{z/2}, 1};
        # eq. 4: w = wbar / p. In logs, with lam = log(1 - gamma) / 2 < 0:
        # log w^{(i)} = min{lam z^{(i-1)}, 0} - log p = min{v_i, v_1}, where v is the running
        # sum of [-log p, lam (y h^{(1)} - theta), ..., lam (y h^{(N-1)} - theta)].
        v, v_tail = self._v, self._v_tail
        v[0] = -math.log(p)
        np.multiply(h[:-1], self._log_decay * y, out=v_tail)
        v_tail -= self._log_decay * self._theta
        np.add.accumulate(v, out=v)
        w = np.exp(np.minimum(v, v[0], out=v))
        # eq. 6 uses alpha_tk and h_tk, i.e. before the weak learners move.
        if self._theta - y * f[k] > 0.0:  # hinge active: grad L = -y h, l = grad / p
            alpha_k = self.alpha_[k]
            alpha_k *= np.exp((self._eta * y / p) * h)
            alpha_k /= np.add.reduce(alpha_k)
        self.bank_.learn(k, arr, y, w, h)
        self.n_updates_ += 1
        self._last_x = None

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_actions": 3, "n_learners": 5, "random_state": 0}
