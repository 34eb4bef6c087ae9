"""Studies on wine: outputs, resume after a lost trial, determinism across runs and n_jobs;
a study whose safe boosters fall back to the constant action."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from action_only_data import registered_action_only

from opboost.compose.config import parse_config
from opboost.compose.study import comparable, plan_trials, run_study
from opboost.compose.trial.run import run_trial
from opboost.compose.trial.trial_data import prepare_trial

LGB = {"name": "lightgbm_tree", "num_leaves": 4, "min_data_in_leaf": 5}
RAW = {
    "data": {"name": "wine"},
    "simulation": {"log_fraction": 0.15, "logging_C": 0.01, "valid_fraction": 0.25},
    "experiment": {"seeds": [0, 1], "online_eval_points": 3},
    "algorithms": [
        {"label": "logging", "baseline": "logging"},
        {"label": "constant", "baseline": "best_constant", "params": {"estimator": "ips"}},
        {"label": "RR", "baseline": "reward_regression", "params": {"n_estimators": 10}},
        {
            "label": "BOPL-S",
            "objective": "bopl_s",
            "booster": {"n_rounds": 4},
            "base_learner": {"name": "lightgbm_tree", "num_leaves": 4, "min_data_in_leaf": 5},
            "search": {"method": "grid", "space": {"booster.reward_shift": [0.0, -0.5]}},
        },
        {
            "label": "banditron",
            "online_learner": {"name": "banditron", "gamma": 0.1},
            "n_passes": 2,
        },
    ],
}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The tiny study run once, sequentially, with every output."""
    out = tmp_path_factory.mktemp("study")
    config = parse_config(copy.deepcopy(RAW), file="tiny.toml")
    return config, out, run_study(config, out, n_jobs=1, progress=False)


def test_plan_has_one_trial_per_candidate_and_seed():
    """A searched algorithm contributes a trial per candidate per seed."""
    keys = plan_trials(parse_config(copy.deepcopy(RAW), file="tiny.toml"))
    assert len(keys) == 2 * (1 + 1 + 1 + 2 + 1)
    assert {k.candidate for k in keys if k.label == "BOPL-S"} == {0, 1}
    assert len({k.filename for k in keys}) == len(keys)


def test_study_writes_every_output(study):
    """results.json/csv/md, one trial file per trial and the PNG plots are written."""
    _, out, _ = study
    names = {p.name for p in out.iterdir()}
    assert {"results.json", "results.csv", "results.md", "trials"} <= names
    assert {
        "offline_test_reward.png",
        "online_progressive_reward.png",
        "offline_vs_online.png",
    } <= names
    assert len(list((out / "trials").glob("*.json"))) == 12
    saved = json.loads((out / "results.json").read_text())
    assert saved["seeds"] == [0, 1]
    assert set(saved["versions"]) >= {"opboost", "numpy", "lightgbm", "river", "scikit-learn"}
    assert saved["config"]["algorithms"][3]["search"]["space"] == {
        "booster.reward_shift": [0.0, -0.5]
    }
    assert saved["search"]["BOPL-S"]["selected"] in (0, 1)
    summary = saved["summary"]
    assert list(summary) == ["logging", "constant", "RR", "BOPL-S", "banditron"]
    assert summary["logging"]["test_reward"]["n"] == 2
    md = (out / "results.md").read_text()
    assert "| banditron | online |" in md and "progressive reward" in md and "**" in md
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert csv_lines[0].startswith("label,family,seed,candidate,selected,overrides,test_reward")
    assert len(csv_lines) == 13


def test_trial_numbers_are_consistent(study):
    """Per-round test rewards end at the final test reward; the chosen candidate is reported."""
    _, _, results = study
    chosen = results["search"]["BOPL-S"]["selected"]
    for t in results["trials"]:
        assert 0.0 <= t["metrics"]["test_reward"] <= 1.0
        if t["label"] == "BOPL-S":
            assert t["curves"]["test_reward_round"][-1] == t["metrics"]["test_reward"]
            assert t["curves"]["round"] == list(range(t["info"]["n_rounds"] + 1))
            assert len(t["curves"]["test_reward_round"]) == len(t["curves"]["round"])
        if t["label"] == "banditron":
            assert t["info"]["n_interactions"] == 2 * t["info"]["n_logged"]
            assert t["curves"]["eval_step"][-1] == t["info"]["n_interactions"]
            assert t["curves"]["test_reward_step"][-1] == t["metrics"]["test_reward"]
    means = {
        c["candidate"]: c["mean_validation"] for c in results["search"]["BOPL-S"]["candidates"]
    }
    assert means[chosen] == max(means.values())
    reported = [
        t["metrics"]["test_reward"]
        for t in results["trials"]
        if t["label"] == "BOPL-S" and t["candidate"] == chosen
    ]
    assert results["summary"]["BOPL-S"]["test_reward"]["mean"] == pytest.approx(np.mean(reported))


