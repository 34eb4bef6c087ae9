"""Unit tests of the contextual-bandit online learners, environment, runner and UCI loaders."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from opboost.algorithms.online import Banditron, ChenBanditBoost, ConservativeOVA
from opboost.algorithms.online.chen_bandit_boost import example_weights
from opboost.algorithms.online.weak_learners import GaussianNBBank, PerceptronBank, make_bank
from opboost.api.exceptions import InvalidParameterError
from opboost.simulation import BanditEnvironment, HiddenLabelError, run_bandit
from opboost.simulation.datasets.uci_classification import DNA, Car, Connect4, Nursery


def _blobs(n: int = 300, k: int = 3, d: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(k, size=n)
    centers = rng.normal(0, 3, size=(k, d))
    return centers[y] + rng.normal(size=(n, d)), y


LEARNERS = [
    pytest.param(lambda: ChenBanditBoost(n_actions=3, n_learners=8, random_state=0), id="chen"),
    pytest.param(
        lambda: ChenBanditBoost(
            n_actions=3, n_learners=8, weak_learner="gaussian_nb", random_state=0
        ),
        id="chen-nb",
    ),
    pytest.param(
        lambda: ChenBanditBoost(
            n_actions=3, n_learners=3, random_state=0, weak_learner="river:linear_model.Perceptron"
        ),
        id="chen-river",
    ),
    pytest.param(lambda: Banditron(n_actions=3, random_state=0), id="banditron"),
    pytest.param(lambda: ConservativeOVA(n_actions=3, random_state=0), id="c-ova"),
    pytest.param(
        lambda: ConservativeOVA(n_actions=3, base_learner="gaussian_nb", random_state=0),
        id="c-ova-nb",
    ),
]


def test_plugin_registers_bandit_learners():
    """The built-in plugin hook returns the bandit learners, all with bandit feedback."""
    from opboost.algorithms.online.plugin import opboost_register_online_learners

    classes = opboost_register_online_learners()
    assert {c.name for c in classes} == {
        "chen_bandit_boost",
        "banditron",
        "conservative_ova",
        "linucb",
        "epsilon_greedy",
    }
    assert all(c.feedback == "bandit" and c.kind == "online_learner" for c in classes)


def test_environment_hides_labels():
    """Reading labels or rewards from the environment raises HiddenLabelError."""
    X, y = _blobs(10)
    env = BanditEnvironment(X, y, random_state=0)
    for name in ("y", "labels", "rewards", "reward_table"):
        with pytest.raises(HiddenLabelError, match=name):
            getattr(env, name)
    with pytest.raises(HiddenLabelError, match="no current context"):
        env.reward(0)


def test_environment_one_reward_per_context():
    """A second reward query for the same context, or skipping the query, raises."""
    X, y = _blobs(10)
    env = BanditEnvironment(X, y, random_state=0)
    it = iter(env)
    next(it)
    env.reward(1)
    with pytest.raises(HiddenLabelError, match="already revealed"):
        env.reward(2)
    next(it)
    with pytest.raises(HiddenLabelError, match="never asked"):
        next(it)


def test_environment_history_only_after_run():
    """Evaluation data is refused mid-run and complete afterwards."""
    X, y = _blobs(5)
    env = BanditEnvironment(X, y, random_state=0, n_passes=2)
    with pytest.raises(HiddenLabelError, match="not finished"):
        env.history()
    for _, _x in env:
        env.reward(0)
    hist = env.history()
    assert len(hist["actions"]) == 10 and np.all(hist["actions"] == 0)
    assert hist["optimal"].sum() == 2 * np.sum(y == 0)


def test_environment_ordering_seeded():
    """The same seed gives the same order; another seed a different one."""
    X, y = _blobs(50)

    def order(seed):
        env = BanditEnvironment(X, y, random_state=seed)
        out = []
        for _, x in env:
            out.append(x[0])
            env.reward(0)
        return np.array(out)

    assert np.array_equal(order(3), order(3))
    assert not np.array_equal(order(3), order(4))


@pytest.mark.parametrize("factory", LEARNERS)
def test_learners_never_read_labels(factory):
    """Every learner runs through the label-hiding environment, one reward per context."""
    X, y = _blobs(60)
    learner = factory()
    env = BanditEnvironment(X, y, random_state=1)
    for _, x in env:
        probs = learner.action_probs_one(x)
        assert probs.shape == (3,) and np.isclose(probs.sum(), 1.0)
        action = learner.predict_one(x)
        learner.learn_one(x, action, env.reward(action))
    assert len(env.history()["actions"]) == 60


@pytest.mark.parametrize("factory", LEARNERS)
def test_learners_seeded_determinism(factory):
    """Same learner seed and ordering seed give identical progressive results."""
    X, y = _blobs(80)
    first = run_bandit(factory(), X, y, random_state=5)
    second = run_bandit(factory(), X, y, random_state=5)
    assert first.curve_error == second.curve_error
    assert first.error_rate == second.error_rate


def test_chen_exploration_distribution():
    """p_t puts 1 - delta + delta/K on H_t and delta/K elsewhere (Algorithm 1)."""
    learner = ChenBanditBoost(n_actions=4, n_learners=5, delta=0.2, random_state=0)
    x = np.ones(3)
    learner.predict_one(x)
    learner.alpha_[:] = [[0.4, 0.3, 0.2, 0.1, 0.0]] * 4  # distinct votes: no ties
    learner.bank_.W[:] = 0.0
    learner.bank_.b[:] = [[1, 1, 1, 1, -1], [1, -1, 1, 1, 1], [-1, 1, 1, 1, 1], [1, 1, 1, -1, 1]]
    probs = learner.action_probs_one(x)
    assert np.allclose(probs, [0.85, 0.05, 0.05, 0.05])


@pytest.mark.parametrize("n_learners", [5, 40])
def test_chen_sampling_frequencies(n_learners):
    """predict_one samples from action_probs_one (ties of the vote split evenly)."""
    learner = ChenBanditBoost(n_actions=4, n_learners=n_learners, delta=0.2, random_state=0)
    x = np.ones(3)
    probs = learner.action_probs_one(x)
    actions = np.array([learner.predict_one(x) for _ in range(20_000)])
    assert np.allclose(np.bincount(actions, minlength=4) / 20_000, probs, atol=0.015)
    assert probs.min() >= 0.05


def test_example_weights_match_eqs_2_to_4():
    """Eqs. 2-4 by hand: z accumulates y h - theta, wbar = min((1-gamma)^(z/2), 1), / p."""
    h = np.array([1.0, 1.0, -1.0, 1.0])
    gamma, p = 0.1, 0.5
    theta = gamma / (2 + gamma)
    z = np.array([0.0, 1 - theta, 2 * (1 - theta), 2 * (1 - theta) + (-1 - theta)])
    expected = np.minimum(0.9 ** (z / 2), 1.0) / p
    assert np.allclose(example_weights(h, 1.0, gamma, p), expected)


def test_chen_voting_weights_move_and_stay_on_simplex():
    """With a large learning rate eq. 6 changes alpha, and each row stays a distribution."""
    X, y = _blobs(200)
    learner = ChenBanditBoost(n_actions=3, n_learners=10, learning_rate=0.5, random_state=0)
    run_bandit(learner, X, y, random_state=0)
    alpha = learner.alpha_
    assert np.all(alpha >= 0) and np.allclose(alpha.sum(axis=1), 1.0)
    assert np.ptp(alpha) > 1e-3


def test_chen_updates_only_chosen_class():
    """learn_one changes only the weak learners of the chosen class (Algorithm 1)."""
    learner = ChenBanditBoost(n_actions=3, n_learners=6, random_state=0)
    x = np.array([1.0, -2.0, 0.5])
    learner.predict_one(x)
    before = learner.bank_.W.copy()
    learner.learn_one(x, 1, 0.0)
    changed = np.any(before != learner.bank_.W, axis=(1, 2))
    assert not changed[0] and not changed[2]


def test_perceptron_bank_vectorised_update():
    """The perceptron bank steps every erring learner by w_i y x at once."""
    bank = PerceptronBank(2, 3, 2, np.random.default_rng(0), init_scale=0.0)
    bank.W[0] = [[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]
    x = np.array([1.0, 2.0])
    h = bank.predict(x)[0]
    bank.learn(0, x, 1.0, np.array([1.0, 2.0, 3.0]), h)
    assert np.allclose(bank.W[0], [[1.0, 0.0], [1.0, 4.0], [3.0, 6.0]])
    assert np.allclose(bank.b[0], [0.0, 2.0, 3.0])


def test_perceptron_bank_poisson_weighting_is_repeated_steps():
    """weighting="poisson": learner i takes min(Poisson(w_i), steps it needs) plain steps.

    w = 0 never steps; a huge w repeats the step until the example is classified correctly
    (exactly the repeated-example perceptron); a correct learner never steps.
    """
    bank = PerceptronBank(1, 3, 2, np.random.default_rng(0), init_scale=0.0, weighting="poisson")
    # scores on x = [1, 2] (|x|^2 + 1 = 6 per step): -13 needs 3 steps, -1 needs 1, +1 none
    bank.W[0] = [[-1.0, -6.0], [-1.0, 0.0], [1.0, 0.0]]
    x = np.array([1.0, 2.0])
    h = bank.predict(x)[0]
    bank.learn(0, x, 1.0, np.array([1e9, 0.0, 1e9]), h)
    assert np.allclose(bank.W[0], [[2.0, 0.0], [-1.0, 0.0], [1.0, 0.0]])
    assert np.allclose(bank.b[0], [3.0, 0.0, 0.0])
    assert np.all(bank.predict(x)[0] == [1.0, -1.0, 1.0])


@pytest.mark.parametrize("w", [0.3, 1.0, 4.0])
def test_perceptron_bank_poisson_steps_distribution(w):
    """Mean number of steps = E[min(Poisson(w), n)] for a learner needing n = 1 or 3 steps."""
    from scipy.stats import poisson

    rng = np.random.default_rng(1)
    bank = PerceptronBank(1, 2, 1, rng, init_scale=0.0, weighting="poisson")
    x = np.array([1.0])  # one step adds y * 2 to the score
    steps = []
    for _ in range(4000):
        bank.W[0] = [[-1.0], [-5.0]]  # need 1 and 3 steps for y = +1
        bank.b[0] = 0.0
        bank.learn(0, x, 1.0, np.full(2, w), bank.predict(x)[0])
        steps.append(bank.b[0].copy())
    steps = np.array(steps)
    for col, n in enumerate((1, 3)):
        expected = sum(poisson.sf(j - 1, w) for j in range(1, n + 1))  # sum_j P(r >= j)
        assert abs(steps[:, col].mean() - expected) < 4 * steps[:, col].std() / 60 + 1e-9


def test_perceptron_bank_bad_weighting():
    with pytest.raises(InvalidParameterError, match=r"'weighting' .* 'step' or 'poisson'"):
        PerceptronBank(1, 1, 1, np.random.default_rng(0), weighting="bogus")


def test_chen_perceptron_defaults_to_poisson_weighting():
    """Chen's perceptron reads w = wbar / p as a multiplicity unless told otherwise."""
    x = np.ones(3)
    learner = ChenBanditBoost(n_actions=3, n_learners=4, random_state=0)
    learner.learn_one(x, learner.predict_one(x), 1.0)
    assert learner.bank_.weighting == "poisson"
    step = ChenBanditBoost(
        n_actions=3, n_learners=4, random_state=0, weak_learner_params={"weighting": "step"}
    )
    step.learn_one(x, step.predict_one(x), 1.0)
    assert step.bank_.weighting == "step"
    assert learner.weak_learner_params is None  # the default is not written into params


