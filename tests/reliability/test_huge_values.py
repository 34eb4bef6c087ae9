"""Huge finite values either fit or are refused naming the field and the fix (issue 40:
contexts scaled to 1e300 gave LinAlgError from the reward-model start; rewards of 1e308
gave "invalid training coefficients" without naming the rewards)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from opboost import Booster, LoggedBandit
from opboost.compose.choice import PolicyChoice

FAST = {"n_rounds": 3, "base_learner_params": {"num_threads": 1}}


def _logs(contexts=None, rewards=None, n: int = 200, k: int = 3) -> LoggedBandit:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) if contexts is None else contexts(rng.normal(size=(n, 3)))
    r = rng.random(n) if rewards is None else rewards(rng.random(n))
    return LoggedBandit(X, rng.integers(0, k, n), np.full(n, 1 / k), r, k)


@pytest.mark.parametrize(
    ("contexts", "largest"),
    [
        (lambda X: X * 1e300, "3.9e+300"),
        (lambda X: np.where(X > 0, 1e308, -1e308), "1e+308"),
    ],
    ids=["scaled_1e300", "plus_minus_1e308"],
)
def test_huge_contexts_fit_from_the_reward_model_start_with_trees(contexts, largest):
    """The default fit (the reward-model start) works: the linear family, whose Gram matrix
    would overflow, is skipped with the reason recorded; scores are finite. PolicyChoice too."""
    logs = _logs(contexts)
    booster = Booster(random_state=0, **FAST).fit(logs)
    assert booster.reward_start_["linear_skipped"] == (
        f"context values up to {largest}, above 1e+100 (squares overflow)"
    )
    assert booster.reward_start_["family"] == "trees"
    assert np.isfinite(booster.decision_function(logs.contexts)).all()
    choice = PolicyChoice(booster_params=FAST, random_state=0).fit(logs)
    assert np.isfinite(choice.decision_function(logs.contexts)).all()


@pytest.mark.parametrize("estimator", ["ips", "dr"])
def test_rewards_of_1e308_are_refused_naming_the_rewards_and_the_fix(estimator):
    """Rewards of +-1e308 over propensities 1/3 overflow the training coefficients: the error
    names the rewards, their range and the rescaling that fixes it."""
    logs = _logs(rewards=lambda r: np.where(r > 0.5, 1e308, -1e308))
    message = (
        f"Booster.fit: estimator '{estimator}' gave non-finite training coefficients: the "
        f"rewards reach |r| = 1e+308 and the propensities go down to 0.333, and rewards over "
        f"propensities overflow float64. Rescale the rewards, e.g. divide them by 1e+308 (the "
        f"best policy is unchanged)."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Booster(estimator=estimator, warm_start="none", random_state=0, **FAST).fit(logs)
