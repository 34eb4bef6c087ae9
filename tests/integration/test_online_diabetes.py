"""End to end on the bundled diabetes set: Algorithm 2 vs N-FKM from noisy loss values."""

from __future__ import annotations

import numpy as np

from opboost.algorithms.online.brukhim_hazan import BrukhimHazanBoost
from opboost.algorithms.online.fkm import NFKM
from opboost.simulation.datasets.bundled import Diabetes
from opboost.simulation.loss_runner import run_loss_feedback

SEEDS = range(5)
#: Matched hyper-parameters: same N queries per round, δ and step schedule for both.
#: X is z-scored offline below, so the learners' online scaler is off.
COMMON = {"delta": 0.5, "lr": 0.01, "lr_decay": 0.5, "label_set": "box", "standardize": False}


def _data():
    data = Diabetes().load()
    X = (data.X - data.X.mean(axis=0)) / data.X.std(axis=0)
    return X, data.y


def _second_half_loss(learner, X, y, seed):
    return run_loss_feedback(
        learner, X, y, noise=0.1, random_state=seed, shuffle=True, evaluate_from=0.5
    ).progressive_loss


def test_brukhim_hazan_beats_n_fkm_on_diabetes():
    """Boosting's second-half progressive loss beats N-FKM's on average and on >= 4/5 seeds."""
    X, y = _data()
    boost = np.array(
        [
            _second_half_loss(BrukhimHazanBoost(n_learners=10, random_state=s, **COMMON), X, y, s)
            for s in SEEDS
        ]
    )
    fkm = np.array(
        [_second_half_loss(NFKM(n_queries=10, random_state=s, **COMMON), X, y, s) for s in SEEDS]
    )
    assert boost.mean() < fkm.mean()
    assert (boost < fkm).sum() >= 4


def test_brukhim_hazan_learns_beyond_constant_prediction():
    """With a faster schedule boosting's second-half loss beats the best constant's."""
    X, y = _data()
    fast = {**COMMON, "lr": 0.03, "lr_decay": 0.25}
    losses = [
        _second_half_loss(BrukhimHazanBoost(n_learners=10, random_state=s, **fast), X, y, s)
        for s in SEEDS
    ]
    assert np.mean(losses) < 0.8 * np.var(y)
