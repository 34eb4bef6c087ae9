"""Weak-learner banks of bandit boosting: the averaged perceptron and river weak learners."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.online import ChenBanditBoost
from opboost.algorithms.online.weak_learners import AveragedPerceptronBank, make_bank
from opboost.api.exceptions import InvalidParameterError
from opboost.simulation import run_bandit


@pytest.mark.parametrize("weighting", ["step", "poisson"])
def test_averaged_perceptron_predicts_with_the_mean_of_its_weight_history(weighting):
    """After T learn calls on class k, its scores use the mean of W_0..W_T (and b)."""
    rng = np.random.default_rng(0)
    bank = AveragedPerceptronBank(2, 3, 4, np.random.default_rng(1), weighting=weighting)
    history = {0: [bank.W[0].copy()], 1: [bank.W[1].copy()]}
    bias = {0: [bank.b[0].copy()], 1: [bank.b[1].copy()]}
    for _ in range(25):
        x = rng.normal(size=4)
        k = int(rng.integers(2))
        h = bank.predict(x)
        bank.learn(k, x, float(rng.choice([-1.0, 1.0])), rng.uniform(0.5, 3.0, size=3), h[k])
        history[k].append(bank.W[k].copy())
        bias[k].append(bank.b[k].copy())
    x = rng.normal(size=4)
    expected = np.stack(
        [np.mean(history[k], axis=0) @ x + np.mean(bias[k], axis=0) for k in (0, 1)]
    )
    np.testing.assert_allclose(bank.margins(x), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(bank.predict(x), np.sign(expected))
    np.testing.assert_array_equal(bank.predict_batch(x[None])[0], np.sign(expected))
    assert len(history[0]) > 5 and len(history[1]) > 5  # both classes learnt


def test_averaged_perceptron_judges_mistakes_by_current_weights():
    """Its W moves exactly as a PerceptronBank's with the same rng (averaging is read-only)."""
    from opboost.algorithms.online.weak_learners import PerceptronBank

    rng = np.random.default_rng(2)
    avg = AveragedPerceptronBank(3, 5, 4, np.random.default_rng(7), weighting="poisson")
    plain = PerceptronBank(3, 5, 4, np.random.default_rng(7), weighting="poisson")
    for _ in range(40):
        x, k, y = rng.normal(size=4), int(rng.integers(3)), float(rng.choice([-1.0, 1.0]))
        w = rng.uniform(0.1, 5.0, size=5)
        avg.learn(k, x, y, w, avg.predict(x)[k])
        plain.learn(k, x, y, w, plain.predict(x)[k])
    np.testing.assert_allclose(avg.W, plain.W)
    np.testing.assert_allclose(avg.b, plain.b)


@pytest.mark.parametrize(
    "spec",
    [
        "averaged_perceptron",
        "river:linear_model.LogisticRegression",
        "river:linear_model.PAClassifier",
        "river:tree.HoeffdingTreeClassifier",
    ],
)
def test_chen_runs_each_weak_learner(spec):
    """ChenBanditBoost learns a 2-class stream with every offered weak learner (> 0.6)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    learner = ChenBanditBoost(
        n_actions=2, n_learners=5, delta=0.05, weak_learner=spec, random_state=0
    )
    assert run_bandit(learner, X, y, random_state=0).mean_reward > 0.6


def test_river_weak_learner_weighting_follows_its_signature():
    """Models whose learn_one takes w get weights; the others get Poisson repeats."""
    rng = np.random.default_rng(0)
    lr = make_bank("river:linear_model.LogisticRegression", 2, 2, 3, rng)
    pa = make_bank("river:linear_model.PAClassifier", 2, 2, 3, rng)
    assert lr.weighted and not pa.weighted


def test_unknown_weak_learner_message():
    """An unknown bank name lists the known ones."""
    with pytest.raises(
        InvalidParameterError,
        match=r"The 'weak_learner' parameter of ChenBanditBoost must be one of "
        r"\['averaged_perceptron', 'gaussian_nb', 'passive_aggressive', 'perceptron'\] or "
        r"'river:<module>.<Class>'. Got 'tree' instead",
    ):
        ChenBanditBoost(n_actions=2, weak_learner="tree").predict_one(np.zeros(2))


def test_banditron_update_is_unbiased_for_the_perceptron_update():
    """E[U~] = x (e_y - e_yhat)^T (Kakade et al. 2008, Lemma 4): the Banditron is not below
    the majority class on Car by a bug; its estimate is right, only noisy
    (docs/benchmarks/online.md)."""
    from opboost.algorithms.online import Banditron

    rng = np.random.default_rng(0)
    x, label = rng.normal(size=3), 2
    learner = Banditron(n_actions=4, gamma=0.3, standardize=False, random_state=0)
    learner.predict_one(x)
    learner.coef_[:] = rng.normal(size=learner.coef_.shape)
    xb = np.append(x, 1.0)
    top = int(np.argmax(learner.coef_ @ xb))
    assert top != label  # the full-information update is non-zero
    expected = np.zeros_like(learner.coef_)
    expected[label] += xb
    expected[top] -= xb
    trials, total = 20_000, np.zeros_like(learner.coef_)
    before = learner.coef_.copy()
    for _ in range(trials):  # each trial from the same W
        action = learner.predict_one(x)
        learner.learn_one(x, action, float(action == label))
        total += learner.coef_ - before
        learner.coef_[:] = before
    # the update on class `label` is xb * K/gamma w.p. gamma/K: std ~ |xb| sqrt(K/gamma/trials)
    np.testing.assert_allclose(total / trials, expected, atol=0.15)