def test_gaussian_nb_bank_matches_batch_estimates():
    """After many weighted updates the NB bank's means equal the weighted sample means."""
    rng = np.random.default_rng(0)
    bank = GaussianNBBank(1, 2, 3, rng, prior_count=1e-9, var_smoothing=1e-3)
    X = rng.normal(size=(50, 3)) + 2.0
    weights = rng.uniform(0.5, 2.0, size=(50, 2))
    for x, w in zip(X, weights, strict=True):
        bank.learn(0, x, 1.0, w, np.zeros(2))
    for i in range(2):
        assert np.allclose(
            bank.mean[0, i, 1], np.average(X, axis=0, weights=weights[:, i]), atol=1e-6
        )
    assert np.all(bank.predict(np.full(3, 2.0)) == 1.0)


def test_river_bank_unweighted_uses_poisson_repeats():
    """A river model without a learn_one weight still learns (Poisson repeats)."""
    bank = make_bank("river:naive_bayes.GaussianNB", 2, 2, 2, np.random.default_rng(0))
    assert not bank.weighted
    rng = np.random.default_rng(1)
    for _ in range(30):
        bank.learn(0, 1.0 + 0.1 * rng.normal(size=2), 1.0, np.ones(2), np.zeros(2))
        bank.learn(0, -1.0 + 0.1 * rng.normal(size=2), -1.0, np.ones(2), np.zeros(2))
    assert np.all(bank.predict(np.array([1.0, 1.0]))[0] == 1.0)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        pytest.param(
            {"delta": 0.0},
            "'delta' parameter of ChenBanditBoost must be a float > 0",
            id="delta-zero",
        ),
        pytest.param({"gamma": 0.7}, "'gamma' parameter .* < 0.5. Got 0.7", id="gamma-big"),
        pytest.param({"n_learners": 0}, "'n_learners' .* >= 1. Got 0", id="no-learners"),
        pytest.param(
            {"n_actions": 1}, "'n_actions' .* >= 2. Got 1 instead; pass the number", id="one-action"
        ),
        pytest.param({"weak_learner": "svm"}, "'weak_learner' .* Got 'svm'", id="bad-learner"),
        pytest.param(
            {"weak_learner": "river:nope.Thing"}, "does not name a river class", id="bad-river"
        ),
        pytest.param({"learning_rate": -1.0}, "'learning_rate' .* Got -1.0", id="neg-eta"),
    ],
)
def test_chen_bad_parameters(params, match):
    """Bad parameters raise at first use with the parameter, value and a fix."""
    learner = ChenBanditBoost(**{"n_actions": 3, **params})
    with pytest.raises(InvalidParameterError, match=match):
        learner.predict_one(np.zeros(2))


