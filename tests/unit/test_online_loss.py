"""Unit tests of the loss-feedback protocol, its learners, OCO boosting and the UCI loaders."""

from __future__ import annotations

import json
import pickle
import sys

import numpy as np
import pytest

from opboost.algorithms.online.brukhim_hazan import BrukhimHazanBoost, frank_wolfe_iterates
from opboost.algorithms.online.fkm import NFKM
from opboost.algorithms.online.oco_boost import OCOBoost
from opboost.algorithms.online.ogd import OGB, OGD
from opboost.api.exceptions import HiddenLabelError, InvalidParameterError
from opboost.api.loss_feedback import project
from opboost.simulation.datasets.uci_regression import Abalone, Adult, Letter, loss_feedback_targets
from opboost.simulation.loss_environment import LossEnvironment
from opboost.simulation.loss_runner import run_loss_feedback


def _stream(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.clip(0.5 + 0.2 * X @ rng.normal(size=d) / np.sqrt(d), 0, 1)
    return X, y


# --- environment -------------------------------------------------------------------------


def test_environment_labels_attribute_raises():
    """Reading env.labels raises HiddenLabelError."""
    env = LossEnvironment(np.array([0.3, 0.7]), random_state=0)
    with pytest.raises(HiddenLabelError, match="hidden"):
        env.labels  # noqa: B018


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda s: s[0], id="getitem"),
        pytest.param(np.asarray, id="asarray"),
        pytest.param(list, id="iter"),
        pytest.param(pickle.dumps, id="pickle"),
        pytest.param(lambda s: s.copy(), id="attribute"),
    ],
)
def test_environment_sealed_labels_raise(read):
    """Every route into the sealed label store raises outside loss()."""
    env = LossEnvironment(np.array([0.3, 0.7]), random_state=0)
    with pytest.raises(HiddenLabelError):
        read(env._labels)


def test_environment_loss_values_and_noise_bounds():
    """loss() returns squared loss plus noise within ±noise."""
    env = LossEnvironment(np.array([[0.5]]), noise=0.1, random_state=0)
    pts = np.linspace(-1, 1, 50)[:, None]
    vals = env.loss(0, pts)
    assert vals.shape == (50,)
    assert np.all(np.abs(vals - (pts[:, 0] - 0.5) ** 2) <= 0.1)
    assert env.n_queries == 50


def test_environment_absolute_loss_without_noise():
    """The absolute loss is the L1 distance when noise is 0."""
    env = LossEnvironment(np.array([[0.0, 1.0]]), loss="absolute", noise=0.0)
    assert env.loss(0, np.array([[1.0, 1.0]]))[0] == pytest.approx(1.0)


def test_runner_never_reads_labels_outside_loss(monkeypatch):
    """A full run reads labels only through loss()/evaluate() (the store stays sealed)."""
    X, y = _stream(50)
    opened = []
    from opboost.simulation import loss_environment as lf

    original = lf._SealedLabels.unsealed

    def spy(self):
        opened.append(sys._getframe(1).f_code.co_name)
        return original(self)

    monkeypatch.setattr(lf._SealedLabels, "unsealed", spy)
    run_loss_feedback(BrukhimHazanBoost(n_learners=3, random_state=0), X, y, random_state=0)
    assert set(opened) == {"loss", "evaluate"}


# --- geometry ------------------------------------------------------------------------------


def test_project_simplex_lands_in_simplex():
    """Simplex projection gives non-negative rows summing to one and fixes simplex points."""
    z = np.random.default_rng(0).normal(size=(100, 5)) * 3
    p = project(z, "simplex")
    assert np.all(p >= 0) and np.allclose(p.sum(1), 1.0)
    assert np.allclose(project(p, "simplex"), p)


def test_frank_wolfe_closed_form_matches_recursion():
    """The cumulative-sum iterates equal the recursion y^i = (1-η_i)y^{i-1} + η_i a_i."""
    a = np.random.default_rng(1).normal(size=(7, 3))
    it = frank_wolfe_iterates(a)
    y = np.zeros(3)
    for i in range(1, 8):
        eta = 2 / (i + 1)
        y = (1 - eta) * y + eta * a[i - 1]
        assert np.allclose(it[i], y)


# --- learners ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [BrukhimHazanBoost, NFKM, OGD, OGB])
def test_learner_seeded_determinism(cls):
    """Two runs with the same seeds give identical progressive losses."""
    X, y = _stream()
    kw = {"label_set": "box", "random_state": 3}
    a = run_loss_feedback(cls(**kw), X, y, random_state=1, shuffle=True)
    b = run_loss_feedback(cls(**kw), X, y, random_state=1, shuffle=True)
    assert a.progressive_loss == b.progressive_loss
    assert a.curve_loss == b.curve_loss


