"""The default's rounds on small logs (``validation_fraction="auto"``): when the automatic
held-out choice applies, that DR scores it with the fit's own reward-model start (no second
reward model), and what it does where only the action matters and where contexts matter."""

from __future__ import annotations

import numpy as np
import pytest
from action_only_data import action_means, action_only_log

from opboost import Booster
from opboost.algorithms.estimators.direct import _RewardModelEstimator
from opboost.core.callbacks import Checkpoint, EarlyStopping, Progress
from opboost.core.resolve import (
    AUTO_MIN_ROUND,
    AUTO_SELECTION_ROWS,
    AUTO_VALIDATION_FRACTION,
    effective_round_choice,
)
from opboost.simulation.supervised import supervised_to_bandit

LGB = {"num_threads": 1}


def choice(booster=None, n_rows=2000, start="reward_model", rounds=100, pairs=False, cbs=()):
    booster = booster or Booster()
    return effective_round_choice(booster, n_rows, start, rounds, pairs=pairs, callbacks=cbs)


def test_auto_holds_out_small_logs_that_start_from_a_reward_model(tmp_path):
    small = choice()
    assert (small.fraction, small.selection, small.min_round) == (
        AUTO_VALIDATION_FRACTION,
        "dr",
        AUTO_MIN_ROUND,
    )
    for no_choice in (
        choice(n_rows=AUTO_SELECTION_ROWS),  # large logs keep every round
        choice(n_rows=None),  # logs elsewhere (Dask)
        choice(start=None),  # F_0 = 0: no start to score with
        choice(pairs=True),  # candidate pairs: items come and go
        choice(rounds=AUTO_MIN_ROUND),  # nothing to choose from
        choice(cbs=[EarlyStopping()]),  # the callback ends the rounds
        choice(cbs=[Checkpoint(tmp_path)]),  # the selection state is not checkpointed
    ):
        assert no_choice.fraction is None
    assert choice(cbs=[Progress()]).fraction == AUTO_VALIDATION_FRACTION
    assert choice(start=None).selection == "snips"
    assert choice(booster=Booster(safe=True), n_rows=50_000).fraction == AUTO_VALIDATION_FRACTION
    explicit = choice(booster=Booster(validation_fraction=0.3, selection="ips"))
    assert (explicit.fraction, explicit.selection, explicit.min_round) == (0.3, "ips", 0)
    assert choice(booster=Booster(validation_fraction=None)).fraction is None


def test_dr_selection_scores_with_the_start_and_fits_no_second_reward_model(monkeypatch):
    def refuse(self, data):
        raise AssertionError("the selection fitted a reward model of its own")

    monkeypatch.setattr(_RewardModelEstimator, "reward_predictions", refuse)
    log = action_only_log(0, n=1000)
    booster = Booster(random_state=0, n_rounds=20, base_learner_params=LGB).fit(log)
    assert booster.selection_["method"] == "dr"
    assert AUTO_MIN_ROUND <= booster.best_round_ <= 20
    assert booster.policy_.n_rounds == booster.best_round_
    # without a start, DR has nothing to reuse and fits its model
    with pytest.raises(AssertionError, match="a reward model of its own"):
        Booster(warm_start="none", validation_fraction=0.2, selection="dr", n_rounds=3).fit(log)


def test_only_the_action_matters_fewer_rounds_and_a_better_policy():
    """Rewards do not depend on the context: later rounds fit noise. The held-out choice keeps
    fewer of them, and on every seed its policy plays the best action more often than all
    100 rounds do."""
    means = action_means(4)
    for seed in range(3):
        log = action_only_log(seed, n=2000)
        X = np.random.default_rng(100 + seed).normal(size=(1000, 3))
        chosen = Booster(random_state=seed, base_learner_params=LGB).fit(log)
        every = Booster(random_state=seed, base_learner_params=LGB, validation_fraction=None)
        every.fit(log)
        assert chosen.best_round_ < every.n_rounds_ == 100
        assert means[chosen.predict(X)].mean() > means[every.predict(X)].mean()


def test_contexts_matter_the_learned_policy_stays(digits):
    sim = supervised_to_bandit(digits.X[:1400], digits.y[:1400], n_actions=10, random_state=0)
    booster = Booster(random_state=0, base_learner_params=LGB).fit(sim.logged)
    accuracy = np.mean(booster.predict(digits.X[1400:]) == digits.y[1400:])
    assert booster.best_round_ >= AUTO_MIN_ROUND
    assert booster.selection_["beats_constant"] and accuracy > 0.8  # the constant: about 0.1