def test_bad_inputs_named():
    """Wrong context shapes, bad actions and bad banditron gamma name the problem."""
    learner = ChenBanditBoost(n_actions=3, n_learners=2, random_state=0)
    learner.predict_one(np.zeros(2))
    with pytest.raises(InvalidParameterError, match=r"shape \(2,\). Got shape \(3,\)"):
        learner.predict_one(np.zeros(3))
    with pytest.raises(InvalidParameterError, match=r"action must be an int in \[0, 3\)"):
        learner.learn_one(np.zeros(2), 5, 1.0)
    with pytest.raises(InvalidParameterError, match="'gamma' parameter of Banditron"):
        Banditron(n_actions=3, gamma=1.5).predict_one(np.zeros(2))


def test_run_bandit_result_serialises():
    """run_bandit returns a JSON-serialisable record with a sampled learning curve."""
    X, y = _blobs(250)
    result = run_bandit(Banditron(n_actions=3, random_state=0), X, y, random_state=0, n_passes=2)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["n_examples"] == 500 and data["seed"] == 0
    assert 90 <= len(data["curve_steps"]) <= 100 and data["curve_steps"][-1] == 500
    assert data["curve_error"][-1] == pytest.approx(data["error_rate"])
    assert 0.0 <= data["error_rate"] <= 1.0 and data["examples_per_second"] > 0