def test_brukhim_hazan_query_and_feedback_shapes():
    """query_one gives (N, m) points and learn_one needs the N values."""
    booster = BrukhimHazanBoost(n_learners=4, n_outputs=2, random_state=0)
    x = np.ones(3)
    assert booster.predict_one(x).shape == (2,)
    assert booster.query_one(x).shape == (4, 2)
    with pytest.raises(InvalidParameterError, match="4 loss values"):
        booster.learn_one(x, np.zeros(3))


def test_brukhim_hazan_round_follows_algorithm_2_lines_5_to_11():
    """One round against the paper's lines: y^0 = 0 (5), y^i = (1-η_i)y^{i-1} + η_i A_i(x)/γ
    (6), queries y^{i-1} + δv_i (7-8), g_i = (m/δ) l̃_i v_i (9) passed unscaled (no η_i, no
    γ) as the linear loss g_i·y to learner i (10-11): one OGD step W_i -= lr t^-c g_i⊗[x, 1].
    """
    m, n, delta, gamma, lr, c = 2, 4, 0.7, 2.0, 0.1, 0.5
    booster = BrukhimHazanBoost(
        n_learners=n,
        n_outputs=m,
        delta=delta,
        gamma=gamma,
        lr=lr,
        lr_decay=c,
        label_set="box",
        low=0.0,
        high=1.0,
        standardize=False,  # the lines are checked on raw x
        random_state=0,
    )
    assert booster.origin == "zero"  # the paper's y^0 is the default
    rng = np.random.default_rng(5)
    for _ in range(20):  # non-trivial learners
        x = rng.normal(size=3)
        booster.query_one(x)
        booster.learn_one(x, rng.uniform(0, 2, size=n))
    x = rng.normal(size=3)
    xb = np.append(x, 1.0)
    W = booster._bank.W.copy()
    outputs = np.clip(W @ xb, 0.0, 1.0)  # A_i(x) = Π_K(W_i [x, 1]), (N, m)
    y = np.zeros(m)  # line 5
    expected = [y]
    for i in range(1, n + 1):  # line 6
        eta = 2.0 / (i + 1)
        y = (1 - eta) * y + eta * outputs[i - 1] / gamma
        expected.append(y)
    expected = np.array(expected)
    assert np.allclose(booster.iterates_one(x), expected)
    assert np.allclose(booster.predict_one(x), np.clip(expected[-1], 0.0, 1.0))  # line 13
    Q = booster.query_one(x)
    v = booster._directions.copy()
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert np.allclose(Q, expected[:-1] + delta * v)  # lines 7-8
    feedback = rng.uniform(0, 2, size=n)
    t = booster._bank.t + 1
    booster.learn_one(x, feedback)
    g = (m / delta) * feedback[:, None] * v  # line 9
    step = lr * t ** (-c)
    assert np.allclose(booster._bank.W, W - step * g[:, :, None] * xb[None, None, :])


def test_nfkm_weight_perturbation_queries():
    """perturb="weights" queries Π_K((W + δU_j)[x, 1]) with U_j unit vectors of R^{m(d+1)}."""
    m, d, n = 2, 3, 5
    fkm = NFKM(n_queries=n, n_outputs=m, delta=0.5, standardize=False, random_state=0)
    x = np.array([1.0, -2.0, 0.5])
    fkm.predict_one(x)
    fkm._bank.W[:] = np.random.default_rng(0).normal(size=fkm._bank.W.shape)
    Q = fkm.query_one(x)
    U = fkm._directions
    assert Q.shape == (n, m) and U.shape == (n, m, d + 1)
    assert np.allclose(np.linalg.norm(U.reshape(n, -1), axis=1), 1.0)
    W = fkm._bank.W[0]
    assert np.allclose(Q, (W[None] + 0.5 * U) @ np.append(x, 1.0))
    fkm.learn_one(x, np.ones(n))
    assert fkm._bank.t == 1


def test_nfkm_weight_estimator_unbiased_for_linear_model():
    """E[(D/δ) l(W+δU) U] equals ∇_W l for a squared loss of a linear model (MC, D=m(d+1))."""
    rng = np.random.default_rng(2)
    m, d, delta, n = 1, 2, 0.5, 300_000
    xb, y, W = np.array([0.5, -1.0, 1.0]), 0.3, np.array([0.2, 0.1, -0.4])
    U = rng.standard_normal((n, d + 1))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    losses = ((W + delta * U) @ xb - y) ** 2 + rng.uniform(-0.1, 0.1, n)
    g = ((d + 1) * m / delta) * losses[:, None] * U
    se = g.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(g.mean(axis=0) - 2 * (W @ xb - y) * xb) < 4 * se)


