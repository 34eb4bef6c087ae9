"""Deploying a policy with exploration: exact propensities for every scoring class (Booster,
Policy, loaded policies, ConstantPolicy, RewardRegression, PolicyChoice), epsilon-greedy and
softmax distributions, candidates, slates, seeds, and IPS on a deployed policy's own logs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from opboost import Booster
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import normal_interval
from opboost.api.exceptions import InsufficientMemoryError, InvalidParameterError
from opboost.api.policy import ConstantPolicy
from opboost.api.serving.exploration import draw, exploration_distribution, sample_slates
from opboost.compose.choice import PolicyChoice
from opboost.core.policy_loading import load_policy
from opboost.core.registry import make

FAST = {"num_threads": 1, "num_leaves": 4, "min_data_in_leaf": 5}


@pytest.fixture(scope="module")
def sim(log_factory):
    return log_factory(n=300, n_actions=4, seed=3)


@pytest.fixture(scope="module")
def booster(sim):
    booster = Booster(n_rounds=3, base_learner_params=FAST, random_state=0).fit(sim.data)
    scores = booster.decision_function(sim.data.contexts)
    assert np.all((scores == scores.max(axis=1, keepdims=True)).sum(axis=1) == 1)  # no ties
    return booster


@pytest.fixture(scope="module")
def learners(sim, booster):
    """Every scoring class that samples, fitted on the same logs."""
    regression = RewardRegression(n_estimators=5, random_state=0).fit(sim.data)
    choice = PolicyChoice(
        candidates=["constant", "bopl_s_ips"],
        booster_params={"n_rounds": 2, "warm_start": "none", "base_learner_params": FAST},
        random_state=0,
    ).fit(sim.data)
    return {
        "booster": booster,
        "policy": booster.policy_,
        "constant": ConstantPolicy(2, 4),
        "reward_regression": regression,
        "policy_choice": choice,
    }


def _check_frequencies(actions, propensities, probs, rows, n_rows):
    """Each (row, action)'s empirical frequency over the repeats of ``rows`` matches its
    probability within 5 binomial standard errors; propensities are the exact entries."""
    assert np.array_equal(propensities, probs[np.arange(len(actions)), actions])
    draws = len(actions) // n_rows
    counts = np.zeros((n_rows, probs.shape[1]))
    np.add.at(counts, (rows, actions), 1.0)
    expected = probs[::draws]
    se = np.sqrt(expected * (1 - expected) / draws)
    assert np.all(np.abs(counts / draws - expected) <= 5 * se + 1e-12)
    assert np.all(counts[expected == 0] == 0)


@pytest.mark.parametrize(
    "options",
    [
        {"epsilon": 0.2},
        {"epsilon": 0.0},
        {"temperature": 0.5},
        {"epsilon": 0.3, "temperature": 2.0},
    ],
)
def test_empirical_frequencies_match_the_propensities_for_every_class(sim, learners, options):
    """Over 4,000 draws of each of 5 rows, every (row, action) is drawn as often as the
    propensity sample() reports, for every class that samples."""
    n_rows, draws = 5, 4000
    X = np.repeat(sim.data.contexts[:n_rows], draws, axis=0)
    rows = np.repeat(np.arange(n_rows), draws)
    for name, learner in learners.items():
        actions, propensities = learner.sample(X, random_state=7, **options)
        probs = learner.action_distribution(X, **options)
        assert actions.dtype == np.int64 and propensities.dtype == np.float64, name
        _check_frequencies(actions, propensities, probs, rows, n_rows)
        assert np.allclose(probs.sum(axis=1), 1.0), name


def test_epsilon_greedy_gives_the_argmax_one_minus_epsilon_plus_epsilon_over_k(booster, sim):
    """The argmax gets exactly 1 - eps + eps/K and every other action eps/K."""
    X, eps, k = sim.data.contexts[:50], 0.1, 4
    probs = booster.action_distribution(X, epsilon=eps)
    best = booster.predict(X)
    rows = np.arange(len(X))
    assert np.all(probs[rows, best] == 1 - eps + eps / k)
    others = np.ones_like(probs, dtype=bool)
    others[rows, best] = False
    assert np.all(probs[others] == eps / k)
    actions, propensities = booster.sample(X, epsilon=eps, random_state=0)
    assert np.all(propensities == np.where(actions == best, 1 - eps + eps / k, eps / k))


def test_ties_give_the_greedy_mass_to_predicts_action_and_softmax_matches_predict_proba(
    booster, sim
):
    """Without a tie order the lower index, as every scorer's ``predict`` (with one: its
    first, tests/unit/test_tie_order.py)."""
    scores = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    probs = exploration_distribution(scores, epsilon=0.2)
    np.testing.assert_allclose(probs, [[0.05, 0.85, 0.05, 0.05], [0.85, 0.05, 0.05, 0.05]])
    tied = RewardRegression(random_state=0).fit(sim.data)
    tied.decision_function = lambda X, **_: np.zeros((len(X), 4))  # every action ties
    actions, propensities = tied.sample(sim.data.contexts[:10], random_state=0)
    np.testing.assert_array_equal(actions, tied.predict(sim.data.contexts[:10]))
    assert (propensities == 1.0).all()
    X = sim.data.contexts[:20]
    assert np.allclose(
        booster.action_distribution(X, temperature=1.0), booster.predict_proba(X), atol=1e-12
    )
    cold = booster.action_distribution(X, temperature=1e-6)
    assert np.array_equal(cold.argmax(axis=1), booster.predict(X))


def test_candidates_never_receive_mass_outside_the_set(sim, learners):
    """With candidates, exploration is over each row's candidates only (eps / K_i each) and
    no draw leaves the set, for every class (PolicyChoice masks in the mixin)."""
    rng = np.random.default_rng(0)
    X = np.repeat(sim.data.contexts[:30], 50, axis=0)
    mask = rng.random((len(X), 4)) < 0.5
    mask[np.arange(len(X)), rng.integers(0, 4, len(X))] = True
    n_candidates = mask.sum(axis=1)
    for name, learner in learners.items():
        for options in ({"epsilon": 0.3}, {"epsilon": 0.1, "temperature": 1.0}):
            probs = learner.action_distribution(X, candidates=mask, **options)
            assert np.all(probs[~mask] == 0.0), name
            assert np.allclose(probs.sum(axis=1), 1.0), name
            actions, propensities = learner.sample(X, candidates=mask, random_state=1, **options)
            assert mask[np.arange(len(X)), actions].all(), name
            assert np.all(propensities > 0), name
        greedy = learner.action_distribution(X, candidates=mask, epsilon=0.4)
        assert np.all(greedy.min(axis=1, where=mask, initial=1.0) >= 0.4 / n_candidates - 1e-15)


def test_sampling_is_seeded_and_vectorised(booster, sim):
    X = sim.data.contexts
    a1, p1 = booster.sample(X, epsilon=0.5, random_state=11)
    a2, p2 = booster.sample(X, epsilon=0.5, random_state=np.random.default_rng(11))
    a3, _ = booster.sample(X, epsilon=0.5, random_state=12)
    assert np.array_equal(a1, a2) and np.array_equal(p1, p2)
    assert not np.array_equal(a1, a3)


def test_a_loaded_policy_draws_the_same_actions_as_the_fitted_one(booster, sim, tmp_path):
    X = sim.data.contexts
    for policy, name in ((booster.policy_, "learned"), (ConstantPolicy(1, 4), "constant")):
        loaded = load_policy(policy.save(tmp_path / f"{name}.json"))
        for options in ({"epsilon": 0.25}, {"temperature": 0.7, "epsilon": 0.05}):
            fitted = policy.sample(X, random_state=5, **options)
            again = loaded.sample(X, random_state=5, **options)
            assert np.array_equal(fitted[0], again[0]) and np.array_equal(fitted[1], again[1])
    assert np.array_equal(
        booster.sample(X, epsilon=0.2, random_state=3)[0],
        booster.policy_.sample(X, epsilon=0.2, random_state=3)[0],
    )


def test_draw_never_returns_an_action_of_probability_zero():
    """The largest uniform below 1, on rows whose totals round up or down, and on a row that
    ends in zero-probability actions."""
    top = 1 - 2.0**-53
    probs = np.array([[0.3, 0.7 - 1e-15, 0.0], [0.0, 0.0, 1.0 - 1e-15], [0.1, 0.2, 0.7]])
    probs = np.vstack([probs, [[0.5, 0.5, 0.0]], [[1 / 3, 1 / 3, 1 / 3]]])
    actions, propensities = draw(probs, np.full(len(probs), top))
    assert actions.tolist() == [1, 2, 2, 1, 2]
    assert np.array_equal(propensities, probs[np.arange(len(probs)), actions])
    assert draw(probs, np.zeros(len(probs)))[0].tolist() == [0, 2, 0, 0, 0]


def test_slates_have_per_position_propensities(sim, booster):
    """Epsilon-greedy slates: each position's empirical frequency of each action matches the
    reported propensity; a row with fewer candidates than k pads with -1 (propensity 1)."""
    n_rows, draws, k, eps = 3, 4000, 3, 0.4
    X = np.repeat(sim.data.contexts[:n_rows], draws, axis=0)
    mask = np.ones((len(X), 4), dtype=bool)
    mask[np.arange(len(X)) >= 2 * draws, 1:3] = False  # row 2: two candidates
    slates, props = booster.sample_slate(X, k, epsilon=eps, random_state=2, candidates=mask)
    ranked = booster.policy_.rank(X, k, candidates=mask)
    assert slates.shape == props.shape == (len(X), k)
    for j in range(k):
        for i in range(n_rows):
            block = slice(i * draws, (i + 1) * draws)
            for a in np.unique(slates[block, j]):
                where = slates[block, j] == a
                want = (
                    1.0
                    if a < 0
                    else (1 - eps) * (ranked[block][0, j] == a) + eps / mask[i * draws].sum()
                )
                assert np.all(props[block, j][where] == want)
                se = np.sqrt(want * (1 - want) / draws)
                assert abs(where.mean() - want) <= 5 * se + 1e-12
    assert np.all(slates[2 * draws :, 2] == -1)
    assert np.all(mask[np.arange(len(X))[:, None], np.maximum(slates, 0)] | (slates < 0))
    assert np.array_equal(sample_slates(np.zeros((2, 3)), 2, epsilon=0.0)[0], [[0, 1], [0, 1]])


def _plackett_luce_marginals(scores: np.ndarray, k: int, temperature: float) -> np.ndarray:
    """(k, K) position marginals of one row by enumerating every ordered k-prefix of its
    candidates (independent of opboost.api.numerics.plackett_luce)."""
    w = np.where(np.isfinite(scores), np.exp(scores / temperature), 0.0)
    out = np.zeros((k, len(scores)))
    for prefix in itertools.permutations(np.flatnonzero(w > 0), k):
        free, p = w.sum(), 1.0
        for item in prefix:
            p *= w[item] / free
            free -= w[item]
        out[np.arange(k), prefix] += p
    return out


def test_softmax_slates_have_exact_plackett_luce_marginals(booster, sim):
    """Temperature slates: Plackett–Luce slates of scores / T mixed with epsilon uniform
    orderings. The propensities are the exact marginals (1 - eps) PL(a at j) + eps / K_i (to
    1e-12 against an enumeration of the orderings), and each position's frequency of each
    action over 20,000 draws of a row lies within 5 binomial standard errors of it; a row of
    two candidates pads position 3 with -1 (propensity 1). The mixin's sample_slate draws
    the same slates from the policy's scores."""
    scores = np.array(
        [[2.0, 1.0, 0.0, -1.0, -np.inf], [0.5, 0.5, -np.inf, -np.inf, 1.5],
         [1.0, -np.inf, 0.0, -np.inf, -np.inf]]
    )  # fmt: skip
    draws, k, eps, temperature = 20_000, 3, 0.2, 0.7
    slates, props = sample_slates(
        np.repeat(scores, draws, axis=0), k, epsilon=eps, temperature=temperature, random_state=0
    )
    assert slates.shape == props.shape == (3 * draws, k)
    assert np.all(slates[2 * draws :, 2] == -1) and np.all(props[2 * draws :, 2] == 1.0)
    for i, row in enumerate(scores):
        n_candidates = int(np.isfinite(row).sum())
        length = min(k, n_candidates)
        want = (1 - eps) * _plackett_luce_marginals(row, length, temperature) + eps / n_candidates
        block = slice(i * draws, (i + 1) * draws)
        for j in range(length):
            shown, p = slates[block, j], props[block, j]
            assert set(shown) <= set(np.flatnonzero(np.isfinite(row)))
            np.testing.assert_allclose(p, want[j, shown], rtol=0, atol=1e-12)
            for a in np.flatnonzero(np.isfinite(row)):
                se = np.sqrt(want[j, a] * (1 - want[j, a]) / draws)
                assert abs(np.mean(shown == a) - want[j, a]) <= 5 * se
    X = sim.data.contexts[:50]
    got = booster.sample_slate(X, 2, epsilon=0.1, temperature=2.0, random_state=4)
    expected = sample_slates(
        booster.decision_function(X), 2, epsilon=0.1, temperature=2.0, random_state=4
    )
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


