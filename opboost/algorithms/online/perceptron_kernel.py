"""Compiled steps of ``chen_bandit_boost`` over a bank of (averaged) perceptrons.

Optional: used when numba is importable (``pip install "opboost[fast]"``) and the learner's
``engine`` allows it. The numpy code (:mod:`opboost.algorithms.online.weak_learners`, the scaler and
:class:`~opboost.algorithms.online.chen_bandit_boost.ChenBanditBoost`) is the reference and the
fallback. The kernels read and write the bank's and the scaler's own arrays in place,
follow the numpy code operation by operation and consume the same random numbers; they
differ only by floating-point reassociation (dot products summed in another order, libm's
``exp``), which ``tests/unit/test_online_chen_kernel.py`` bounds at 1e-12.

One example costs two calls: :func:`score` (standardise, then all K x N learners, skipping
zero features) and :func:`learn` (eqs. 2-4, eq. 6, the Poisson perceptron steps of class
k). Shapes: K actions, N learners, d features, S = 2 stacked weight sets for the averaged
perceptron (W, U), 1 for the plain one; weights are feature-major, (d, S, K, N).
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np

__all__ = ["HAVE_NUMBA", "PerceptronKernel"]

#: numba is importable (it is imported, and the kernels compiled, by the first kernel built).
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
_MAX_REPEATS = 16  # as opboost.algorithms.online.weak_learners: above this, Poisson draws in numpy
_compiled = False


def score(both, biases, inv_count, alpha, x, centre, inv_std, row, z, jitter, work, f):
    """Standardise x (d,) into z (d,) and copy x to the scaler's buffer ``row`` (both only
    when ``row`` is non-empty; else z = x), then score every learner on z: work[0] (K, N)
    current scores, work[1] (K, N) signs of the averaged (S = 2) or current scores, f (K,)
    votes sum_i alpha_ki h_ki. Returns H_t = argmax_k f_k + jitter_k."""
    d, S, K, N = both.shape
    if row.shape[0]:
        for j in range(d):
            z[j] = (x[j] - centre[j]) * inv_std[j]
            row[j] = x[j]
    else:
        for j in range(d):
            z[j] = x[j]
    raw, hyp, corr = work[0], work[1], work[2]
    raw[:] = 0.0
    corr[:] = 0.0
    for j in range(d):  # feature j's weights: S K N contiguous numbers
        zj = z[j]
        if zj == 0.0:
            continue
        for k in range(K):
            for i in range(N):
                raw[k, i] += both[j, 0, k, i] * zj
            if S == 2:
                for i in range(N):
                    corr[k, i] += both[j, 1, k, i] * zj
    top, best = 0, -np.inf
    for k in range(K):
        fk = 0.0
        for i in range(N):
            s = raw[k, i] + biases[0, k, i]
            raw[k, i] = s
            if S == 2:
                s = s - (corr[k, i] + biases[1, k, i]) * inv_count[k, i]
            h = 1.0 if s > 0.0 else (-1.0 if s < 0.0 else 0.0)
            hyp[k, i] = h
            fk += alpha[k, i] * h
        f[k] = fk
        if fk + jitter[k] > best:
            top, best = k, fk + jitter[k]
    return top


def apply_steps(k, z, steps, one_step, scale, c, both, biases):
    """Perceptron steps of class k: learner i moves steps[i] times along scale * [z, 1]
    (U by c times that); ``one_step`` (steps in {0, 1}) follows the numpy bank's masked
    update, the other branch its multi-step arithmetic."""
    d, S, N = both.shape[0], both.shape[1], both.shape[3]
    for j in range(d):
        zj = z[j]
        if zj == 0.0:
            continue
        if one_step:
            dw, du = scale * zj, (scale * c) * zj
            for i in range(N):
                if steps[i] != 0.0:
                    both[j, 0, k, i] += dw
                    if S == 2:
                        both[j, 1, k, i] += du
        else:
            for i in range(N):
                if steps[i] != 0.0:
                    delta = (steps[i] * scale) * zj
                    both[j, 0, k, i] += delta
                    if S == 2:
                        both[j, 1, k, i] += delta * c
    for i in range(N):
        if steps[i] != 0.0:
            s = scale if one_step else steps[i] * scale
            biases[0, k, i] += s
            if S == 2:
                biases[1, k, i] += (scale * c) if one_step else c * s


def _weights(wn, v0, n):
    """w (wn[1]) of eqs. 2-4 for learners 0..n-1 from their log-weights v (wn[0])."""
    for i in range(n):
        wn[1, i] = math.exp(min(wn[0, i], v0))


def learn(k, y, p, work, f, z, alpha, params, both, biases, count, inv_count, exps, pos, wn):
    """One step of Algorithm 1 on class k with label y (+-1), p = p_t(k), after
    :func:`score` filled ``work`` and f; in place.

    params = (log(1 - gamma) / 2, theta, eta, perceptron learning rate). wn (3, N): the log
    weights v, the weights w of eqs. 2-4 (only where used, all when handing back) and the
    margins y * score or needed step counts. Returns the next row of the arrivals ``exps``
    (rows, N) when it held the m rows needed, else -m: numpy then draws m rows (or, past 16
    steps, Poisson counts) and :meth:`PerceptronKernel._finish` applies them.
    """
    raw, hyp = work[0], work[1]
    N = both.shape[3]
    log_decay, theta, eta, lr = params[0], params[1], params[2], params[3]
    # eqs. 3, 2, 4 in logs: log w_i = min{v_i, v_1}, v the running sum of
    # [-log p, lam (y h_1 - theta), ..., lam (y h_{N-1} - theta)]
    v, w, need = wn[0], wn[1], wn[2]
    ly, lt = log_decay * y, log_decay * theta
    v[0] = -math.log(p)
    for i in range(1, N):
        v[i] = v[i - 1] + (hyp[k, i - 1] * ly - lt)
    v0 = v[0]
    # eq. 6 with alpha_tk and h_tk before the weak learners move; h in {-1, 0, 1}
    if theta - y * f[k] > 0.0:
        g = eta * y / p
        up, down = math.exp(g), math.exp(-g)
        total = 0.0
        for i in range(N):
            h = hyp[k, i]
            if h != 0.0:
                alpha[k, i] *= up if h > 0.0 else down
            total += alpha[k, i]
        for i in range(N):
            alpha[k, i] /= total
    c = 1.0
    if both.shape[1] == 2:
        c = count[k]
        count[k] = c + 1.0
        inv = 1.0 / (c + 1.0)
        for i in range(N):
            inv_count[k, i] = inv
    # Poisson(w_i) perceptron steps, stopping once y * score > 0 (current weights)
    worst = np.inf
    for i in range(N):
        need[i] = raw[k, i] * y
        worst = min(worst, need[i])
    if worst > 0.0:
        return pos
    xx = 0.0
    for j in range(z.shape[0]):
        xx += z[j] * z[j]
    unit = lr * (xx + 1.0)
    if worst > -unit:  # one step fixes every erring learner: min(r, 1) = 1[S_1 <= w]
        if pos + 1 > exps.shape[0]:
            _weights(wn, v0, N)
            return -1
        for i in range(N):
            step = 0.0
            if need[i] <= 0.0:
                w[i] = math.exp(min(v[i], v0))
                if exps[pos, i] <= w[i]:
                    step = 1.0
            need[i] = step
        apply_steps(k, z, need, True, lr * y, c, both, biases)
        return pos + 1
    m = 0.0
    scale = -1.0 / unit
    for i in range(N):
        need[i] = math.floor(need[i] * scale) + 1.0
        m = max(m, need[i])
    mi = int(m)
    if mi > _MAX_REPEATS or pos + mi > exps.shape[0]:
        _weights(wn, v0, N)
        return -mi
    for i in range(N):
        if need[i] <= 0.0:
            need[i] = 0.0
            continue
        w[i] = math.exp(min(v[i], v0))
        total, reps = 0.0, 0.0
        for r in range(mi):
            total += exps[pos + r, i]
            if total <= w[i]:
                reps += 1.0
        need[i] = min(need[i], reps)
    apply_steps(k, z, need, False, lr * y, c, both, biases)
    return pos + mi


def _compile() -> None:
    """Replace the kernels by their numba versions (cached on disk: compiled once)."""
    global _compiled, score, apply_steps, _weights, learn
    if not _compiled:
        import numba

        jit = numba.njit(cache=True, nogil=True)
        score, apply_steps, _weights, learn = map(jit, (score, apply_steps, _weights, learn))
        _compiled = True


class PerceptronKernel:
    """The compiled step over a :class:`~opboost.algorithms.online.weak_learners.PerceptronBank` (or
    its averaged subclass) with ``weighting="poisson"`` and an optional
    :class:`~opboost.algorithms.online.scaling.RunningScaler`, with preallocated buffers.

    ``scores(x, alpha, jitter) -> H_t`` standardises x (and adds it to the scaler), filling
    ``z`` (d,), ``raw`` and ``hyp`` (K, N) and ``f`` (K,); ``learn(k, y, p, alpha)`` then
    applies eqs. 2-4, 6 and the bank's update to the same context.
    """

    def __init__(self, bank: Any, scaler: Any, params: tuple[float, float, float]) -> None:
        _compile()
        self.bank, self.scaler = bank, scaler
        K, N, d = bank.W.shape
        averaged = hasattr(bank, "U")
        self._both, self._biases = bank._both, bank._biases
        self._count = bank.count if averaged else np.ones(K)
        self._inv_count = bank._inv_count if averaged else np.ones((K, N))
        self.params = np.array([*params, bank.learning_rate], dtype=np.float64)
        self.work, self.f, self.z = np.empty((3, K, N)), np.empty(K), np.empty(d)
        self.raw, self.hyp = self.work[0], self.work[1]
        self._wn = np.empty((3, N))
        self.w = self._wn[1]
        self._no_row = np.empty(0)
        self._unit = np.ones(d)

    def scores(self, x: np.ndarray, alpha: np.ndarray, jitter: np.ndarray) -> int:
        """Standardise x (d,) into ``z``, add it to the scaler, score it; returns H_t."""
        sc = self.scaler
        if sc is None:
            return score(
                self._both, self._biases, self._inv_count, alpha, x, x, x, self._no_row,
                self.z, jitter, self.work, self.f,
            )  # fmt: skip
        top = score(
            self._both, self._biases, self._inv_count, alpha, x, sc.centre, sc.inv_std,
            sc.next_row(), self.z, jitter, self.work, self.f,
        )  # fmt: skip
        sc.count_buffered()
        return top

    def scores_fresh(
        self, z: np.ndarray, alpha: np.ndarray, jitter: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """(hyp (K, N), f (K,), H_t) of an already standardised z (d,), in new arrays (the
        buffers ``learn`` reads stay as they are)."""
        work, f = np.empty_like(self.work), np.empty_like(self.f)
        top = score(
            self._both, self._biases, self._inv_count, alpha, z, z, z, self._no_row,
            np.empty_like(z), jitter, work, f,
        )  # fmt: skip
        return work[1], f, top

    def learn(self, k: int, y: float, p: float, alpha: np.ndarray) -> None:
        """Eqs. 2-4 and 6 and the Poisson steps of class k, after :meth:`scores`."""
        bank = self.bank
        bank._cache = (None, bank._cache[1])
        pos = learn(
            k, y, p, self.work, self.f, self.z, alpha, self.params, self._both,
            self._biases, self._count, self._inv_count, bank._exp, bank._exp_pos, self._wn,
        )  # fmt: skip
        if pos >= 0:
            bank._exp_pos = pos
        else:
            self._finish(k, y, -pos)

    def _finish(self, k: int, y: float, m: int) -> None:
        """The rare steps the kernel hands back: the arrivals buffer ran out, or a learner
        needs more than 16 steps (Poisson draws); the same draws as the numpy bank."""
        bank, w, need = self.bank, self._wn[1], self._wn[2]
        c = self._count[k] - 1.0 if self._both.shape[1] == 2 else 1.0
        scale = bank.learning_rate * y
        if m == 1:  # ``need`` holds the margins y * score
            step = (need <= 0.0) & (bank._exponentials(1)[0] <= w)
            apply_steps(k, self.z, step.astype(np.float64), True, scale, c, *self._state())
            return
        if m <= _MAX_REPEATS:
            arrivals = bank._exponentials(m)
            np.add.accumulate(arrivals, axis=0, out=arrivals)
            reps = np.add.reduce(arrivals <= w, axis=0)
        else:
            reps = bank._rng.poisson(w)
        np.minimum(need, reps, out=need)
        np.maximum(need, 0.0, out=need)
        apply_steps(k, self.z, need, False, scale, c, *self._state())

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        return self._both, self._biases
