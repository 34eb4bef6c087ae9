"""The default's rounds (``validation_fraction="auto"``): when the paired held-out rule
applies, that DR scores it with the fit's own reward-model start (no second reward model),
and what it keeps: the start alone where the start fits the reward exactly, the rounds where
they clearly pay, the best constant action where every model is clearly worse."""

from __future__ import annotations

import numpy as np
import pytest
from action_only_data import action_means, action_only_log

from opboost import Booster
from opboost.algorithms.estimators.direct import _RewardModelEstimator
from opboost.algorithms.learners.lightgbm_reward_start import MIN_HOLDOUT_ROWS_FOR_COUNT
from opboost.api.callback import Callback
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.core.callbacks import Checkpoint, EarlyStopping, Progress
from opboost.core.resolve import (
    AUTO_PAIRED_CONFIDENCE,
    AUTO_PATIENCE,
    AUTO_VALIDATION_FRACTION,
    effective_round_choice,
)
from opboost.simulation.supervised import supervised_to_bandit

LGB = {"num_threads": 1}


def choice(booster=None, n_rows=2000, start="reward_model", rounds=100, pairs=False, cbs=()):
    booster = booster or Booster()
    return effective_round_choice(booster, n_rows, start, rounds, pairs=pairs, callbacks=cbs)


def test_auto_applies_the_paired_rule_at_every_log_size_after_a_reward_model_start(tmp_path):
    paired = (AUTO_VALIDATION_FRACTION, "dr", AUTO_PAIRED_CONFIDENCE, AUTO_PATIENCE)
    for n_rows in (100, 2000, 40_000, 1_000_000):
        small = choice(n_rows=n_rows)
        assert (small.fraction, small.selection, small.paired, small.patience) == paired
    for no_choice in (
        choice(n_rows=None),  # logs elsewhere (Dask)
        choice(start=None),  # F_0 = 0: no start to compare with
        choice(pairs=True),  # candidate pairs: items come and go
        choice(rounds=0),  # nothing to choose from
        choice(cbs=[EarlyStopping()]),  # the callback ends the rounds
        choice(cbs=[EarlyStopping(), Checkpoint(tmp_path)]),  # the user's own choice
    ):
        assert no_choice.fraction is None
    # the choice's state is checkpointed: a Checkpoint changes nothing (and warns of nothing)
    assert choice(cbs=[Checkpoint(tmp_path)]).paired == AUTO_PAIRED_CONFIDENCE
    assert choice(cbs=[Progress()]).fraction == AUTO_VALIDATION_FRACTION
    assert choice(start=None).selection == "snips"
    safe = choice(booster=Booster(safe=True), start=None)
    assert (safe.fraction, safe.paired) == (AUTO_VALIDATION_FRACTION, None)
    explicit = choice(booster=Booster(validation_fraction=0.3, selection="ips"))
    assert (explicit.fraction, explicit.selection, explicit.paired) == (0.3, "ips", None)
    assert choice(booster=Booster(validation_fraction=None)).fraction is None


def test_dr_selection_scores_with_the_start_and_fits_no_second_reward_model(monkeypatch):
    def refuse(self, data):
        raise AssertionError("the selection fitted a reward model of its own")

    monkeypatch.setattr(_RewardModelEstimator, "reward_predictions", refuse)
    # the DR reduction challenger fits a reward model of its own, as it must: not this test's
    monkeypatch.setattr("opboost.core.resolve.AUTO_CHALLENGERS", ())
    log = action_only_log(0, n=1000)
    booster = Booster(random_state=0, n_rounds=20, base_learner_params=LGB).fit(log)
    assert booster.selection_["method"] == "dr"
    assert booster.policy_.n_rounds == booster.best_round_
    # without a start, DR has nothing to reuse and fits its model
    with pytest.raises(AssertionError, match="a reward model of its own"):
        Booster(warm_start="none", validation_fraction=0.2, selection="dr", n_rounds=3).fit(log)


