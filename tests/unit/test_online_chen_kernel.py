"""ChenBanditBoost's vectorised and compiled steps against a plain reference of Algorithm 1.

The reference below loops over classes, learners and features, with the perceptron weak
learners' Poisson weighting written as "min(needed steps, arrivals S_r <= w_i)", and reads
the random numbers the learner drew (exploration uniforms, tie jitter, exponential
arrivals) from the learner's own buffers. Every state array must agree to 1e-12 after
every step, for the numpy engine and the compiled (numba) one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from opboost.algorithms.online import ChenBanditBoost
from opboost.api.exceptions import InvalidParameterError

ENGINES = ["numpy", "numba"]  # numba is a dependency of opboost
K, N, D = 3, 7, 5


def _stream(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sparse contexts (some features exactly 0) and labels a linear rule mostly follows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * (rng.random((n, D)) < 0.6)
    y = np.argmax(X[:, :K] + 0.3 * rng.normal(size=(n, K)), axis=1)
    return X, y


class Reference:
    """Algorithm 1 with (averaged) perceptrons, written out loop by loop from the paper."""

    def __init__(self, learner: ChenBanditBoost) -> None:
        bank = learner.bank_
        self.averaged = hasattr(bank, "U")
        self.W, self.b = bank.W.tolist(), bank.b.tolist()
        self.U = bank.U.tolist() if self.averaged else None
        self.ub = bank.ub.tolist() if self.averaged else None
        self.count = [1.0] * K
        self.alpha = learner.alpha_.tolist()
        self.delta, self.gamma, self.eta = learner.delta, learner.gamma, learner._eta
        self.lr = bank.learning_rate

    def scores(self, x: list[float]) -> tuple[list[list[float]], list[list[float]]]:
        """(current scores, hypotheses h = sign of the (averaged) score), each K x N."""
        raw = [[sum(w * v for w, v in zip(self.W[k][i], x, strict=True)) + self.b[k][i]
                for i in range(N)] for k in range(K)]  # fmt: skip
        hyp = []
        for k in range(K):
            row = []
            for i in range(N):
                s = raw[k][i]
                if self.averaged:  # mean of the weight vectors so far: W - U / count
                    u = sum(a * v for a, v in zip(self.U[k][i], x, strict=True)) + self.ub[k][i]
                    s -= u / self.count[k]
                row.append(float(np.sign(s)))
            hyp.append(row)
        return raw, hyp

    def step(self, x, label, uniform, jitter, arrivals) -> tuple[int, int]:
        """(H_t, played action); ``arrivals(m)`` returns the m x N exponentials used."""
        x = list(x)
        raw, hyp = self.scores(x)
        f = [sum(a * h for a, h in zip(self.alpha[k], hyp[k], strict=True)) for k in range(K)]
        top = int(np.argmax([f[k] + jitter[k] for k in range(K)]))
        u = uniform
        action = min(int(u / self.delta * K), K - 1) if u < self.delta else top
        k = action
        y = 1.0 if action == label else -1.0
        p = self.delta / K + (1.0 - self.delta) * (k == top)
        theta = self.gamma / (2.0 + self.gamma)
        # eqs. 3, 2, 4
        w, z = [], 0.0
        for i in range(N):
            w.append(min((1.0 - self.gamma) ** (z / 2.0), 1.0) / p)
            z += y * hyp[k][i] - theta
        # eq. 6: hinge loss max{0, theta - y sum_i alpha_i h_i}, subgradient -y h / p
        if theta - y * f[k] > 0.0:
            a = [self.alpha[k][i] * math.exp(-self.eta * (-y * hyp[k][i] / p)) for i in range(N)]
            self.alpha[k] = [v / sum(a) for v in a]
        # weak learners: learner i repeats the perceptron step r_i ~ Poisson(w_i) times,
        # stopping once it classifies (x, y) correctly: min(r_i, n_i) steps
        c = self.count[k]
        self.count[k] = c + 1.0
        margins = [y * raw[k][i] for i in range(N)]
        if min(margins) > 0.0:
            return top, action
        unit = self.lr * (sum(v * v for v in x) + 1.0)
        need = [math.floor(-m / unit) + 1 if m <= 0.0 else 0 for m in margins]
        E = arrivals(max(need))
        for i in range(N):
            r, total = 0, 0.0
            for row in E:
                total += row[i]
                r += total <= w[i]
            steps = min(need[i], r) * self.lr * y
            self.W[k][i] = [wj + steps * v for wj, v in zip(self.W[k][i], x, strict=True)]
            self.b[k][i] += steps
            if self.averaged:  # U accumulates count * dW (Daume's trick)
                self.U[k][i] = [uj + c * steps * v for uj, v in zip(self.U[k][i], x, strict=True)]
                self.ub[k][i] += c * steps
        return top, action

    def check(self, learner: ChenBanditBoost) -> None:
        bank = learner.bank_
        close = {"rtol": 1e-12, "atol": 1e-12}
        np.testing.assert_allclose(bank.W, self.W, **close)
        np.testing.assert_allclose(bank.b, self.b, **close)
        np.testing.assert_allclose(learner.alpha_, self.alpha, **close)
        if self.averaged:
            np.testing.assert_allclose(bank.U, self.U, **close)
            np.testing.assert_allclose(bank.ub, self.ub, **close)
            np.testing.assert_array_equal(bank.count, self.count)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("weak_learner", ["averaged_perceptron", "perceptron"])
def test_step_matches_the_plain_reference(engine, weak_learner):
    """Each predict_one/learn_one equals the loop-by-loop Algorithm 1 to 1e-12."""
    X, labels = _stream(300)
    learner = ChenBanditBoost(
        n_actions=K, n_learners=N, weak_learner=weak_learner, delta=0.2, gamma=0.1,
        learning_rate=0.5, standardize=False, random_state=3, engine=engine,
    )  # fmt: skip
    learner.predict_one(X[0])  # builds the bank; this row is not learnt
    ref = Reference(learner)
    bank, moved = learner.bank_, 0
    for x, label in zip(X[1:], labels[1:], strict=True):
        uniform, jitter = learner._uniform[learner._u_pos], learner._jitter[learner._u_pos]
        block, pos = bank._exp, bank._exp_pos
        rows = block[pos : pos + 16].tolist()  # a copy: the numpy bank sums them in place

        def arrivals(m, block=block, rows=rows):
            if bank._exp is block:  # the next m rows of the block
                return rows[:m]
            assert bank._exp_pos == m, "a refill serves m rows from the start of a new block"
            return bank._exp[:m].tolist()

        action = learner.predict_one(x)
        greedy = learner.greedy_action_one()
        learner.learn_one(x, action, float(action == label))
        top, ref_action = ref.step(x, label, uniform, jitter, arrivals)
        assert (action, greedy) == (ref_action, top)
        ref.check(learner)
        moved += action != top
    assert moved > 10  # exploration happened, so the eq. 4 weights took both branches
    assert np.ptp(learner.alpha_) > 1e-3  # eq. 6 moved the votes


@pytest.mark.parametrize("standardize", ["auto", "mean", False])
def test_compiled_step_equals_numpy_with_the_scaler(standardize):
    """engine='numba' plays the same actions as engine='numpy' on a scaled stream, with the
    same state to 1e-12, through action_probs_one, predict_many and learn_many too."""
    X, labels = _stream(400, seed=1)
    X[:, 0] = X[:, 0] > 0  # an indicator column: 'auto' keeps its zeros
    learners = {
        e: ChenBanditBoost(n_actions=K, n_learners=N, delta=0.1, standardize=standardize,
                           random_state=5, engine=e)
        for e in ("numpy", "numba")
    }  # fmt: skip
    for x, label in zip(X[:300], labels[:300], strict=True):
        got = {}
        for e, learner in learners.items():
            action = learner.predict_one(x)
            probs = learner.action_probs_one(x)
            learner.learn_one(x, action, float(action == label))
            got[e] = (action, probs)
        assert got["numpy"][0] == got["numba"][0]
        np.testing.assert_allclose(got["numpy"][1], got["numba"][1], atol=1e-12)
    a, b = learners["numpy"], learners["numba"]
    assert b._kernel is not None and a._kernel is None
    for e in learners.values():
        e.learn_many(X[300:], e.predict_many(X[300:]), np.ones(100))
    for name in ("W", "U", "b", "ub", "count"):
        np.testing.assert_allclose(getattr(a.bank_, name), getattr(b.bank_, name), atol=1e-12)
    np.testing.assert_allclose(a.alpha_, b.alpha_, atol=1e-12)


def test_engine_numba_is_refused_when_it_cannot_run(monkeypatch):
    """engine='numba' names what is missing: perceptron weak learners, or numba itself (an
    environment where it cannot be imported, simulated); 'auto' then runs the numpy step."""
    import opboost.algorithms.online.chen_bandit_boost as chen

    learner = ChenBanditBoost(n_actions=3, weak_learner="gaussian_nb", engine="numba")
    with pytest.raises(InvalidParameterError, match="it needs perceptrons"):
        learner.predict_one(np.ones(4))
    monkeypatch.setattr(chen, "HAVE_NUMBA", False)
    with pytest.raises(InvalidParameterError, match="numba is not installed"):
        ChenBanditBoost(n_actions=3, engine="numba").predict_one(np.ones(4))
    auto = ChenBanditBoost(n_actions=3, random_state=0)
    auto.predict_one(np.ones(4))
    assert auto._kernel is None
    with pytest.raises(InvalidParameterError, match="engine"):
        ChenBanditBoost(n_actions=3, engine="fast").predict_one(np.ones(4))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("weak_learner", ["averaged_perceptron", "perceptron"])
def test_copy_mid_stream_learns_like_the_original(engine, weak_learner):
    """A deep copy (or pickle) keeps the banks' weight views tied to their storage, so the
    copy and the original go on learning identically."""
    import copy
    import pickle

    X, labels = _stream(200, seed=2)
    learner = ChenBanditBoost(n_actions=K, n_learners=N, weak_learner=weak_learner,
                              delta=0.2, random_state=0, engine=engine)  # fmt: skip
    for x, label in zip(X[:50], labels[:50], strict=True):
        action = learner.predict_one(x)
        learner.learn_one(x, action, float(action == label))
    copies = [copy.deepcopy(learner), pickle.loads(pickle.dumps(learner)), learner]
    runs = []
    for c in copies:
        actions = [c.predict_one(x) for x in X[50:51]]
        for x, label in zip(X[50:], labels[50:], strict=True):
            action = c.predict_one(x)
            c.learn_one(x, action, float(action == label))
            actions.append(action)
        assert np.shares_memory(c.bank_.W, c.bank_._both)
        runs.append((actions, c.bank_.W.copy(), c.alpha_.copy()))
    for actions, W, alpha in runs[:2]:
        assert actions == runs[2][0]
        np.testing.assert_array_equal(W, runs[2][1])
        np.testing.assert_array_equal(alpha, runs[2][2])