def test_softmax_slates_refuse_marginals_that_cannot_fit_in_memory():
    """The exact marginals cost O(K^k) memory per row: 100,000 actions over 4 positions are
    refused before anything is allocated, naming the fixes."""
    with pytest.raises(
        InsufficientMemoryError,
        match=r"^sample_slates: the Plackett-Luce position marginals of 100,000 actions over 4 "
        r"positions: at least .* GiB needed, .* Pass candidates \(fewer actions per row\), a "
        r"shorter slate, or temperature=None\.$",
    ):
        sample_slates(np.zeros((1, 100_000)), 4, temperature=1.0)


def test_exploration_errors_name_the_argument(booster, sim, learners):
    X = sim.data.contexts[:3]
    with pytest.raises(InvalidParameterError) as err:
        booster.sample(X, epsilon=1.5)
    assert str(err.value) == (
        "Booster.sample: epsilon must be a number in [0, 1] (the share of uniform exploration "
        "over each row's candidates). Got 1.5."
    )
    with pytest.raises(InvalidParameterError) as err:
        booster.policy_.action_distribution(X, temperature=0.0)
    assert str(err.value) == (
        "Policy.action_distribution: temperature must be None (epsilon-greedy over the argmax) "
        "or a finite number > 0 (softmax of scores / temperature). Got 0.0."
    )
    with pytest.raises(InvalidParameterError) as err:
        booster.sample_slate(X, 2, temperature=-1.0)
    assert str(err.value) == (
        "Booster.sample_slate: temperature must be None (epsilon-greedy over the argmax) or a "
        "finite number > 0 (softmax of scores / temperature). Got -1.0."
    )
    choice = learners["policy_choice"]
    with pytest.raises(InvalidParameterError) as err:
        choice.sample(X, action_features=np.eye(4))
    assert str(err.value) == (
        "PolicyChoice.sample: PolicyChoice scores a fixed set of actions and takes no "
        "action_features; drop action_features=."
    )
    with pytest.raises(InvalidParameterError) as err:
        exploration_distribution(np.array([[0.0, np.nan]]))
    assert str(err.value) == (
        "exploration_distribution: the score of action 1 in row 0 is nan; scores must be "
        "finite (or -inf outside a row's candidates)."
    )