def test_resume_after_losing_a_trial_gives_identical_results(study):
    """Deleting one trial file recomputes only that trial, with identical final numbers."""
    config, out, results = study
    (out / "trials" / "BOPL-S__c1__s1.json").unlink()
    again = run_study(config, out, n_jobs=1, progress=False, plots=False)
    assert again["timings"]["trials_run"] == 1
    assert again["timings"]["trials_resumed"] == 11
    assert comparable(again) == comparable(results)
    assert comparable(json.loads((out / "results.json").read_text())) == comparable(results)


@pytest.mark.slow
def test_second_run_in_parallel_is_identical(study, tmp_path):
    """A fresh run with two worker processes reproduces results.json apart from timings."""
    config, _, results = study
    again = run_study(config, tmp_path, n_jobs=2, progress=False, plots=False)
    assert again["timings"]["trials_run"] == 12
    assert comparable(again) == comparable(results)


def test_changed_config_invalidates_trial_files(study, tmp_path):
    """A trial file written for other settings is recomputed, not reused."""
    _ = study
    raw = copy.deepcopy(RAW)
    raw["algorithms"] = [raw["algorithms"][0]]
    first = run_study(parse_config(raw, file="t.toml"), tmp_path, progress=False, plots=False)
    raw["simulation"]["logging_C"] = 0.1
    second = run_study(parse_config(raw, file="t.toml"), tmp_path, progress=False, plots=False)
    assert second["timings"]["trials_run"] == 2
    assert first["summary"] != second["summary"]


def test_online_checkpoints_do_not_change_the_learner():
    """Scoring the online learner mid-stream leaves its progressive reward unchanged."""
    raw = copy.deepcopy(RAW)
    config = parse_config(raw, file="t.toml")
    data = prepare_trial(config.data, config.simulation, 3)
    algo = config.algorithm("banditron")
    with_evals = run_trial(config, algo, data)
    raw["experiment"]["online_eval_points"] = 0
    quiet = run_trial(parse_config(raw, file="t.toml"), algo, data)
    assert quiet.curves["eval_step"] == []
    assert with_evals.metrics == quiet.metrics
    assert with_evals.curves["progressive_reward"] == quiet.curves["progressive_reward"]


def test_trial_data_is_identical_for_every_algorithm_and_seeded():
    """prepare_trial gives the same logs for a seed and different logs for another."""
    config = parse_config(copy.deepcopy(RAW), file="t.toml")
    a = prepare_trial(config.data, config.simulation, 5)
    b = prepare_trial(config.data, config.simulation, 5)
    c = prepare_trial(config.data, config.simulation, 6)
    assert np.array_equal(a.logged.actions, b.logged.actions)
    assert np.array_equal(a.X_test, b.X_test)
    assert not np.array_equal(a.logged.propensities, c.logged.propensities)
    sizes = a.sizes()
    assert sizes["n_test"] == 45 and sizes["n_valid"] == 34
    assert sizes["n_logged"] + sizes["n_valid"] + sizes["n_test"] < 178


@pytest.fixture
def action_only_registry(monkeypatch, tmp_path_factory):
    """The "action_only_test" data set installed as a plugin, for this test only."""
    from opboost.core.registry import reset_registry

    registered_action_only(monkeypatch, tmp_path_factory.mktemp("plugin"))
    yield
    reset_registry()


