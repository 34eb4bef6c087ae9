"""Properties Algorithm 2 of Brukhim & Hazan (2021) relies on, checked numerically."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.online.brukhim_hazan import BrukhimHazanBoost
from opboost.api.loss_feedback import sample_unit_sphere, spherical_gradient
from opboost.simulation.loss_environment import LossEnvironment
from opboost.simulation.loss_runner import run_loss_feedback


def _train(booster, m, n=150, d=4, seed=0):
    """Train ``booster`` briefly on a random stream so its learners are non-trivial."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = rng.dirichlet(np.ones(m), size=n) if m > 1 else rng.uniform(0, 1, size=(n, 1))
    run_loss_feedback(booster, X, Y, random_state=seed)
    return rng.normal(size=(50, d)) * 3


@pytest.mark.parametrize(
    ("m", "label_set"),
    [
        pytest.param(1, "box", id="box-m1"),
        pytest.param(3, "box", id="box-m3"),
        pytest.param(4, "simplex", id="simplex-m4"),
    ],
)
def test_frank_wolfe_iterates_stay_in_label_set(m, label_set):
    """Every iterate y^1..y^N is a convex combination of learner outputs, hence in K."""
    booster = BrukhimHazanBoost(
        n_learners=8,
        n_outputs=m,
        label_set=label_set,
        lr=0.1,
        lr_decay=0.25,
        standardize=False,  # the learners' outputs below are computed on raw x
        random_state=0,
    )
    for x in _train(booster, m):
        it = booster.iterates_one(x)[1:]
        if label_set == "box":
            assert np.all((it >= -1e-12) & (it <= 1 + 1e-12))
        else:
            assert np.all(it >= -1e-12) and np.allclose(it.sum(axis=1), 1.0)
        outputs = booster._bank.predict(x)
        lo, hi = outputs.min(axis=0) - 1e-12, outputs.max(axis=0) + 1e-12
        assert np.all((it >= lo) & (it <= hi))  # inside the hull's bounding box


def test_spherical_estimator_unbiased_for_smoothed_quadratic():
    """E[(m/δ) l̃(y+δv) v] equals ∇l̂(y) = 2A(y-a) for a quadratic, noisy values (MC)."""
    rng = np.random.default_rng(0)
    m, delta, n = 3, 0.5, 400_000
    A = np.diag([1.0, 2.0, 0.5])
    a, y = np.array([0.2, -0.1, 0.4]), np.array([0.5, 0.3, -0.2])
    v = sample_unit_sphere(rng, n, m)
    pts = y + delta * v
    diff = pts - a
    losses = np.einsum("ij,jk,ik->i", diff, A, diff) + rng.uniform(-0.1, 0.1, n)
    g = spherical_gradient(losses, v, delta)
    se = g.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(g.mean(axis=0) - 2 * A @ (y - a)) < 4 * se)


def test_spherical_estimator_targets_smoothed_not_true_gradient():
    """For l(y)=|y| in 1-D the estimate's mean is y/δ (smoothed), not sign(y) (MC)."""
    rng = np.random.default_rng(1)
    delta, y, n = 0.5, 0.2, 200_000
    v = sample_unit_sphere(rng, n, 1)
    g = spherical_gradient(np.abs(y + delta * v[:, 0]), v, delta)[:, 0]
    se = g.std(ddof=1) / np.sqrt(n)
    assert abs(g.mean() - y / delta) < 4 * se
    assert abs(g.mean() - 1.0) > 10 * se


def test_environment_noise_is_zero_mean_and_bounded():
    """The feedback noise is within ±noise and has mean 0 (|mean| < 4 standard errors)."""
    env = LossEnvironment(np.zeros((1, 1)), noise=0.1, random_state=0)
    w = env.loss(0, np.zeros((100_000, 1)))
    assert np.abs(w).max() <= 0.1 and abs(w.mean()) < 4 * w.std() / np.sqrt(w.size)