def test_greedy_error_counts_the_prediction_before_exploration():
    """greedy_error_rate counts H_t(x_t) (before exploration) against the hidden label: it
    equals a manual replay of the same seeds, and C-OVA (no exploration) has greedy = played."""
    X, y = _blobs(300)
    result = run_bandit(
        ChenBanditBoost(n_actions=3, n_learners=10, delta=0.3, random_state=2),
        X,
        y,
        random_state=4,
    )
    learner = ChenBanditBoost(n_actions=3, n_learners=10, delta=0.3, random_state=2)
    env, greedy = BanditEnvironment(X, y, random_state=4), []
    for _, x in env:
        action = learner.predict_one(x)
        greedy.append(learner.greedy_action_one())
        learner.learn_one(x, action, env.reward(action))
    order = np.random.default_rng(4).permutation(len(y))  # the environment's ordering
    assert result.greedy_error_rate == pytest.approx(np.mean(np.array(greedy) != y[order]))
    assert result.greedy_error_rate is not None
    assert result.greedy_error_rate < result.error_rate  # delta = 0.3 explores a lot
    ova = run_bandit(ConservativeOVA(n_actions=3, random_state=0), X, y, random_state=4)
    assert ova.greedy_error_rate == ova.error_rate


def test_run_bandit_rejects_wrong_n_actions():
    """A learner built for another K is refused with the fix."""
    X, y = _blobs(20)
    with pytest.raises(InvalidParameterError, match="build it with n_actions=3"):
        run_bandit(Banditron(n_actions=5), X, y)


