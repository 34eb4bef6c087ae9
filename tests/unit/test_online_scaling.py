"""Online standardisation (RunningScaler) and the scale robustness it gives every learner."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.online import (
    Banditron,
    ChenBanditBoost,
    ConservativeOVA,
    EpsilonGreedyLinear,
    LinUCB,
    RunningScaler,
)
from opboost.algorithms.online.brukhim_hazan import BrukhimHazanBoost
from opboost.algorithms.online.fkm import NFKM
from opboost.algorithms.online.oco_boost import OCOBoost
from opboost.api.exceptions import InvalidParameterError
from opboost.simulation import run_bandit
from opboost.simulation.loss_runner import run_loss_feedback


def _stream(n: int = 600, d: int = 6, k: int = 3, seed: int = 0):
    """Linearly separable-ish classes with a noise feature; contexts (n, d), labels (n,)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = np.argmax(X[:, :k] + 0.3 * rng.normal(size=(n, k)), axis=1)
    return X, labels


#: per-feature factors up to 1e4 and offsets up to 1e3: raw features a learner without a
#: scaler handles badly (checked in test_large_scales_hurt_without_the_scaler).
def _rescale(X: np.ndarray, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.uniform(-2, 4, size=X.shape[1])
    shift = rng.uniform(-1e3, 1e3, size=X.shape[1])
    return X * scale + shift


def test_scaler_matches_numpy_running_statistics():
    """Mean and variance equal numpy's over the merged prefix (ddof=0) at every step."""
    X = _rescale(_stream(n=50)[0])
    scaler = RunningScaler(X.shape[1])
    for x in X:
        scaler.learn_one(x)
        n = scaler.n_seen
        np.testing.assert_allclose(scaler.mean, X[:n].mean(axis=0), rtol=1e-10)
        np.testing.assert_allclose(scaler.var, X[:n].var(axis=0), rtol=1e-8, atol=1e-6)


def test_scaler_transform_learn_uses_the_statistics_before_the_context():
    """transform_learn_one(x) = (x - mean_{t-1}) / std_{t-1}; the first context maps to 0."""
    X = _stream(n=20)[0]
    scaler = RunningScaler(X.shape[1], center="mean")
    np.testing.assert_array_equal(scaler.transform_learn_one(X[0]), 0.0)
    np.testing.assert_array_equal(scaler.transform_learn_one(X[1]), 0.0)  # std_1 = 0
    for t in range(2, len(X)):
        z = scaler.transform_learn_one(X[t])
        expected = (X[t] - X[:t].mean(axis=0)) / X[:t].std(axis=0)
        np.testing.assert_allclose(z, expected, rtol=1e-9)


def test_scaler_auto_centres_two_valued_features_at_their_smaller_value():
    """center="auto": a 0/1 column keeps its zeros (scaled by 1/std); a column with three
    values is mean-centred; a column leaves the two-valued set at its third value."""
    rng = np.random.default_rng(0)
    onehot = (rng.random(200) < 0.2).astype(float)
    real = rng.normal(size=200)
    later = np.r_[np.where(rng.random(100) < 0.5, 2.0, 7.0), rng.normal(size=100)]
    X = np.c_[onehot, real, later]
    scaler = RunningScaler(3)
    for x in X[:100]:
        scaler.learn_one(x)
    scaler.flush()
    z = scaler.transform_one(np.array([0.0, 0.0, 2.0]))
    assert z[0] == 0.0 and z[2] == 0.0  # zeros (and the smaller of two values) stay at 0
    np.testing.assert_allclose(z[1], -X[:100, 1].mean() / X[:100, 1].std())
    np.testing.assert_allclose(
        scaler.transform_one(np.array([1.0, 0.0, 7.0]))[[0, 2]],
        [1.0 / X[:100, 0].std(), 5.0 / X[:100, 2].std()],
    )
    for x in X[100:]:
        scaler.learn_one(x)
    scaler.flush()
    assert scaler.two_valued.tolist() == [True, False, False]
    np.testing.assert_allclose(scaler.centre[2], X[:, 2].mean())
    batch = RunningScaler(3)
    batch.learn_many(X)  # the mini-batch path agrees
    assert batch.two_valued.tolist() == [True, False, False]
    np.testing.assert_allclose(batch.transform_many(X[:5]), scaler.transform_many(X[:5]))


def test_scaler_merges_in_blocks_that_lag_by_less_than_a_sixteenth():
    """Contexts are merged in blocks: the merged statistics are exact over a prefix that
    lacks fewer than n/16 + 1 (and at most max_block) contexts; flush() catches up."""
    X = _rescale(_stream(n=700)[0])
    scaler = RunningScaler(X.shape[1], max_block=32)
    for t, x in enumerate(X, start=1):
        scaler.learn_one(x)
        assert t - scaler.n_seen < min(32, max(t // 16, 1)) + 1
        assert scaler.n_seen == t or t > 31
        np.testing.assert_allclose(scaler.mean, X[: scaler.n_seen].mean(axis=0), rtol=1e-10)
    assert scaler.n_seen < 700  # a block is pending
    scaler.flush()
    assert scaler.n_seen == 700
    np.testing.assert_allclose(scaler.var, X.var(axis=0), rtol=1e-8)


def test_scaler_third_value_between_or_beyond_leaves_the_two_valued_set():
    """{0, 1} then 2 (beyond) or 0.5 (between): three values, no longer two-valued."""
    for third in (2.0, 0.5):
        scaler = RunningScaler(1)
        for v in (0.0, 1.0, 1.0, third):
            scaler.learn_one(np.array([v]))
        assert not scaler.two_valued[0]
        batch = RunningScaler(1)
        batch.learn_many(np.array([[0.0], [1.0]]))
        batch.learn_many(np.array([[third]]))
        assert not batch.two_valued[0]


def test_scaler_constant_feature_maps_to_zero():
    """A feature of zero variance maps to 0 (river's safe_div), whatever the query value."""
    scaler = RunningScaler(2)
    for v in (1.0, 2.0, 3.0):
        scaler.learn_one(np.array([v, 5.0]))
    assert scaler.transform_one(np.array([2.0, 7.0]))[1] == 0.0
    assert scaler.transform_one(np.array([2.0, 7.0]))[0] == 0.0  # at the mean


def test_scaler_mini_batch_equals_one_at_a_time():
    """learn_many (Chan's merge) equals learn_one row by row, in any batch split."""
    X = _rescale(_stream(n=90)[0])
    one, many = RunningScaler(X.shape[1]), RunningScaler(X.shape[1])
    for x in X:
        one.learn_one(x)
    one.flush()
    for part in np.array_split(X, [7, 8, 50]):
        many.learn_many(part)
    assert many.n_seen == one.n_seen == 90
    np.testing.assert_allclose(many.mean, one.mean, rtol=1e-12)
    np.testing.assert_allclose(many.m2, one.m2, rtol=1e-9)
    np.testing.assert_allclose(many.transform_many(X[:5]), one.transform_many(X[:5]), rtol=1e-9)


def test_scaler_transform_learn_many_uses_the_statistics_before_the_batch():
    """A mini-batch is standardised with the statistics before it, then learnt."""
    X = _stream(n=30)[0]
    scaler = RunningScaler(X.shape[1])
    scaler.learn_many(X[:10])
    before = scaler.transform_many(X[10:])
    np.testing.assert_allclose(scaler.transform_learn_many(X[10:]), before)
    assert scaler.n_seen == 30


BANDIT_LEARNERS = [
    pytest.param(
        lambda **kw: ChenBanditBoost(n_actions=3, n_learners=20, delta=0.05, **kw), id="chen"
    ),
    pytest.param(lambda **kw: Banditron(n_actions=3, gamma=0.05, **kw), id="banditron"),
    pytest.param(lambda **kw: ConservativeOVA(n_actions=3, **kw), id="c-ova"),
    pytest.param(lambda **kw: LinUCB(n_actions=3, **kw), id="linucb"),
    pytest.param(lambda **kw: EpsilonGreedyLinear(n_actions=3, **kw), id="eps-greedy"),
]


@pytest.mark.parametrize("make", BANDIT_LEARNERS)
def test_bandit_learner_same_reward_on_rescaled_stream(make):
    """Progressive reward on a stream and on it with features scaled by up to 1e4 and
    shifted by up to 1e3 agree within 0.01 (the scaler is on by default)."""
    X, y = _stream()
    base = run_bandit(make(random_state=0), X, y, random_state=3).mean_reward
    scaled = run_bandit(make(random_state=0), _rescale(X), y, random_state=3).mean_reward
    assert abs(base - scaled) <= 0.01
    assert base > 0.5  # the learner learns something (3 classes: 1/3 by chance)


@pytest.mark.parametrize("make", BANDIT_LEARNERS)
def test_large_scales_hurt_without_the_scaler(make):
    """The same rescaled stream with standardize=False loses >= 0.05 reward on one of two
    orderings: the rescaling above is a real test of the scaler."""
    X, y = _stream()
    gaps = []
    for seed in (3, 4):
        std = run_bandit(make(random_state=0), _rescale(X), y, random_state=seed).mean_reward
        raw = run_bandit(
            make(random_state=0, standardize=False), _rescale(X), y, random_state=seed
        ).mean_reward
        gaps.append(std - raw)
    assert max(gaps) >= 0.05


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda **kw: BrukhimHazanBoost(n_learners=5, label_set="box", **kw), id="bh"),
        pytest.param(lambda **kw: NFKM(n_queries=5, label_set="box", **kw), id="n-fkm"),
    ],
)
def test_loss_learner_same_loss_on_rescaled_stream(make):
    """Brukhim–Hazan and N-FKM: the same progressive loss on raw and rescaled contexts."""
    X, labels = _stream(n=400)
    y = (labels == 0).astype(float)
    base = run_loss_feedback(make(random_state=0), X, y, random_state=0).progressive_loss
    scaled = run_loss_feedback(
        make(random_state=0), _rescale(X), y, random_state=0
    ).progressive_loss
    assert abs(base - scaled) <= 1e-3 * max(base, 1.0)


