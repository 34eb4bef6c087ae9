"""The slate estimators (slate_iips, slate_rips, slate_idr, slate_cascade_dr): equal to
hand-written loops of obp's formulas for 1, 2 and 3 positions, ordinary IPS on one position,
and unbiased on a simulated slate world (true value inside the interval at about the
nominal rate, mean estimate near the truth)."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.estimators.ips import IPS
from opboost.algorithms.estimators.slate import SlateIndependentIPS, SlateRewardInteractionIPS
from opboost.algorithms.estimators.slate_dr import SlateCascadeDR, SlateIndependentDR
from opboost.algorithms.estimators.slate_reward import fitted_reward_model, position_item_means
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.slates import SlateLogs, SlatePolicy
from opboost.core.registry import make
from opboost.simulation.slate_world import make_slate_world

K = 4


def _case(length: int, seed: int = 0):
    """Two impressions of ``length`` positions with arbitrary probabilities, a reward model q
    and the evaluated policy's distributions (not a consistent policy: the formulas hold for
    any numbers)."""
    rng = np.random.default_rng(seed)
    n = 2
    slates = np.array([rng.permutation(K)[:length] for _ in range(n)])
    logs = SlateLogs(
        contexts=rng.normal(size=(n, 2)),
        slates=slates,
        rewards=rng.integers(0, 2, size=(n, length)).astype(float),
        marginal_propensities=rng.uniform(0.1, 0.9, size=(n, length)),
        n_items=K,
        cascade_propensities=rng.uniform(0.01, 0.9, size=(n, length)),
    )
    policy = SlatePolicy(
        marginal=rng.uniform(0, 1, size=(n, length)),
        cascade=rng.uniform(0, 1, size=(n, length)),
        marginal_dist=rng.dirichlet(np.ones(K), size=(n, length)),
        conditional_dist=rng.dirichlet(np.ones(K), size=(n, length)),
    )
    q = rng.uniform(0, 1, size=(n, length, K))
    alpha = rng.uniform(0.5, 2.0, size=length)
    return logs, policy, q, alpha


def _hand(logs: SlateLogs, policy: SlatePolicy, q: np.ndarray, alpha: np.ndarray) -> dict:
    """Per-impression values of the four estimators, one scalar at a time."""
    out = {name: [] for name in ("slate_iips", "slate_rips", "slate_idr", "slate_cascade_dr")}
    n, length = logs.slates.shape
    for i in range(n):
        iips = rips = idr = cdr = 0.0
        above = 1.0  # W_{i,k-1}, the cascade weight of the positions above k
        for k in range(length):
            a, r = logs.slates[i, k], logs.rewards[i, k]
            w = policy.marginal[i, k] / logs.marginal_propensities[i, k]
            cw = policy.cascade[i, k] / logs.cascade_propensities[i, k]
            independent_base = sum(policy.marginal_dist[i, k, b] * q[i, k, b] for b in range(K))
            cascade_base = sum(policy.conditional_dist[i, k, b] * q[i, k, b] for b in range(K))
            iips += alpha[k] * w * r
            rips += alpha[k] * cw * r
            idr += alpha[k] * (w * (r - q[i, k, a]) + independent_base)
            cdr += alpha[k] * (cw * (r - q[i, k, a]) + above * cascade_base)
            above = cw
        for name, value in zip(out, (iips, rips, idr, cdr), strict=True):
            out[name].append(value)
    return {name: np.array(values) for name, values in out.items()}


@pytest.mark.parametrize("length", [1, 2, 3])
def test_estimators_equal_hand_computations(length):
    logs, policy, q, alpha = _case(length, seed=length)
    hand = _hand(logs, policy, q, alpha)
    weights = alpha.tolist()
    for cls in (SlateIndependentIPS, SlateRewardInteractionIPS):
        got = cls(position_weights=weights).round_values(logs, policy)
        np.testing.assert_allclose(got, hand[cls.name], rtol=0, atol=1e-12)
    for cls in (SlateIndependentDR, SlateCascadeDR):
        scorer = cls(position_weights=weights).on_logs(logs, reward_predictions=q)
        np.testing.assert_allclose(scorer.row_values(policy), hand[cls.name], rtol=0, atol=1e-12)
        assert scorer.interval(policy).value == pytest.approx(hand[cls.name].mean(), abs=1e-12)


def test_registered_by_name_with_student_t_intervals():
    logs, policy, _, _ = _case(3)
    for name in ("slate_iips", "slate_rips", "slate_idr", "slate_cascade_dr"):
        est = make("estimator", name)
        values = est.round_values(logs, policy)
        interval = est.estimate_interval(logs, policy, alpha=0.1)
        half = 1.6448536269514722 * np.std(values, ddof=1) / np.sqrt(len(values))
        assert interval.value == pytest.approx(values.mean(), abs=1e-12)
        assert interval.level == 0.9
        assert interval.high - interval.value > half  # Student-t (1 df) is wider than normal


def test_one_position_is_ordinary_ips():
    rng = np.random.default_rng(5)
    n = 50
    probs = rng.dirichlet(np.ones(K), size=n)
    actions = np.array([rng.choice(K, p=p) for p in probs])
    data = LoggedBandit(
        contexts=rng.normal(size=(n, 3)),
        actions=actions,
        propensities=probs[np.arange(n), actions],
        rewards=rng.random(n),
        n_actions=K,
    )
    target = rng.dirichlet(np.ones(K), size=n)
    ips = IPS().round_values(data, target)
    for cls in (SlateIndependentIPS, SlateRewardInteractionIPS):
        np.testing.assert_allclose(cls().round_values(data, target), ips, rtol=0, atol=1e-12)
    # the same log as one-position SlateLogs, the target as a SlatePolicy
    logs = SlateLogs(
        data.contexts,
        actions[:, None],
        data.rewards[:, None],
        data.propensities[:, None],
        K,
        cascade_propensities=data.propensities[:, None],
    )
    chosen = target[np.arange(n), actions][:, None]
    policy = SlatePolicy(chosen, chosen)
    for cls in (SlateIndependentIPS, SlateRewardInteractionIPS):
        np.testing.assert_allclose(cls().round_values(logs, policy), ips, rtol=0, atol=1e-12)


def test_default_reward_model_is_cross_fitted():
    logs = make_slate_world(seed=1).simulate(200, seed=0)
    q = position_item_means(logs, n_folds=2, random_state=0)
    changed = SlateLogs(
        logs.contexts,
        logs.slates,
        logs.rewards.copy(),
        logs.marginal_propensities,
        logs.n_items,
        logs.cascade_propensities,
    )
    changed.rewards[0] = 1.0 - changed.rewards[0]
    folds = np.random.default_rng(0).permutation(len(logs)) % 2
    q_changed = position_item_means(changed, n_folds=2, random_state=0)
    same_fold = folds == folds[0]
    np.testing.assert_array_equal(q_changed[same_fold], q[same_fold])  # row 0 never fits them
    assert not np.array_equal(q_changed[~same_fold], q[~same_fold])


def test_errors_name_the_problem():
    logs, policy, _, _ = _case(2)
    no_cascade = SlateLogs(logs.contexts, logs.slates, logs.rewards, logs.marginal_propensities, K)
    with pytest.raises(
        InvalidParameterError,
        match="SlateRewardInteractionIPS: the logs have no cascade_propensities",
    ):
        SlateRewardInteractionIPS().round_values(no_cascade, policy)
    with pytest.raises(
        InvalidParameterError,
        match=r"position_weights has 3 value\(s\) but the logs have L = 2 positions",
    ):
        SlateIndependentIPS(position_weights=[1, 1, 1]).round_values(logs, policy)
    with pytest.raises(
        InvalidParameterError,
        match=r"reward_predictions must have shape "
        r"\(n, L, K\) = \(2, 2, 4\); got \(2, 2, 3\)",
    ):
        SlateIndependentDR().on_logs(logs, reward_predictions=np.zeros((2, 2, 3)))
    with pytest.raises(
        InvalidParameterError, match="does not say which rows share an impression; pass SlateLogs"
    ):
        data = LoggedBandit(
            np.zeros((2, 1)),
            np.array([0, 1]),
            np.ones(2) / 2,
            np.ones(2),
            2,
            positions=np.array([0, 1]),
        )
        SlateIndependentIPS().round_values(data, np.array([0, 1]))


def _tilted_ranking(world, contexts, candidates):
    """A fixed, non-optimal ranking: the true logits tilted per item, top L candidates."""
    scores = np.where(
        candidates, world.logits(contexts) + np.cos(np.arange(world.n_items)), -np.inf
    )
    return np.argsort(-scores, axis=1, kind="stable")[:, : world.slate_size]


@pytest.mark.parametrize(
    ("click_model", "estimators"),
    [
        ("cascade", (SlateRewardInteractionIPS, SlateCascadeDR)),
        ("pbm", (SlateIndependentIPS, SlateIndependentDR, SlateRewardInteractionIPS)),
    ],
)
def test_unbiased_on_a_slate_world(click_model, estimators):
    world = make_slate_world(
        click_model=click_model, logging_temperature=2.0, n_items=12, n_candidates=6, seed=3
    )
    big = world.simulate(100_000, seed=10**6)
    truth = world.expected_clicks(
        big.contexts, _tilted_ranking(world, big.contexts, big.candidates)
    ).mean()
    seeds = 100
    values = {cls.name: [] for cls in estimators}
    covered = {cls.name: 0 for cls in estimators}
    for seed in range(seeds):
        logs = world.simulate(500, seed=seed)
        ranking = _tilted_ranking(world, logs.contexts, logs.candidates)
        for cls in estimators:
            interval = cls().estimate_interval(logs, ranking)
            values[cls.name].append(interval.value)
            covered[cls.name] += interval.low <= truth <= interval.high
    for cls in estimators:
        estimates = np.array(values[cls.name])
        se = estimates.std(ddof=1) / np.sqrt(seeds)
        assert abs(estimates.mean() - truth) < 4 * se + 0.005, (cls.name, estimates.mean(), truth)
        assert 0.87 <= covered[cls.name] / seeds < 1.0, (cls.name, covered[cls.name])


def test_one_position_dr_takes_a_one_action_reward_model():
    """The Booster's held-out selection passes DR estimators its start's (n, K) q."""
    rng = np.random.default_rng(2)
    n = 30
    actions = rng.integers(0, K, n)
    data = LoggedBandit(rng.normal(size=(n, 2)), actions, np.full(n, 1 / K), rng.random(n), K)
    q = rng.random((n, K))
    target = rng.dirichlet(np.ones(K), size=n)
    w = target[np.arange(n), actions] * K
    dr = (target * q).sum(axis=1) + w * (data.rewards - q[np.arange(n), actions])
    for cls in (SlateIndependentDR, SlateCascadeDR):
        got = cls().on_logs(data, reward_predictions=q).row_values(target)
        np.testing.assert_allclose(got, dr, rtol=0, atol=1e-12)


def test_shapes_are_checked_with_the_field_named():
    logs, policy, _, _ = _case(2)
    with pytest.raises(
        InvalidParameterError,
        match=r"SlateLogs: rewards has shape \(2, 3\); it "
        r"must match slates \(2, 2\)",
    ):
        SlateLogs(logs.contexts, logs.slates, np.zeros((2, 3)), logs.marginal_propensities, K)
    with pytest.raises(InvalidParameterError, match=r"slates\[0, 1\] = 9 is not an item id"):
        SlateLogs(
            logs.contexts, np.array([[0, 9], [1, 2]]), logs.rewards, logs.marginal_propensities, K
        )
    with pytest.raises(
        InvalidParameterError,
        match=r"marginal_propensities\[1, 0\] = 0.0 is not "
        r"a probability in \(0, 1\]",
    ):
        SlateLogs(logs.contexts, logs.slates, logs.rewards, np.array([[0.5, 0.5], [0.0, 1.0]]), K)
    with pytest.raises(
        InvalidParameterError,
        match=r"candidates has shape \(2, 3\); it must be "
        r"\(2, 4\)",
    ):
        SlateLogs(
            logs.contexts,
            logs.slates,
            logs.rewards,
            logs.marginal_propensities,
            K,
            candidates=np.ones((2, 3), dtype=bool),
        )
    wrong = SlatePolicy(policy.marginal, policy.cascade, np.ones((2, 2, 3)))
    with pytest.raises(
        InvalidParameterError,
        match=r"SlateIndependentDR: the SlatePolicy's "
        r"marginal_dist has shape \(2, 2, 3\); on these logs it must be \(2, 2, 4\)",
    ):
        SlateIndependentDR().round_values(logs, wrong)
    with pytest.raises(InvalidParameterError, match="position_weights"):
        SlateIndependentIPS(position_weights=[1.0, np.inf]).round_values(logs, policy)


def test_fitted_reward_model_is_cross_fitted_on_the_logged_cells():
    """A linear model of r on [x; onehot(a); onehot(k)], fitted on the other fold's cells, by
    hand; the DR estimators use it when given as reward_model."""
    from sklearn.linear_model import Ridge

    logs = make_slate_world(n_items=6, n_candidates=4, seed=2).simulate(40, seed=0)
    logs = SlateLogs(  # drop the item features: onehot(a) stands for the item
        logs.contexts,
        logs.slates,
        logs.rewards,
        logs.marginal_propensities,
        logs.n_items,
        logs.cascade_propensities,
    )
    q = fitted_reward_model(logs, Ridge(alpha=1.0), n_folds=2, random_state=3)
    fold = np.random.default_rng(3).permutation(40) % 2
    for f in (0, 1):
        rows = [(i, k) for i in range(40) if fold[i] != f for k in range(3)]
        x = [np.r_[logs.contexts[i], np.eye(6)[logs.slates[i, k]], np.eye(3)[k]] for i, k in rows]
        model = Ridge(alpha=1.0).fit(np.array(x), [logs.rewards[i, k] for i, k in rows])
        i = int(np.flatnonzero(fold == f)[0])
        for k in range(3):
            for a in range(6):
                features = np.r_[logs.contexts[i], np.eye(6)[a], np.eye(3)[k]][None]
                assert q[i, k, a] == pytest.approx(model.predict(features)[0], abs=1e-10)
    est = SlateCascadeDR(reward_model=Ridge(alpha=1.0), random_state=3)
    mine = est.round_values(logs, logs.slates)
    given = SlateCascadeDR().on_logs(logs, reward_predictions=q).row_values(logs.slates)
    np.testing.assert_allclose(mine, given, rtol=0, atol=1e-12)