def test_run_bandit_takes_a_learner_not_a_name():
    """The simulation builds no learner by name (it does not use the registry): a name is
    refused with the call that builds it."""
    X, y = _blobs(20)
    with pytest.raises(InvalidParameterError) as exc:
        run_bandit("banditron", X, y, random_state=0)
    assert str(exc.value) == (
        "run_bandit: learner must be a BanditLearner. Got the name 'banditron'; build it with "
        "opboost.make('online_learner', 'banditron', n_actions=3, random_state=0)."
    )


def test_run_bandit_refuses_a_learner_without_bandit_feedback():
    """Anything but a BanditLearner is refused, naming its type (no name is taken)."""
    X, y = _blobs(20)
    with pytest.raises(InvalidParameterError) as exc:
        run_bandit(object(), X, y)
    assert str(exc.value) == (
        "run_bandit: learner must be a BanditLearner (feedback='bandit'). Got object; "
        "loss-feedback learners have their own runner."
    )


# --- UCI loaders on tiny files in the same formats ----------------------------------------


def test_car_loader_one_hot(tmp_path):
    """Car: categorical columns one-hot in sorted order, classes sorted, blank lines skipped."""
    (tmp_path / "car").mkdir()
    (tmp_path / "car" / "car.data").write_text(
        "vhigh,low,2,more,small,low,unacc\nlow,low,5more,2,big,high,vgood\n\n"
    )
    data = Car().load(tmp_path)
    assert data.X.shape == (2, 11) and data.n_actions == 2  # maint has one level
    assert np.array_equal(data.y, [0, 1]) and np.all(data.X.sum(axis=1) == 6)
    ordinal = Car(encoding="ordinal").load(tmp_path)
    assert ordinal.X.shape == (2, 6)


def test_nursery_and_connect4_loaders(tmp_path):
    """Nursery (plain) and Connect-4 (gzip, in data_dir itself) parse to one-hot rows."""
    (tmp_path / "nursery").mkdir()
    (tmp_path / "nursery" / "nursery.data").write_text(
        "usual,proper,complete,1,convenient,convenient,nonprob,recommended,recommend\n"
        "great_pret,very_crit,foster,more,critical,inconv,problematic,not_recom,not_recom\n"
    )
    assert Nursery().load(tmp_path).X.shape == (2, 16)
    rows = ["b," * 42 + "win", "x," * 21 + "o," * 21 + "loss", "b," * 41 + "x,draw"]
    with gzip.open(tmp_path / "connect-4.data.gz", "wt") as fh:
        fh.write("\n".join(rows) + "\n")
    data = Connect4().load(tmp_path)
    assert data.X.shape[0] == 3 and np.array_equal(data.y, [2, 1, 0])


def test_dna_loader_svmlight(tmp_path):
    """DNA: LIBSVM rows, 180 features, labels 1..3 -> 0..2, test_index marks dna.scale.t."""
    (tmp_path / "dna").mkdir()
    (tmp_path / "dna" / "dna.scale").write_text("3 1:1 180:1\n1 2:1\n")
    (tmp_path / "dna" / "dna.scale.t").write_text("2 5:1\n")
    data = DNA().load(tmp_path)
    assert data.X.shape == (3, 180) and np.array_equal(data.y, [2, 0, 1])
    assert np.array_equal(data.test_index, [2]) and data.X[0, 179] == 1.0


def test_loader_missing_file_message(tmp_path, monkeypatch):
    """A missing file names the file, the directories searched and where to get it."""
    with pytest.raises(FileNotFoundError, match=r"nursery.data not found in .*nursery.*uci"):
        Nursery().load(tmp_path)
    monkeypatch.delenv("OPBOOST_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="OPBOOST_DATA"):
        DNA().load()