def test_oco_boost_same_predictions_on_rescaled_stream():
    """OCOBoost online: the same votes on raw and on rescaled contexts (same seed)."""
    X, labels = _stream(n=300)
    y = np.where(labels == 0, 1, -1)
    runs = []
    for data in (X, _rescale(X)):
        booster = OCOBoost(n_learners=5, vote="deterministic", random_state=0)
        preds = []
        for x, label in zip(data, y, strict=True):
            preds.append(booster.predict_one(x))
            booster.learn_one(x, int(label))
        runs.append(np.array(preds))
    assert np.mean(runs[0] == runs[1]) >= 0.99
    assert np.mean(runs[0] == y) > 0.6


@pytest.mark.parametrize(
    ("make", "owner", "value"),
    [
        pytest.param(lambda: ChenBanditBoost(n_actions=3, standardize=1), "ChenBanditBoost", "1"),
        pytest.param(lambda: LinUCB(n_actions=3, standardize="yes"), "LinUCB", "'yes'"),
        pytest.param(lambda: Banditron(n_actions=3, standardize=True), "Banditron", "True"),
    ],
)
def test_standardize_bad_value_message(make, owner, value):
    """A standardize other than 'auto', 'mean' or False is rejected with the exact message."""
    allowed = "{'auto', 'mean'}" + ("" if value.startswith("'") else " or False")
    message = (
        f"The 'standardize' parameter of {owner} must be one of {allowed}. Got {value} "
        f"instead; 'auto' keeps one-hot zeros, 'mean' is river's StandardScaler, False feeds "
        f"raw features."
    )
    with pytest.raises(InvalidParameterError) as info:
        make().predict_one(np.zeros(2))
    assert str(info.value) == message