def test_study_records_fallback_trials(action_only_registry, tmp_path):
    """Only the action matters, so Booster(safe=True) falls back to the constant action 2:
    the study completes, records the constant's metrics with a flat curve, and marks the
    fallback in results.json, results.csv and results.md."""
    lgb = {"name": "lightgbm_tree", "num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}
    raw = {
        "data": {"name": "action_only_test"},
        "simulation": {"log_fraction": 0.1},
        "experiment": {"seeds": [0, 1]},
        "algorithms": [
            {
                "label": "safe",
                "booster": {"n_rounds": 5, "validation_fraction": 0.3, "safe": True},
                "base_learner": lgb,
            },
            {"label": "plain", "booster": {"n_rounds": 5}, "base_learner": lgb},
            {"label": "constant", "baseline": "best_constant"},
        ],
    }
    results = run_study(parse_config(raw, file="fallback.toml"), tmp_path, progress=False)
    trials = {(t["label"], t["seed"]): t for t in results["trials"]}
    for seed in (0, 1):
        safe, plain = trials["safe", seed], trials["plain", seed]
        assert safe["fallback"] == "constant" and plain["fallback"] is None
        assert safe["info"]["action"] == safe["info"]["selection"]["constant_action"] == 2
        assert not safe["info"]["selection"]["beats_constant"]
        reward = safe["metrics"]["test_reward"]
        assert reward == trials["constant", seed]["metrics"]["test_reward"]  # also action 2
        rounds = safe["info"]["n_rounds"]
        assert rounds > 0 and safe["curves"]["round"] == list(range(rounds + 1))
        assert safe["curves"]["test_reward_round"] == [reward] * (rounds + 1)
    assert results["fallbacks"] == {"safe": 2, "plain": 0}
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["fallbacks"] == {"safe": 2, "plain": 0}
    assert [t["fallback"] for t in saved["trials"] if t["label"] == "safe"] == ["constant"] * 2
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert rows[0].endswith(",n_rounds,fallback,total_seconds")
    marks = {(r.split(",")[0], r.split(",")[-2]) for r in rows[1:]}
    assert marks == {("safe", "constant"), ("plain", ""), ("constant", "")}
    md = (tmp_path / "results.md").read_text()
    assert "| fallbacks | seconds / trial |" in md
    assert "| safe | offline | reward_model/trees |" in md and " 2/2 |" in md and " 0/2 |" in md
    assert "| constant | baseline | — |" in md
    assert "fell back to the best constant action" in md
    assert (tmp_path / "offline_test_reward.png").is_file()


def test_cli_run_prints_the_fallback(action_only_registry, tmp_path, capsys):
    """`opboost run` of a trial that fell back prints its action and the fallback."""
    from opboost.compose.cli import main

    path = tmp_path / "fallback.toml"
    path.write_text(
        '[data]\nname = "action_only_test"\n\n[experiment]\nseeds = [0]\n\n'
        '[[algorithms]]\nlabel = "safe"\n'
        "booster = { n_rounds = 5, validation_fraction = 0.3, safe = true }\n"
        'base_learner = { name = "lightgbm_tree", num_leaves = 4, min_data_in_leaf = 5 }\n'
    )
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  action                  2\n" in out
    assert "  fallback                constant\n" in out


#: Offline trials of every kind of start, on wine (4 rounds; the last stops early).
STARTS = {
    "data": {"name": "wine"},
    "simulation": {"log_fraction": 0.15, "logging_C": 0.01, "valid_fraction": 0.25},
    "experiment": {"seeds": [0]},
    "algorithms": [
        {"label": "default", "booster": {"n_rounds": 4}, "base_learner": LGB},
        {"label": "F0=0", "booster": {"n_rounds": 4, "warm_start": "none"}, "base_learner": LGB},
        {
            "label": "per-action constant",
            "booster": {"n_rounds": 4, "warm_start": "best_constant"},
            "base_learner": {**LGB, "action_design": "per_action"},
        },
        {
            "label": "sklearn logging",
            "booster": {"n_rounds": 4, "warm_start": "logging"},
            "base_learner": {"name": "sklearn_tree", "max_depth": 3},
        },
        {
            "label": "distilled",
            "booster": {"n_rounds": 4, "warm_start": "reward_model"},
            "base_learner": {"name": "sklearn_tree", "max_depth": 3},
        },
        {  # the training risk falls every round, so its maximum is round 1: stops at round 2
            "label": "stopped",
            "objective": "bopl",
            "booster": {"n_rounds": 4},
            "base_learner": LGB,
            "callbacks": [
                {
                    "name": "early_stopping",
                    "metric": "train_objective",
                    "mode": "max",
                    "patience": 1,
                }
            ],
        },
    ],
}
STARTED = {
    "default": "reward_model/trees",
    "F0=0": "none",
    "per-action constant": "best_constant",
    "sklearn logging": "logging",
    "distilled": "reward_model/distilled",
    "stopped": "reward_model/trees",
}


def test_curves_have_one_point_per_round_from_the_start():
    """Whatever the start (a reward model's 100+ trees, warm-start members, K trees a round,
    none), round 0 is the start and test_reward_round[t] is the test reward of the same fit
    stopped after t rounds; other curves are aligned with round (None at round 0). With early
    stopping the test-reward curve ends at the policy's best round; info["start"] says which
    start ran."""
    config = parse_config(copy.deepcopy(STARTS), file="starts.toml")
    data = prepare_trial(config.data, config.simulation, 0)
    for algo in config.algorithms:
        result = run_trial(config, algo, data)
        curves, rounds = result.curves, result.info["n_rounds"]
        assert result.info["start"] == STARTED[algo.label]
        assert curves["round"] == list(range(rounds + 1))
        for name in ("alpha", "gradient_norm", "train_objective", "eval_snips_argmax"):
            assert len(curves[name]) == rounds + 1 and curves[name][0] is None
        rewards = curves["test_reward_round"]
        assert rewards[-1] == result.metrics["test_reward"]
        if algo.label == "stopped":
            assert rounds == 2 and len(rewards) == 2  # the policy keeps round 1
            continue
        assert rounds == 4 and len(rewards) == 5
        for t in (1, 2):  # the same fit with t rounds: per-round seeds do not depend on T
            shorter = parse_config(copy.deepcopy(STARTS), file="starts.toml").algorithm(algo.label)
            shorter.booster["n_rounds"] = t
            assert run_trial(config, shorter, data).metrics["test_reward"] == rewards[t]


def test_plotted_curve_ends_at_the_table_value(study):
    """The plotted mean test-reward curve ends at the table's mean test reward, at the last
    round run."""
    from opboost.compose.study import reported_trials
    from opboost.compose.study.plots import mean_curve

    _, _, results = study
    trials = reported_trials(results)["BOPL-S"]
    xs, ys, stops = mean_curve(trials, "round", "test_reward_round")
    assert xs[0] == 0 and xs[-1] == 4 and stops == []
    assert ys[-1] == pytest.approx(results["summary"]["BOPL-S"]["test_reward"]["mean"])