def linear_log(
    seed: int, n: int = 3000, k: int = 4, noise: float = 0.0
) -> tuple[LoggedBandit, np.ndarray]:
    """Uniformly logged rewards linear in x for every action, plus ``noise`` (sd): without
    it the start's linear family fits them exactly; the weights (3, k)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    W = np.random.default_rng(99).normal(size=(3, k))
    actions = rng.integers(k, size=n)
    rewards = (X @ W)[np.arange(n), actions] + noise * rng.normal(size=n)
    return LoggedBandit(X, actions, np.full(n, 1.0 / k), rewards, n_actions=k), W


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_start_that_fits_the_reward_exactly_is_kept_alone_and_refitted_on_every_row(seed):
    log, W = linear_log(seed)
    booster = Booster(random_state=seed, base_learner_params=LGB).fit(log)
    report = booster.selection_
    assert booster.best_round_ == 0 and booster.fallback_ is None
    assert report["rounds_gain_low"] <= 0 and report["refit_rounds"] == 0
    # the rounds stopped AUTO_PATIENCE rounds after their best held-out round
    assert booster.n_rounds_ == report["best_tried"] + AUTO_PATIENCE < 100
    X = np.random.default_rng(7).normal(size=(2000, 3))
    means = X @ W
    value = means[np.arange(len(X)), booster.predict(X)].mean()
    assert value >= means.max(axis=1).mean() - 0.005  # the best policy, within 0.005


def noisy_log(seed: int, n: int) -> LoggedBandit:
    """Rewards that are noise around an action effect, uniformly logged over 4 actions."""
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 4, n)
    rewards = 0.2 * actions + rng.normal(scale=3.0, size=n)
    return LoggedBandit(rng.normal(size=(n, 6)), actions, np.full(n, 0.25), rewards, n_actions=4)


def test_the_refit_fits_the_start_its_held_out_fit_was_judged_with():
    """5,500 logged rows: the held-out fit's start (on 4,400 rows, 880 of them held out) keeps
    200 trees, and a start chosen again on all 5,500 rows (1,100 held out) would follow its
    held-out count instead. The refit repeats the start the rounds were judged against:
    200 trees, not 2 x its own count as before (its family it chooses again, on more rows)."""
    booster = Booster(random_state=0, base_learner_params=LGB).fit(noisy_log(1, 5_500))
    chosen, refitted = booster.reward_start_, booster.policy_.metadata["reward_start"]
    assert chosen["holdout_rows"] < MIN_HOLDOUT_ROWS_FOR_COUNT and chosen["trees"] == 200
    assert refitted["repeated"] == {"family": "auto", "count": False}
    assert refitted["holdout_rows"] == 1_100 >= MIN_HOLDOUT_ROWS_FOR_COUNT
    assert refitted["family"] == "trees" and refitted["holdout_trees"]["trees"] < 50
    assert refitted["trees"] == 200 and not refitted["trees_follow_count"]
    params = booster.policy_.metadata["base_learner_params"]
    assert params["reward_start"] == refitted["repeated"] and params["num_threads"] == 1
    assert booster.base_learner_params == LGB  # the user's parameters are left as they were


def confounded_log(seed: int, n: int = 8000) -> LoggedBandit:
    """Two actions; an unobserved u in {0, 1} drives both the logger (action 1 with
    probability 0.8 when u = 1, 0.2 when u = 0: the true propensities) and the reward u + 0.2
    [a = 0]. Action 0 is best for everyone by 0.2, but a reward model of (x, a) sees action 1
    logged where u = 1 and learns q(x, 1) = 0.8 > q(x, 0) = 0.4: the start is biased; IPS-
    weighted rounds and SNIPS's constant action are not."""
    rng = np.random.default_rng(seed)
    u = rng.random(n) < 0.5
    p1 = np.where(u, 0.8, 0.2)
    actions = (rng.random(n) < p1).astype(np.int64)
    rewards = u + 0.2 * (actions == 0) + 0.1 * rng.normal(size=n)
    propensities = np.where(actions == 1, p1, 1.0 - p1)
    return LoggedBandit(rng.normal(size=(n, 3)), actions, propensities, rewards, n_actions=2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rounds_that_clearly_beat_a_biased_start_are_kept(seed):
    booster = Booster(random_state=seed, base_learner_params=LGB).fit(confounded_log(seed))
    report = booster.selection_
    assert report["best_tried"] > 0 and report["rounds_gain_low"] > 0
    X = np.random.default_rng(7).normal(size=(1000, 3))
    assert np.mean(booster.predict(X) == 0) > 0.7  # the start plays action 1 everywhere
    if booster.fallback_ is None:
        assert booster.best_round_ == report["best_tried"] == booster.policy_.n_rounds


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_constant_action_replaces_every_model_that_is_clearly_worse(seed):
    """Two rounds cannot undo the biased start; the constant's paired gain is clear."""
    log = confounded_log(seed)
    booster = Booster(random_state=seed, n_rounds=2, base_learner_params=LGB).fit(log)
    assert booster.fallback_ == "constant" and booster.selection_["constant_gain_low"] > 0
    assert booster.selection_["constant_action"] == 0
    assert np.all(booster.predict(np.zeros((5, 3))) == 0)


def test_only_the_action_matters_fewer_rounds_and_a_policy_as_good():
    """Rewards do not depend on the context: later rounds fit noise. The held-out choice keeps
    fewer of them, and on every seed its policy plays the best action at least as often as
    all 100 rounds do."""
    means = action_means(4)
    for seed in range(3):
        log = action_only_log(seed, n=2000)
        X = np.random.default_rng(100 + seed).normal(size=(1000, 3))
        chosen = Booster(random_state=seed, base_learner_params=LGB).fit(log)
        every = Booster(random_state=seed, base_learner_params=LGB, validation_fraction=None)
        every.fit(log)
        assert chosen.best_round_ < every.n_rounds_ == 100
        assert means[chosen.predict(X)].mean() >= means[every.predict(X)].mean()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contexts_matter_the_learned_policy_stays(digits, seed):
    """On 1,400 logged digits rows the kept policy (the start alone where the rounds do not
    clearly gain, else the rounds) is within 0.02 of all 100 rounds' accuracy, far above the
    best constant action's (about 0.1)."""
    sim = supervised_to_bandit(digits.X[:1400], digits.y[:1400], n_actions=10, random_state=seed)
    chosen = Booster(random_state=seed, base_learner_params=LGB).fit(sim.logged)
    every = Booster(random_state=seed, base_learner_params=LGB, validation_fraction=None)
    every.fit(sim.logged)
    X, y = digits.X[1400:], digits.y[1400:]
    accuracy = np.mean(chosen.predict(X) == y)
    assert accuracy > 0.8 and accuracy >= np.mean(every.predict(X) == y) - 0.02
    assert chosen.selection_["beats_constant"] and chosen.fallback_ is None
    if chosen.best_round_ > 0:
        assert chosen.selection_["rounds_gain_low"] > 0


def test_zero_rounds_is_the_start_alone_and_needs_a_start():
    log, _ = linear_log(0, n=600)
    alone = Booster(random_state=0, n_rounds=0, base_learner_params=LGB).fit(log)
    assert alone.n_rounds_ == 0 and alone.policy_.n_rounds == 0
    assert alone.reward_start_ is not None
    with pytest.raises(InvalidParameterError, match=r"n_rounds=0 keeps only the start F_0"):
        Booster(n_rounds=0, warm_start="none").fit(log)


def test_a_fit_that_ends_at_its_start_scores_no_training_pair(monkeypatch):
    """``n_rounds=0`` without evaluation rows (a default fit's refit of the start alone):
    nothing reads F_0 on the n*K training pairs, so LightGBM does not score them (they were
    most of a 100,000-row refit's time), and the scale is read off q on at most
    ``SCALE_CONTEXTS`` contexts: the same model, the same actions, a scale within 1%."""
    import lightgbm as lgb

    from opboost.algorithms.learners.lightgbm_start_hooks import SCALE_CONTEXTS

    scored = []
    add_valid = lgb.Booster.add_valid

    def spy(self, data, name):
        scored.extend([name] if name == "pairs" else [])  # not the held-out fits' rows
        return add_valid(self, data, name)

    monkeypatch.setattr(lgb.Booster, "add_valid", spy)
    log, _ = linear_log(0, n=3 * SCALE_CONTEXTS, noise=0.5)
    alone = Booster(random_state=0, n_rounds=0, base_learner_params=LGB).fit(log)
    assert scored == [] and alone.reward_start_["trees"] > 0
    eval_logs, _ = linear_log(1, n=200, noise=0.5)  # evaluation rows: F_0 is read, and scored
    read = Booster(random_state=0, n_rounds=0, base_learner_params=LGB)
    read.fit(log, eval_data=eval_logs)
    assert scored == ["pairs"]
    X = np.random.default_rng(7).normal(size=(500, 3))
    q_alone = alone.decision_function(X) / alone.reward_start_["scale"]
    q_read = read.decision_function(X) / read.reward_start_["scale"]
    np.testing.assert_allclose(q_alone, q_read, rtol=1e-9, atol=1e-9)
    assert np.array_equal(alone.predict(X), read.predict(X))
    assert alone.reward_start_["scale"] == pytest.approx(read.reward_start_["scale"], rel=0.01)
    scored.clear()
    default = Booster(random_state=0, base_learner_params=LGB).fit(linear_log(0)[0])
    assert default.best_round_ == 0 and scored == ["pairs"]  # the held-out fit's start only


class Crash(Callback):
    """Kills the fit (as a KeyboardInterrupt would) at the end of round ``at``."""

    name = "crash"

    def __init__(self, at: int) -> None:
        self.at = at

    def on_round_end(self, env) -> None:
        if env.round == self.at:
            raise KeyboardInterrupt(f"killed at round {self.at}")


SNIPS_QUARTER = {"validation_fraction": 0.25, "selection": "snips"}


@pytest.mark.parametrize(
    ("logs", "settings", "crash_at"),
    [
        ("confounded", {}, 3),  # the best round (10) after the resume
        ("action_only", {}, 7),  # the best (5) before it: restored, not recomputed
        ("linear", SNIPS_QUARTER, 7),  # the highest estimate (round 4) before it
    ],
)
def test_a_fit_killed_and_resumed_from_its_checkpoint_chooses_as_an_uninterrupted_one(
    tmp_path, logs, settings, crash_at
):
    """The held-out choice's state is checkpointed with the rounds (the default's paired rule
    and an explicit validation_fraction): killed after a checkpoint (every 2 rounds) and run
    again, the fit keeps the same round or fallback with the same held-out estimates and
    serves the same policy. Before, a Checkpoint turned the default's choice off (with a
    warning, which pytest makes an error here) and an explicit validation_fraction could not
    resume."""
    log = {
        "confounded": lambda: confounded_log(0, n=3000),
        "action_only": lambda: action_only_log(0, n=1500),
        "linear": lambda: linear_log(0)[0],
    }[logs]()
    params = {"random_state": 0, "n_rounds": 10, "base_learner_params": LGB, **settings}
    whole = Booster(**params).fit(log)
    with pytest.raises(KeyboardInterrupt):
        Booster(**params).fit(log, callbacks=[Checkpoint(tmp_path, every=2), Crash(crash_at)])
    resumed = Booster(**params).fit(log, callbacks=[Checkpoint(tmp_path, every=2)])
    assert (resumed.best_round_, resumed.fallback_) == (whole.best_round_, whole.fallback_)
    for key, value in whole.selection_.items():
        if isinstance(value, float):
            assert resumed.selection_[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        else:
            assert resumed.selection_[key] == value, key
    assert resumed.reward_start_ == whole.reward_start_
    X = log.contexts[:500]
    np.testing.assert_allclose(resumed.decision_function(X), whole.decision_function(X),
                               rtol=0, atol=1e-9)  # fmt: skip
    np.testing.assert_array_equal(resumed.predict(X), whole.predict(X))


def test_a_resumed_fit_keeps_what_its_reward_model_start_chose(tmp_path):
    """``reward_start_`` (and the policy's metadata "reward_start": the start's trees,
    held-out errors and scale) was None after a resume: the checkpoint did not store it."""
    log = action_only_log(0, n=600)
    params = {"random_state": 0, "n_rounds": 6, "base_learner_params": LGB}
    params["validation_fraction"] = None
    whole = Booster(**params).fit(log)
    with pytest.raises(KeyboardInterrupt):
        Booster(**params).fit(log, callbacks=[Checkpoint(tmp_path, every=2), Crash(3)])
    resumed = Booster(**params).fit(log, callbacks=[Checkpoint(tmp_path, every=2)])
    assert whole.reward_start_ is not None
    assert resumed.reward_start_ == whole.reward_start_
    assert resumed.policy_.metadata["reward_start"] == whole.policy_.metadata["reward_start"]


def test_resuming_a_held_out_choice_that_keeps_its_own_ensembles_is_refused(tmp_path):
    log = action_only_log(0, n=600)
    params = {"random_state": 0, "n_rounds": 4, "base_learner_params": LGB, "refit": False}
    with pytest.raises(KeyboardInterrupt):
        Booster(**params).fit(log, callbacks=[Checkpoint(tmp_path, every=1), Crash(2)])
    with pytest.raises(InvalidParameterError) as info:
        Booster(**params).fit(log, callbacks=[Checkpoint(tmp_path)])
    assert str(info.value) == (
        "Booster.fit: resuming from a checkpoint is not supported with validation_fraction "
        "and refit=False (the best round's ensemble is kept, not checkpointed); use "
        "refit=True (the default) or a new checkpoint directory."
    )