@pytest.mark.parametrize("perturb", ["weights", "outputs"])
def test_nfkm_learns_below_constant(perturb):
    """Both N-FKM variants learn a linear target from loss values alone."""
    X, y = _stream(2000)
    fkm = NFKM(perturb=perturb, lr=0.05, label_set="box", radius=5.0, random_state=0)
    res = run_loss_feedback(fkm, X, y, random_state=0, evaluate_from=0.5)
    assert res.progressive_loss < 0.7 * np.var(y)


def test_nfkm_bad_perturb_raises():
    """An unknown perturb value raises, naming the parameter."""
    with pytest.raises(InvalidParameterError, match="'perturb'"):
        NFKM(perturb="labels").predict_one(np.ones(2))


def test_learn_before_query_raises():
    """learn_one without a preceding query_one is an error naming the fix."""
    with pytest.raises(RuntimeError, match="query_one"):
        NFKM(random_state=0).learn_one(np.ones(2), np.zeros(10))


def test_river_weak_learner_runs():
    """A river regressor named by string serves as weak learner."""
    X, y = _stream(60)
    booster = BrukhimHazanBoost(
        n_learners=3,
        weak_learner="river:linear_model.LinearRegression",
        label_set="box",
        random_state=0,
    )
    res = run_loss_feedback(booster, X, y, random_state=0)
    assert np.isfinite(res.progressive_loss)


def test_full_information_learner_rejects_values():
    """OGD refuses bandit loss values: it needs the revealed loss."""
    with pytest.raises(TypeError, match="RevealedLoss"):
        OGD().learn_one(np.ones(2), np.zeros(1))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        pytest.param({"n_learners": 0}, "'n_learners' parameter of BrukhimHazanBoost", id="n0"),
        pytest.param({"delta": -1.0}, "'delta'.*delta=0.5", id="delta"),
        pytest.param({"lr": 0.0}, "'lr'.*1e-4", id="lr"),
        pytest.param({"label_set": "ball"}, "'label_set'.*'simplex'", id="label-set"),
        pytest.param({"weak_learner": "tree"}, "'weak_learner'.*river:", id="weak"),
        pytest.param({"weak_learner": "river:nope.Missing"}, "not a river class", id="river"),
        pytest.param({"label_set": "box", "low": 1.0, "high": 0.0}, "low < high", id="box"),
        pytest.param({"label_set": "simplex"}, "n_outputs.*>= 2", id="simplex-m1"),
        pytest.param({"origin": "middle"}, "'origin'", id="origin"),
    ],
)
def test_brukhim_hazan_bad_parameters(params, match):
    """Bad parameters raise at first use with a message naming the parameter."""
    with pytest.raises(InvalidParameterError, match=match):
        BrukhimHazanBoost(**params).predict_one(np.ones(2))


def test_runner_result_is_json_serialisable():
    """to_dict() survives json.dumps and holds the curve and the seed."""
    X, y = _stream(120)
    res = run_loss_feedback(NFKM(random_state=0), X, y, random_state=5, evaluate_from=0.5)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["seed"] == 5 and d["n_evaluated"] == 60 and len(d["curve_loss"]) <= 100


def test_runner_checks_output_dimension():
    """A learner with the wrong n_outputs is rejected with the fix."""
    X, y = _stream(10)
    with pytest.raises(InvalidParameterError, match="n_outputs=2"):
        run_loss_feedback(NFKM(), X, np.c_[y, y], random_state=0)


# --- OCO boosting -----------------------------------------------------------------------------