def test_ips_on_a_deployed_policys_own_logs_is_unbiased(booster, log_factory):
    """A fitted booster is deployed with epsilon = 0.2 on simulator contexts (Bernoulli
    rewards of a known table) 200 times (one vectorised draw). On each deployment's logs, with
    the propensities sample() returned, the IPS estimates of the deployed policy's value and
    of its greedy policy's value average to the true values, and the greedy value's 95%
    intervals cover the truth about 95% of the time."""
    ips, n_runs = make("estimator", "ips"), 200
    world = log_factory(n=300, n_actions=4, seed=1000)
    X, table = world.data.contexts, world.table
    deployed = booster.action_distribution(X, epsilon=0.2)
    greedy = booster.action_distribution(X)
    truths = [float(np.mean(np.sum(p * table, axis=1))) for p in (deployed, greedy)]
    rng = np.random.default_rng(0)
    actions, propensities = booster.sample(np.tile(X, (n_runs, 1)), epsilon=0.2, random_state=rng)
    means = np.tile(table, (n_runs, 1))[np.arange(len(actions)), actions]
    rewards = (rng.random(len(actions)) < means).astype(float)
    estimates, covered = [[], []], 0
    for run in np.split(np.arange(len(actions)), n_runs):
        logs = LoggedBandit(X, actions[run], propensities[run], rewards[run], 4)
        estimates[0].append(ips.estimate_value(logs, deployed))
        interval = ips.estimate_interval(logs, greedy)
        estimates[1].append(interval.value)
        covered += interval.low <= truths[1] <= interval.high
    for values, truth in zip(estimates, truths, strict=True):
        bias = normal_interval(np.subtract(values, truth), 0.99)
        assert bias.low <= 0.0 <= bias.high
    assert 0.90 <= covered / n_runs <= 0.99
