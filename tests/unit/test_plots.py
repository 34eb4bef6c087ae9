"""Study plots: the plotted mean curves (carried forward past early stops) and the PNGs."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.compose.study.plots import final_rewards, mean_curve, plot_study

pytest.importorskip("matplotlib")


def _offline(seed: int, rewards: list[float], n_logged: int = 100) -> dict:
    rounds = list(range(1, len(rewards) + 1))
    return {
        "label": "BOPL",
        "family": "offline",
        "seed": seed,
        "candidate": None,
        "overrides": {},
        "metrics": {"test_reward": rewards[-1]},
        "curves": {
            "round": rounds,
            "test_reward_round": rewards,
            "gradient_norm": [1.0 / r for r in rounds],
        },
        "info": {"n_logged": n_logged},
        "timings": {"total_seconds": 0.1},
        "fallback": None,
    }


def _online(seed: int) -> dict:
    steps = [10, 20, 30, 40]
    return {
        "label": "bandit",
        "family": "online",
        "seed": seed,
        "candidate": None,
        "overrides": {},
        "metrics": {"test_reward": 0.3 + 0.01 * seed, "progressive_reward": 0.25},
        "curves": {
            "step": steps,
            "progressive_reward": [0.1, 0.2, 0.25, 0.3],
            "eval_step": steps,
            "test_reward_step": [0.1, 0.15, 0.2, 0.3],
        },
        "info": {"n_interactions": 40},
        "timings": {"total_seconds": 0.1},
        "fallback": None,
    }


def _baseline(seed: int) -> dict:
    return {
        "label": "uniform",
        "family": "baseline",
        "seed": seed,
        "candidate": None,
        "overrides": {},
        "metrics": {"test_reward": 0.1},
        "curves": {},
        "info": {"n_logged": 100},
        "timings": {"total_seconds": 0.01},
        "fallback": None,
    }


def test_mean_curve_carries_a_stopped_seed_forward():
    """Seed 0 stops after round 2 (early stopping), seed 1 runs 4 rounds: past round 2 the
    mean uses seed 0's last value, so the curve does not jump to seed 1 alone."""
    trials = [_offline(0, [0.2, 0.4]), _offline(1, [0.1, 0.3, 0.5, 0.7])]
    xs, ys, stops = mean_curve(trials, "round", "test_reward_round")
    np.testing.assert_array_equal(xs, [1, 2, 3, 4])
    np.testing.assert_allclose(ys, [0.15, 0.35, 0.45, 0.55])
    assert stops == [2.0]


def test_mean_curve_skips_missing_values_and_empty_trials():
    gap = _offline(0, [0.2, 0.4, 0.6])
    gap["curves"]["test_reward_round"][1] = None  # missing in the middle: last value kept
    xs, ys, stops = mean_curve([gap, _baseline(1)], "round", "test_reward_round")
    np.testing.assert_allclose(ys, [0.2, 0.2, 0.6])
    assert stops == []
    xs, ys, stops = mean_curve([_baseline(0)], "round", "test_reward_round")
    assert len(xs) == 0 and len(ys) == 0 and stops == []


def test_final_rewards():
    rows = final_rewards({"uniform": [_baseline(0), _baseline(1)]}, {"uniform": "baseline"})
    assert rows == [("uniform", 0.1, 0.1, 0.1)]


def _png(path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_plot_kind_renders(tmp_path):
    reported = {
        "BOPL": [_offline(0, [0.2, 0.4]), _offline(1, [0.1, 0.3, 0.5, 0.7])],
        "a label long enough to need wrapping in the legend": [_online(0), _online(1)],
        "uniform": [_baseline(0), _baseline(1)],
    }
    families = {
        "BOPL": "offline",
        "a label long enough to need wrapping in the legend": "online",
        "uniform": "baseline",
    }
    written = plot_study(reported, families, tmp_path)
    names = {p.name for p in written}
    assert names == {
        "offline_test_reward.png",
        "offline_gradient_norm.png",
        "online_progressive_reward.png",
        "offline_vs_online.png",
        "test_reward.png",
    }
    assert all(_png(p) for p in written)


def test_no_panel_without_data(tmp_path):
    """No online learner: no online plot and no one-column 'offline vs online' panel; no
    offline learner: no per-round plots; the test-reward plot is always drawn."""
    (tmp_path / "a").mkdir()
    written = plot_study(
        {"BOPL": [_offline(0, [0.2, 0.4])], "uniform": [_baseline(0)]},
        {"BOPL": "offline", "uniform": "baseline"},
        tmp_path / "a",
    )
    assert {p.name for p in written} == {
        "offline_test_reward.png",
        "offline_gradient_norm.png",
        "test_reward.png",
    }
    (tmp_path / "b").mkdir()
    same = [_baseline(0), _baseline(1), _baseline(2)]  # mean 0.1 + 2e-17 > max: no error bar < 0
    written = plot_study({"uniform": same}, {"uniform": "baseline"}, tmp_path / "b")
    assert [p.name for p in written] == ["test_reward.png"]
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["test_reward.png"]
