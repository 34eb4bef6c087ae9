"""LightGBM's thread count chosen by the work and the free cores (opboost.lgbm.threads), and
the LightGBM fits that use it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import lightgbm  # noqa: F401 - its OpenMP runtime loaded, as in every fit
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from opboost import Booster
from opboost.algorithms.learners.lightgbm_reward_start import fit_reward_model
from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.lgbm import threads
from opboost.lgbm.process_threads import default_threads, keeping_threads, use_threads
from opboost.simulation.supervised import supervised_to_bandit


@pytest.fixture(autouse=True)
def fresh_reading():
    """No reading of the free cores carried over from another test."""
    threads._cache.pop("at", None)
    yield
    threads._cache.pop("at", None)


def _no_load_reading():
    raise AssertionError("the machine's load was read for work too small to share")


def test_a_given_count_is_used_as_it_is(monkeypatch):
    monkeypatch.setattr(threads, "free_cores", _no_load_reading)
    assert threads.lightgbm_threads(10**12, 3) == 3
    assert threads.lightgbm_threads(10**12, 0) == 0  # LightGBM's default: every core
    assert threads.lightgbm_threads(1, 8) == 8


def test_small_work_gets_one_thread_without_reading_the_load(monkeypatch):
    monkeypatch.setattr(threads, "free_cores", _no_load_reading)
    assert threads.lightgbm_threads(0) == 1
    assert threads.lightgbm_threads(2 * threads.FIT_WORK_PER_THREAD - 1) == 1
    assert threads.lightgbm_threads(3_000 * 4 * 21) == 1  # the small log, stacked


@pytest.mark.parametrize(("free", "expected"), [(1, 1), (2, 2), (8, 3)])
def test_large_work_gets_a_thread_per_share_up_to_the_free_cores(monkeypatch, free, expected):
    monkeypatch.setattr(threads, "free_cores", lambda: free)
    assert threads.lightgbm_threads(3.5 * threads.FIT_WORK_PER_THREAD) == expected
    predict = threads.PREDICT_WORK_PER_THREAD
    assert threads.lightgbm_threads(3 * predict, per_thread=predict) == min(3, free)


@pytest.mark.parametrize(
    ("usable", "others", "machine", "expected"),
    [(2, 0.0, 2, 2), (2, 0.4, 2, 2), (2, 1.0, 2, 1), (2, 7.0, 2, 1), (4, 1.0, 4, 3),
     (2, 8.0, 64, 2), (2, 32.0, 64, 1)],
)  # fmt: skip
def test_free_cores_are_the_usable_ones_less_the_busy_ones(
    monkeypatch, usable, others, machine, expected
):
    """Other processes' threads spread over the machine: those on this process's share of
    it take cores away (a process allowed 2 of 64 CPUs loses one at a load of 32)."""
    monkeypatch.setattr(threads, "usable_cores", lambda: usable)
    monkeypatch.setattr(threads, "_other_load", lambda: others)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: machine)
    assert threads.free_cores() == expected


def test_free_cores_is_read_at_most_once_a_second(monkeypatch):
    calls = []
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "_other_load", lambda: calls.append(1) or 0.0)
    assert threads.free_cores() == threads.free_cores() == 2
    assert len(calls) == 1


def test_usable_cores_follow_openmp_limits():
    """threadpool_limits (what a study trial runs in) bounds the cores, as OMP_NUM_THREADS
    does (both set OpenMP's maximum)."""
    with threadpool_limits(limits=1):
        assert threads.usable_cores() == 1


@pytest.mark.parametrize(
    ("lines", "files", "expected"),
    [
        ("0::/job\n", {"job/cpu.max": "150000 100000\n"}, 1.5),
        ("0::/job\n", {"job/cpu.max": "max 100000\n"}, None),
        ("0::/job\n", {"cpu.max": "300000 100000\n"}, 3.0),  # a container's own root
        (
            "4:cpu,cpuacct:/job\n1:memory:/job\n",
            {"cpu,cpuacct/job/cpu.cfs_quota_us": "50000", "cpu,cpuacct/job/cpu.cfs_period_us":
             "100000"},
            0.5,
        ),
        ("4:cpu,cpuacct:/job\n", {"cpu,cpuacct/job/cpu.cfs_quota_us": "-1",
                                  "cpu,cpuacct/job/cpu.cfs_period_us": "100000"}, None),
        ("garbage\n", {}, None),
    ],
)  # fmt: skip
def test_cgroup_quota_in_cores(tmp_path, lines, files, expected):
    (tmp_path / "cgroup").write_text(lines)
    root = tmp_path / "fs"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert threads._cgroup_quota(tmp_path / "cgroup", root) == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_busy_process_counts_as_load():
    """A process spinning beside this one is in the run queue in every sample."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert threads._other_load() >= 1.0
        assert threads._own_running() >= 1
    finally:
        busy.kill()
        busy.wait()


def test_num_threads_is_auto_or_a_count():
    assert LightGBMTree().num_threads == RewardRegression().num_threads == "auto"
    for bad, owner in [(-1, LightGBMTree), ("all", LightGBMTree), (-1, RewardRegression)]:
        with pytest.raises(InvalidParameterError, match="'num_threads' parameter of"):
            owner(num_threads=bad).validate_params()
    with pytest.raises(
        InvalidParameterError,
        match=r"must be an int >= 0\. Got -1 instead; use 'auto' \(threads chosen by the work "
        r"and the free cores\) or 0 for LightGBM's default \(every core\)\.$",
    ):
        LightGBMTree(num_threads=-1).validate_params()


def _contexts(n: int, d: int = 4) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, d))


@pytest.mark.parametrize(("requested", "expected"), [("auto", 1), (1, 1), (2, 2), (0, 0)])
def test_the_learner_fits_with_the_chosen_count(requested, expected):
    learner = LightGBMTree(num_threads=requested, num_leaves=4)
    learner.prepare(_contexts(300), 3, random_state=0)
    assert learner.num_threads_ == expected
    assert learner.booster_.params["num_threads"] == expected


def test_large_designs_get_the_free_cores(monkeypatch):
    monkeypatch.setattr(threads, "FIT_WORK_PER_THREAD", 100)
    monkeypatch.setattr(threads, "free_cores", lambda: 2)
    learner = LightGBMTree(num_leaves=4)
    learner.prepare(_contexts(300), 3, random_state=0)
    assert learner.num_threads_ == 2


def test_each_tree_grows_with_the_fits_own_count():
    """LightGBM keeps one thread count per process, which any other LightGBM call (a
    prediction, another model's fit) overwrites: the round sets the fit's own back."""
    if default_threads() is None:
        pytest.skip("this LightGBM build does not export LGBM_DEFAULT_NUM_THREADS")
    learner = LightGBMTree(num_leaves=4, num_threads=1)
    X = _contexts(300)
    learner.prepare(X, 3, random_state=0)
    y = np.random.default_rng(1).normal(size=(300, 3))
    with keeping_threads():
        use_threads(2)  # as a predict(num_threads=2) in between would
        learner.fit_round(BaseProblem("regression", y, np.ones_like(y)))
        assert default_threads().value == 1


@pytest.mark.parametrize("categorical", [False, True])
def test_the_dr_reward_model_predicts_on_the_free_cores_and_puts_the_count_back(
    monkeypatch, categorical
):
    """The DR estimator's LightGBM reward model fits on one thread; its predictions of every
    action (the one-hot path of a plain LightGBM model, or one call per action of the DR
    reduction's categorical one) take threads by their work, with the same values, and leave
    LightGBM's process-wide count as they found it for the rounds that follow."""
    if default_threads() is None:
        pytest.skip("this LightGBM build does not export LGBM_DEFAULT_NUM_THREADS")
    from opboost.algorithms.estimators import direct
    from opboost.compose import dr_reduction
    from opboost.simulation.tabular_worlds import tabular_world

    logs = tabular_world(1, max_rows=2000, n_test=10).logged_bandit()

    def estimator():
        if categorical:
            return dr_reduction._dr_estimator(logs, 2, 0)
        return direct.DoublyRobust(random_state=0)

    one = estimator().reward_predictions(logs)
    monkeypatch.setattr(direct, "PREDICT_WORK_PER_THREAD", 1_000)  # small work: 2 threads
    monkeypatch.setattr(threads, "free_cores", lambda: 2)
    with keeping_threads():
        use_threads(1)
        two = estimator().reward_predictions(logs)
        assert default_threads().value == 1
    np.testing.assert_array_equal(one, two)


def _logs_with_missing_categories(n: int = 6000):
    """Logs from a DataFrame of ``n`` rows whose six string columns miss a tenth of their
    values (coded -1 by ``LoggedBandit.from_dataframe``), four offers with string ids."""
    import pandas as pd

    from opboost import LoggedBandit

    rng = np.random.default_rng(0)
    offers = ["gold", "silver", "bronze", "none"]
    frame = pd.DataFrame(
        {f"c{j}": rng.choice(["a", "b", "c", "d", None], size=n) for j in range(6)}
    )
    frame["x"] = rng.normal(size=n)
    frame["offer"] = rng.choice(offers, size=n)
    frame["p"] = 0.25
    frame["click"] = ((frame["c0"] == "a") == (frame["offer"] == "gold")).astype(float)
    frame["click"] += 0.1 * rng.normal(size=n)
    return LoggedBandit.from_dataframe(
        frame, contexts=["x", *[f"c{j}" for j in range(6)]], action="offer", propensity="p",
        reward="click", actions=offers,
    )  # fmt: skip


@pytest.mark.parametrize("method", ["booster", "reward_regression", "dr_reduction"])
def test_missing_categories_print_no_lightgbm_warning_on_two_threads(capfd, method):
    """A missing category is coded -1, which LightGBM reads as missing but warns about from
    every thread except the caller's, whatever verbose=-1 says (its log level is per
    thread): fits binned on two threads printed "Met negative value in categorical
    features". They hand LightGBM NaN there instead: the same model, no line."""
    from opboost import Booster
    from opboost.algorithms.policy_learners.reward_regression import RewardRegression
    from opboost.compose.dr_reduction import DRReduction

    logs = _logs_with_missing_categories()
    assert (logs.contexts[:, 1:] == -1).any()
    model = {
        "booster": lambda: Booster(base_learner_params={"num_threads": 2}, random_state=0),
        "reward_regression": lambda: RewardRegression(num_threads=2, random_state=0),
        "dr_reduction": lambda: DRReduction(num_threads=2, n_estimators=20, random_state=0),
    }[method]()
    capfd.readouterr()
    model.fit(logs)
    printed = "".join(capfd.readouterr())
    assert "Met negative value" not in printed


def test_keeping_threads_puts_the_count_back():
    if default_threads() is None:
        pytest.skip("this LightGBM build does not export LGBM_DEFAULT_NUM_THREADS")
    before = default_threads().value
    with keeping_threads():
        use_threads(3)
        assert default_threads().value == 3
        use_threads(0)
        assert default_threads().value == -1
    assert default_threads().value == before


def test_the_reward_model_is_the_same_at_any_thread_count():
    """Rewards spanning many orders of magnitude: LightGBM's threaded sums (the mean it
    starts from, the root's gradients) round differently by thread count unless it is told
    to sum in one order (``deterministic``)."""
    rng = np.random.default_rng(0)
    n, K = 3_001, 3
    X = rng.normal(size=(n, 5))
    actions = rng.integers(0, K, n)
    rewards = np.exp(4 * rng.normal(size=n)) * (X[:, 0] > 0)
    q = [
        fit_reward_model(X, actions, rewards, K, "stacked", "auto", seed=0, num_threads=t).q
        for t in (1, 2)
    ]
    assert np.array_equal(q[0], q[1])


def _digits_logs(digits, n: int):
    return supervised_to_bandit(digits.X[:n], digits.y[:n], n_actions=10, random_state=0).logged


def test_the_policy_is_the_same_at_any_thread_count(digits):
    logged = _digits_logs(digits, 600)
    scores = [
        Booster(n_rounds=5, random_state=0, base_learner_params={"num_threads": t})
        .fit(logged)
        .decision_function(digits.X[1000:1100])
        for t in (1, 2)
    ]
    assert np.array_equal(scores[0], scores[1])


def test_reward_regression_threads(digits):
    logged = _digits_logs(digits, 300)
    model = RewardRegression(n_estimators=5, random_state=0).fit(logged)
    assert model.num_threads_ == 1 and model.model_.n_jobs == 1
    model = RewardRegression(n_estimators=5, num_threads=2, random_state=0).fit(logged)
    assert model.num_threads_ == 2 and model.model_.n_jobs == 2


@pytest.mark.slow
def test_importing_opboost_makes_openmp_threads_wait_passively():
    """OMP_WAIT_POLICY=passive unless the user set a policy (read when LightGBM loads)."""
    code = "import os, opboost; print(os.environ['OMP_WAIT_POLICY'])"
    for given, expected in [(None, "passive"), ("active", "active")]:
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if given is not None:
            env["OMP_WAIT_POLICY"] = given
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.stdout.strip() == expected, out.stderr
