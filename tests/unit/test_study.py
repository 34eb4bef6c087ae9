"""Studies on wine: outputs, resume after a lost trial, determinism across runs and n_jobs;
a study whose safe boosters fall back to the constant action."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from action_only_data import registered_action_only

from opboost.compose.config import parse_config
from opboost.compose.experiment import run_trial
from opboost.compose.study import comparable, plan_trials, run_study
from opboost.compose.trial_data import prepare_trial

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
            assert len(t["curves"]["round"]) == t["info"]["n_rounds"]
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
    from opboost.registry import reset_registry

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
        assert safe["curves"]["test_reward_round"] == [reward] * safe["info"]["n_rounds"]
        assert len(safe["curves"]["round"]) == safe["info"]["n_rounds"] > 0
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
    assert "| safe | offline |" in md and " 2/2 |" in md and " 0/2 |" in md
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