def _separable(n=1500, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.where(X @ rng.normal(size=d) >= 0, 1, -1)


def test_oco_boost_online_realizable_learns_separable():
    """Online realizable mode reaches > 90% progressive accuracy on separable data."""
    X, y = _separable()
    booster = OCOBoost(n_learners=20, random_state=0)
    hits = []
    for x_t, y_t in zip(X, y, strict=True):
        hits.append(booster.predict_one(x_t) == y_t)
        booster.learn_one(x_t, y_t)
    assert np.mean(hits[-500:]) > 0.9


def test_oco_boost_batch_algorithm4_beats_one_stump():
    """Algorithm 4 (batch, realizable) beats a single decision stump on held-out data."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = _separable(2000, seed=1)
    booster = OCOBoost(n_learners=60, vote="deterministic", random_state=0).fit(X[:1000], y[:1000])
    stump = DecisionTreeClassifier(max_depth=1).fit(X[:1000], y[:1000])
    assert (booster.predict(X[1000:]) == y[1000:]).mean() > (
        stump.predict(X[1000:]) == y[1000:]
    ).mean() + 0.05


def test_oco_boost_agnostic_is_seeded():
    """Agnostic mode with a seed is reproducible."""
    X, y = _separable(300)
    a = OCOBoost(mode="agnostic", random_state=4).fit(X, y).predict(X)
    b = OCOBoost(mode="agnostic", random_state=4).fit(X, y).predict(X)
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        pytest.param({"mode": "boost"}, "'mode'.*'agnostic'", id="mode"),
        pytest.param({"gamma": 2.0}, "'gamma'.*edge", id="gamma"),
        pytest.param({"vote": "soft"}, "'vote'", id="vote"),
    ],
)
def test_oco_boost_bad_parameters(params, match):
    """OCOBoost names the bad parameter."""
    with pytest.raises(InvalidParameterError, match=match):
        OCOBoost(**params).predict_one(np.ones(2))


def test_oco_boost_rejects_01_labels():
    """0/1 labels are rejected with the mapping fix."""
    with pytest.raises(InvalidParameterError, match="2\\*y-1"):
        OCOBoost().fit(np.ones((3, 2)), np.array([0, 1, 1]))


# --- registry ------------------------------------------------------------------------------------


def test_loss_plugin_registers_classes():
    """The built-in plugin module returns every loss-feedback learner."""
    from opboost.algorithms.online.loss_plugin import opboost_register_online_learners

    names = {c.name for c in opboost_register_online_learners()}
    assert names == {"brukhim_hazan", "n_fkm", "ogd", "ogb", "oco_boost"}


# --- UCI loaders ---------------------------------------------------------------------------


def test_abalone_loader_tiny_file(tmp_path):
    """Abalone parses sex one-hot plus 7 measurements; target is rings."""
    (tmp_path / "abalone").mkdir()
    (tmp_path / "abalone" / "abalone.data").write_text(
        "M,0.455,0.365,0.095,0.514,0.2245,0.101,0.15,15\nI,0.35,0.265,0.09,0.2255,0.0995,"
        "0.0485,0.07,7\n\n"
    )
    data = Abalone().load(tmp_path)
    assert data.X.shape == (2, 10) and data.X[0, :3].tolist() == [1, 0, 0]
    assert data.X[1, :3].tolist() == [0, 0, 1] and data.y.tolist() == [15.0, 7.0]
    Y, label_set, low, high = loss_feedback_targets(data)
    assert Y.shape == (2, 1) and (label_set, low, high) == ("box", 0.0, 30.0)


def test_adult_loader_tiny_files(tmp_path):
    """Adult gives 105 features, '?' as all-zero one-hot, and strips the test label dot."""
    row = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
    (tmp_path / "adult.data").write_text(
        row + "White, Male, 2174, 0, 40, United-States, <=50K\n"
        "50, ?, 83311, Bachelors, 13, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 13, "
        "?, >50K\n\n"
    )
    (tmp_path / "adult.test").write_text(
        "|1x3 Cross validator\n" + row + "White, Female, 0, 0, 40, Cuba, >50K.\n"
    )
    data = Adult().load(tmp_path)
    assert data.X.shape == (3, 105) and data.y.tolist() == [0, 1, 1]
    assert data.X[1, 6:].sum() == 5  # workclass, occupation, country missing
    assert data.test_index.tolist() == [2]
    assert loss_feedback_targets(data)[1:] == ("box", 0.0, 1.0)


def test_letter_loader_tiny_file_gives_simplex_targets(tmp_path):
    """Letter scales features by 15 and maps labels to one-hot simplex targets."""
    (tmp_path / "letter").mkdir()
    (tmp_path / "letter" / "letter-recognition.data").write_text(
        "T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8\nA,15,0,3,5,1,8,13,0,6,6,10,8,0,8,0,8\n"
    )
    data = Letter().load(tmp_path)
    assert data.y.tolist() == [19, 0] and data.X[1, 0] == 1.0
    Y, label_set, *_ = loss_feedback_targets(data)
    assert label_set == "simplex" and Y.shape == (2, 26) and Y[0, 19] == 1


def test_missing_file_names_file_dir_and_source(tmp_path):
    """A missing file raises FileNotFoundError naming the file, directory and source."""
    with pytest.raises(FileNotFoundError, match=r"abalone\.data.*abalone.*archive\.ics\.uci"):
        Abalone().load(tmp_path)
