"""Offline learning curves in offline-vs-online studies: each offline algorithm is also fitted
on the first n logged rows, so offline and online curves share one axis of logged
interactions, and every curve begins at 0; legends say where an offline fit started."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from opboost.compose.config import parse_config
from opboost.compose.trial.run import run_trial
from opboost.compose.trial.trial_data import prepare_trial
from opboost.simulation.supervised import expected_reward

RAW = {
    "data": {"name": "wine"},
    "simulation": {"log_fraction": 0.15, "logging_C": 0.01},
    "experiment": {"seeds": [0], "online_eval_points": 4},
    "algorithms": [
        {
            "label": "BOPL",
            "objective": "bopl",
            "booster": {"n_rounds": 5, "warm_start": "none"},
            "base_learner": {"name": "lightgbm_tree", "num_leaves": 4, "min_data_in_leaf": 5},
        },
        {"label": "banditron", "online_learner": {"name": "banditron", "gamma": 0.1}},
    ],
}


def _trials(raw: dict) -> tuple[dict, dict, object]:
    config = parse_config(copy.deepcopy(raw), file="curves.toml")
    data = prepare_trial(config.data, config.simulation, 0)
    offline = run_trial(config, config.algorithm("BOPL"), data).to_dict()
    online = run_trial(config, config.algorithm("banditron"), data).to_dict()
    return offline, online, data


def test_offline_curve_has_several_sizes_from_zero_on_the_online_axis():
    """n_logged_used: 0, then 4 doubling prefix sizes up to every logged row; the value at 0
    is the uniform policy's, the last the trial's own test reward; the online greedy curve
    starts at 0 interactions too, and both end at the logged rows streamed once."""
    offline, online, data = _trials(RAW)
    n = len(data.logged)
    xs, ys = offline["curves"]["n_logged_used"], offline["curves"]["test_reward_n"]
    assert xs == [0, round(n / 8), round(n / 4), round(n / 2), n]
    assert len(ys) == len(xs)
    uniform = np.full((len(data.y_test), data.n_actions), 1 / data.n_actions)
    assert ys[0] == pytest.approx(expected_reward(uniform, data.y_test, data.reward))
    assert ys[-1] == offline["metrics"]["test_reward"]
    steps = online["curves"]["eval_step"]
    assert steps[0] == 0 and steps[-1] == n == xs[-1]
    assert len(online["curves"]["test_reward_step"]) == len(steps)


def test_a_prefix_fit_is_the_booster_on_those_rows():
    """The curve's value at n is the argmax test reward of the booster fitted on the first n
    logged rows, as a user would fit it."""
    offline, _, data = _trials(RAW)
    config = parse_config(copy.deepcopy(RAW), file="curves.toml")
    n = offline["curves"]["n_logged_used"][2]
    booster = config.algorithm("BOPL").make_booster(random_state=0)
    booster.fit(data.logged.subset(np.arange(n)))
    actions = booster.predict(data.X_test)
    by_hand = expected_reward(np.eye(data.n_actions)[actions], data.y_test, data.reward)
    assert offline["curves"]["test_reward_n"][2] == pytest.approx(by_hand, abs=1e-12)


def test_a_prefix_the_booster_refuses_is_a_gap_not_a_failed_trial(monkeypatch):
    """A prefix too small for the booster's settings gets None and info.curve_errors; the
    trial and the rest of its curve stand."""
    from opboost.compose.trial import labelled_run

    real = labelled_run._fit_offline

    def fit(algo, logged, data, seed, *, curve=False):
        if curve and len(logged) < len(data.logged) / 6:
            raise ValueError(f"too few rows: {len(logged)}")
        return real(algo, logged, data, seed, curve=curve)

    monkeypatch.setattr(labelled_run, "_fit_offline", fit)
    offline, _, data = _trials(RAW)
    n = len(data.logged)
    assert offline["curves"]["test_reward_n"][1] is None
    assert all(v is not None for v in offline["curves"]["test_reward_n"][2:])
    assert offline["info"]["curve_errors"] == {
        str(round(n / 8)): f"ValueError: too few rows: {round(n / 8)}"
    }


def test_points_are_configurable_and_zero_turns_curves_off():
    raw = copy.deepcopy(RAW)
    raw["experiment"]["offline_curve_points"] = 2
    offline, _, data = _trials(raw)
    assert offline["curves"]["n_logged_used"] == [0, round(len(data.logged) / 2), len(data.logged)]
    raw["experiment"]["offline_curve_points"] = 0
    offline, _, _ = _trials(raw)
    assert "n_logged_used" not in offline["curves"]


def test_no_curve_without_an_online_learner():
    """Only offline-vs-online studies pay for the extra fits."""
    raw = copy.deepcopy(RAW)
    raw["algorithms"] = raw["algorithms"][:1]
    config = parse_config(raw, file="curves.toml")
    data = prepare_trial(config.data, config.simulation, 0)
    assert "n_logged_used" not in run_trial(config, config.algorithm("BOPL"), data).curves


def test_offline_vs_online_plot_draws_offline_curves_labelled_with_their_start(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from unittest import mock

    import matplotlib.pyplot as plt

    from opboost.compose.study.plots import plot_study

    offline, online, _ = _trials(RAW)
    drawn = {}
    real_save = plt.Figure.savefig

    def save(fig, path, *args, **kwargs):
        if str(path).endswith("offline_vs_online.png"):
            ax = fig.axes[0]
            drawn.update({line.get_label(): line.get_xdata() for line in ax.get_lines()})
        return real_save(fig, path, *args, **kwargs)

    with mock.patch.object(plt.Figure, "savefig", save):
        plot_study(
            {"BOPL": [offline], "banditron": [online]},
            {"BOPL": "offline", "banditron": "online"},
            tmp_path,
        )
    assert list(drawn["BOPL (offline, from F0 = 0)"]) == offline["curves"]["n_logged_used"]
    assert drawn["banditron (online, greedy)"][0] == 0


@pytest.mark.parametrize(
    ("starts", "note"),
    [
        (["reward_model/trees"], "from a reward model"),
        (["none", "none"], "from F0 = 0"),
        (["best_constant"], "from the best constant action"),
        ([None], ""),
    ],
)
def test_start_note(starts, note):
    from opboost.compose.study.plots import start_note

    trials = [{"info": {} if s is None else {"start": s}} for s in starts]
    assert start_note(trials) == note
