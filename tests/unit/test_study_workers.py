"""A study's worker runs the trial the study resolved: plain data (picklable, as it crosses
the process boundary) holding the algorithm with its search candidate, the data spec, the
settings and the seed. The config -- its file, its tables -- is not read again."""

from __future__ import annotations

import pickle
from dataclasses import replace

from opboost.compose.config import load_config
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
