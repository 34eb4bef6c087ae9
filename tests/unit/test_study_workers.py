"""A study's worker runs the trial the study resolved: plain data (picklable, as it crosses
the process boundary) holding the algorithm with its search candidate, the data spec, the
settings and the seed. The config -- its file, its tables -- is not read again."""

from __future__ import annotations

import pickle
import tomllib
from dataclasses import replace

import pytest

from opboost.compose.config import load_config, parse_config
from opboost.compose.config.specs import LogsSpec, WorldSpec
from opboost.compose.study import comparable, plan_trials, run_study
from opboost.compose.study.workers import clear_trial_data, run_resolved_trial
from opboost.compose.trial.plan import TrialKey, resolve_trial

CONFIG = """
[data]
name = "wine"

[simulation]
log_fraction = 0.15
logging_C = 0.01
valid_fraction = 0.25

[experiment]
seeds = [0, 1]
online_eval_points = 2

[[algorithms]]
label = "constant"
baseline = "best_constant"
params = { estimator = "ips" }

[[algorithms]]
label = "BOPL-S"
objective = "bopl_s"
booster = { n_rounds = 3 }
base_learner = { name = "lightgbm_tree", num_leaves = 4, min_data_in_leaf = 5 }
search = { method = "grid", space = { "booster.reward_shift" = [0.0, -0.5] } }

[[algorithms]]
label = "banditron"
online_learner = { name = "banditron", gamma = 0.1 }
"""


def _without_timings(trial: dict) -> dict:
    return comparable({k: v for k, v in trial.items() if k != "timings"})


def test_resolved_trial_holds_the_candidate_and_the_settings(tmp_path):
    """The trial of a search candidate carries its algorithm with the candidate applied, the
    candidate's overrides, the data spec and what it reads of [experiment]."""
    path = tmp_path / "study.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    trial = resolve_trial(config, TrialKey("BOPL-S", 1, 1), data_dir=str(tmp_path))
    assert trial.key == TrialKey("BOPL-S", 1, 1)
    assert trial.algorithm.booster["reward_shift"] == -0.5
    assert trial.algorithm.search is None
    assert trial.overrides == {"booster.reward_shift": -0.5}
    assert (trial.data.name, trial.data_dir) == ("wine", str(tmp_path))
    assert trial.simulation["valid_fraction"] == 0.25
    # an offline algorithm beside an online one records its learning curve (4 points)
    assert trial.settings == {
        "online_eval_points": 2,
        "offline_curve_points": 4,
        "confidence": 0.95,
    }
    assert trial.deployment is None
    online = resolve_trial(config, TrialKey("banditron", 0))
    assert online.settings["offline_curve_points"] == 0 and online.overrides == {}


def test_the_worker_runs_the_resolved_trial_without_the_config(tmp_path):
    """Every trial resolved, pickled and unpickled (as for a worker process), then run after
    the config file was overwritten and the config's raw tables emptied, gives the numbers of
    the study run from the config."""
    path = tmp_path / "study.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    study = run_study(config, None, n_jobs=1, progress=False, plots=False)
    trials = [pickle.loads(pickle.dumps(resolve_trial(config, k))) for k in plan_trials(config)]
    path.write_text("this is no longer a config")
    config.raw.clear()
    clear_trial_data()
    ran = [run_resolved_trial(trial) for trial in trials]
    assert [(t["label"], t["seed"], t["candidate"]) for t in ran] == [
        (k.label, k.seed, k.candidate) for k in plan_trials(config)
    ]
    assert [_without_timings(t) for t in ran] == [_without_timings(t) for t in study["trials"]]
    assert {t["label"] for t in ran if t["curves"].get("test_reward_step")} == {"banditron"}


def test_a_study_runs_the_config_object_it_was_given(tmp_path):
    """A config changed in Python after it was read (``dataclasses.replace``) runs as
    changed: its trials run what the study resolved, not the raw tables parsed again."""
    path = tmp_path / "study.toml"
    path.write_text(CONFIG.replace('estimator = "ips"', 'estimator = "snips"'))
    written = run_study(load_config(path), None, progress=False, plots=False)
    path.write_text(CONFIG)
    config = load_config(path)
    constant = replace(config.algorithm("constant"), params={"estimator": "snips"})
    changed = replace(config, algorithms=(constant,))
    ran = run_study(changed, None, progress=False, plots=False)
    assert ran["config"]["algorithms"] == [written["config"]["algorithms"][0]]
    expected = [t for t in written["trials"] if t["label"] == "constant"]
    assert [_without_timings(t) for t in ran["trials"]] == [_without_timings(t) for t in expected]


def test_each_kind_of_trial_runs_by_its_own_runner(tmp_path, monkeypatch):
    """A resolved trial's kind follows its data and ``[deployment]``; ``run_resolved`` hands
    it to that kind's runner alone, which fills the result."""
    from opboost.compose.trial import run
    from opboost.compose.trial.trial_data import prepare_trial

    path = tmp_path / "study.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    streamed = replace(config, deployment={"batch_size": 20, "n_batches": 2})
    world = replace(config, data=WorldSpec({"n_test": 50}, "slates"))
    spec = LogsSpec("logs.csv", "logs.csv", "study.toml", ("x",), "action", "p", "reward")
    logs = replace(config, data=spec)
    key = TrialKey("constant", 0)
    assert [resolve_trial(c, key).kind for c in (config, streamed, world, logs)] == [
        "labelled",
        "stream",
        "slates",
        "logs",
    ]
    assert resolve_trial(replace(world, data=WorldSpec({}, "catalogue")), key).kind == "catalogue"
    assert set(run.RUNNERS) == {"labelled", "stream", "catalogue", "slates", "logs"}
    called = []

    def runner(trial, data, result):
        called.append(trial.kind)
        result.metrics["test_reward"] = 1

    monkeypatch.setattr(run, "RUNNERS", {**run.RUNNERS, "stream": runner})
    trial = resolve_trial(streamed, key)
    data = prepare_trial(trial.data, trial.simulation, 0)
    result = run.run_resolved(trial, data)
    assert called == ["stream"]
    assert result.metrics == {"test_reward": 1.0} and result.info == data.sizes()


def test_a_catalogue_trial_refuses_an_online_learner_by_name():
    """The config refuses an online learner on a catalogue world; a trial resolved by hand
    with one is refused by the catalogue's runner, naming the algorithm."""
    from opboost.compose.trial.run import run_resolved
    from opboost.compose.trial.world_data import prepare_world_trial

    raw = {
        "data": {"world": "catalogue", "n_items": 20, "n_candidates": 4, "n_test": 50},
        "deployment": {"batch_size": 20, "n_batches": 2},
        "experiment": {"seeds": [0]},
        "algorithms": [{"label": "L", "baseline": "logging"}],
    }
    config = parse_config(raw, file="world.toml")
    online = parse_config(tomllib.loads(CONFIG), file="study.toml").algorithm("banditron")
    trial = resolve_trial(config, TrialKey("banditron", 0), algorithm=online, overrides={})
    data = prepare_world_trial(config.data, 0)
    refused = r"algorithm 'banditron' is online: .*; remove it from the study"
    with pytest.raises(ValueError, match=refused):
        run_resolved(trial, data)
