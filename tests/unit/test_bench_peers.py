"""examples/benchmarks/bench_peers.py (issue 34, items 2-4): the catalogue and small-log data
sets, the methods on catalogue trials, the suites and the output, on tiny sizes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from opboost.api.policy_learner import PolicyLearner

BENCH = Path(__file__).resolve().parents[2] / "examples" / "benchmarks"
#: The VW methods run where the opboost-vw plugin and vowpalwabbit are installed.
VW = all(importlib.util.find_spec(m) is not None for m in ("opboost_vw", "vowpalwabbit"))


def _import_script(name: str):
    """The script as a module (registered, so its dataclasses resolve their module)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


peers = _import_script("bench_peers")  # puts examples/benchmarks on sys.path
shapes = sys.modules["_bench_shapes"]  # the module bench_peers imported


def test_the_suites():
    assert peers.parse_args([]).datasets_ == list(peers.DATASETS)  # the classic default
    assert len(peers.DATASETS) == 12
    args = peers.parse_args(["--suite", "catalogue"])
    assert args.datasets_ == list(shapes.CATALOGUES) and len(args.datasets_) >= 8
    assert peers.parse_args(["--suite", "small"]).datasets_ == list(peers.SMALL)
    assert peers.parse_args(["--suite", "all"]).datasets_ == [
        *peers.DATASETS, *shapes.CATALOGUES, *peers.SMALL,
    ]  # fmt: skip
    assert peers.parse_args(["--datasets", "wine@100", "smooth"]).datasets_ == [
        "wine@100", "smooth",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("wine@ten", "'wine@ten': the rows after '@' must be an integer >= 50, e.g. scene@2000"),
        ("yeast@2000", "unknown data sets ['yeast@2000']; known: "),
    ],
)
def test_bad_data_set_names(name, message, capsys):
    with pytest.raises(SystemExit):
        peers.parse_args(["--datasets", name])
    assert message in capsys.readouterr().err


def test_a_subsample_by_name():
    source = peers.load("wine@100", None)
    trial = source.trial(0)
    assert (len(trial.logged), trial.n_test) == (63, 30)  # 70 train rows, 10% train the logger
    assert source.info == {"kind": "supervised", "n_rows": 178, "n_features": 13, "n_actions": 3}
    assert source.header == "178 rows (subsample of 100), 13 features, K = 3 (multiclass)"


def test_a_catalogue_trial_scores_by_the_true_means():
    trial = shapes.CATALOGUES["catalogue_bilinear"].trial(3, 400)
    test = trial.test
    assert len(trial.logged) == 400 and trial.n_test == 400
    assert trial.logged.action_features.shape == (300, 6)
    assert test.new_items.size == 300 and test.candidate_items.min() >= 300  # unseen items
    assert trial.value(trial.logging_probs()) == pytest.approx(test.logging_value, abs=1e-12)
    rows = np.arange(trial.n_test)
    best = test.candidate_items[rows, test.candidate_means.argmax(axis=1)]
    assert trial.value(best) == pytest.approx(test.candidate_means.max(axis=1).mean())
    # seeds are worlds: another seed, other reward parameters
    other = shapes.CATALOGUES["catalogue_bilinear"].trial(4, 400)
    assert not np.array_equal(other.test.world.reward_weights, test.world.reward_weights)
    seen = shapes.CATALOGUES["catalogue_seen"].trial(3, 400)
    np.testing.assert_array_equal(seen.logged.contexts, trial.logged.contexts)  # same logs
    assert seen.test.candidate_items.max() < 300  # items seen in training


def test_open_bandit_like_logs_have_its_shape():
    trial = shapes.CATALOGUES["open_bandit_like"].trial(0)
    logs = trial.logged
    assert len(logs) == 10_000 and logs.n_actions == 80 and logs.candidates is None
    assert logs.n_positions == 3 and logs.item_schema.categorical_features == (1, 2, 3)
    np.testing.assert_array_equal(logs.contexts.sum(axis=1), 4.0)  # 4 one-hot user features
    np.testing.assert_allclose(logs.propensities, 1 / 80)  # a uniform logger
    assert 0.003 < logs.rewards.mean() < 0.008
    assert trial.serving["candidates"] is None


def test_the_popularity_policy_serves_new_items():
    trial = shapes.CATALOGUES["catalogue_popular"].trial(0, 600)
    actions = peers.constant_method(trial)
    test = trial.test.logged
    assert test.candidates[np.arange(trial.n_test), actions].all()
    assert trial.value(actions) > trial.test.logging_value  # popularity dominates this world


def test_synthetic_worlds_are_scored_by_their_exact_means():
    source = peers.load("one_best", None, sim_rows=500)
    trial, again, other = source.trial(1), source.trial(1), source.trial(2)
    data, mu = shapes.one_best(1, 500)
    np.testing.assert_array_equal(trial.table, mu(np.asarray(trial.X_test)))
    np.testing.assert_array_equal(again.logged.rewards, trial.logged.rewards)
    assert not np.array_equal(other.table, trial.table)
    assert (mu(data.X).argmax(axis=1) == 0).mean() > 0.6  # action 0 the best for most
    skewed, none = shapes.skewed_multilabel(0, 300)
    assert none is None and skewed.y.shape == (300, 14) and 0.65 < skewed.y[:, 0].mean() < 0.85


class _NoItems(PolicyLearner):
    """A policy learner without ``action_features=``: not applicable to a catalogue."""

    name: ClassVar[str] = "no_items"

    def __init__(self, *, random_state: Any = None):
        self.random_state = random_state

    def fit(self, data):
        return self

    def decision_function(self, X):
        return np.zeros((X.shape[0], 2))


def test_a_method_that_cannot_serve_a_catalogue_is_a_note():
    source = peers.load("catalogue_few", None, sim_rows=200)
    methods = {
        "default": peers.booster_method({}, 2),
        "no_items": peers.learner_method(_NoItems, {}),
    }
    result = peers.run_dataset(source, methods, [0])
    assert np.isnan(result["rewards"]["no_items"]).all() and not result["errors"]
    assert peers.method_notes(result) == [
        "> no_items: n/a, policy learner _NoItems's predict takes no action_features: it "
        "cannot serve a catalogue."
    ]
    rows = peers.compare(result["rewards"], result["seconds"], "default", ["no_items"])
    assert peers.table(rows, "default", 1)[-1] == "| no_items | n/a | – | – | – |"


def test_a_smoke_run_of_every_new_shape(tmp_path, capsys):
    """Catalogues (new items, positions without a candidate mask) and small synthetic logs
    through the command line: tables, the seconds table and the JSON."""
    out = tmp_path / "peers.json"
    methods = ["default", "reward_regression", "constant", "logging"] + ["vw_mtr"] * VW
    names = ["catalogue_bilinear", "open_bandit_like", "smooth"]
    argv = ["--datasets", *names, "--sim-rows", "300", "--seeds", "1", "--n-rounds", "2",
            "--methods", *methods, "--json", str(out)]  # fmt: skip
    assert peers.main(argv) == 0
    printed = capsys.readouterr().out
    for name in names:
        assert f"### {name}\n" in printed
    assert "| data set | default | reward_regression |" in printed
    record = json.loads(out.read_text())
    for name in names:
        result = record["datasets"][name]
        assert result["errors"] == {} and result["not_applicable"] == {}
        for method in methods:
            assert 0 <= result["reward"][method][0] <= 1, (name, method)
    assert record["datasets"]["open_bandit_like"]["kind"] == "catalogue"
    assert record["datasets"]["smooth"]["sizes"]["actions"] == 3
    # what the default kept on each seed; the peers are no Boosters
    for name in names:
        (default,) = record["datasets"][name]["kept"]["default"]
        assert set(record["datasets"][name]["kept"]) == {"default"}
        assert default["n_rounds"] <= 2 and default["fallback"] in (
            None,
            "constant",
            "dr_reduction",
        )
    assert record["datasets"]["smooth"]["kept"]["default"][0]["start_family"] in (
        "trees",
        "linear+trees",
    )


tabular = sys.modules["_bench_tabular"]


def test_the_tabular_suite_tunes_and_reports_on_disjoint_worlds():
    tuning, reporting = tabular.TUNING_WORLD_SEEDS, tabular.REPORTING_WORLD_SEEDS
    assert not set(tuning) & set(reporting)
    assert len(set(tuning)) >= 30 and len(set(reporting)) >= 30
    names = peers.parse_args(["--suite", "tabular"]).datasets_
    assert names == [f"tabular_{s}" for s in reporting]  # reported by default
    names = peers.parse_args(["--suite", "tabular", "--worlds", "tuning"]).datasets_
    assert names == [f"tabular_{s}" for s in tuning]


def test_a_tabular_trial_is_a_world_with_new_logs_each_seed():
    source = peers.load("tabular_1000", None, sim_rows=400)
    trial, again, other = source.trial(0), source.trial(0), source.trial(1)
    assert len(trial.logged) == 400 and trial.n_test == 10_000
    assert trial.logged.schema.action_ids == tuple(trial.world.action_ids)
    np.testing.assert_array_equal(again.logged.rewards, trial.logged.rewards)
    assert not np.array_equal(other.logged.rewards, trial.logged.rewards)  # new logs
    np.testing.assert_array_equal(other.world.test_means, trial.world.test_means)  # same world
    best = trial.world.test_means.argmax(axis=1)
    assert trial.value(best) == pytest.approx(trial.world.test_means.max(axis=1).mean())
    assert source.info["kind"] == "tabular" and source.info["world_seed"] == 1000


def test_the_dr_reduction_serves_a_catalogue():
    source = peers.load("catalogue_few", None, sim_rows=300)
    methods, _ = peers.build_methods([], [], 2)
    chosen = {m: methods[m] for m in ("default", "dr_reduction", "logging")}
    result = peers.run_dataset(source, chosen, [0])
    assert not result["errors"] and not result["not_applicable"]
    assert result["rewards"]["dr_reduction"][0] > result["rewards"]["logging"][0]


def test_a_smoke_run_of_the_tabular_suite(tmp_path, capsys):
    out = tmp_path / "peers.json"
    methods = ["default", "reward_regression", "dr_reduction", "constant", "logging"]
    names = ["tabular_1000", "tabular_1001"]
    argv = ["--datasets", *names, "--sim-rows", "400", "--seeds", "2", "--n-rounds", "2",
            "--methods", *methods, "--json", str(out)]  # fmt: skip
    assert peers.main(argv) == 0
    printed = capsys.readouterr().out
    for name in names:
        assert f"### {name}\n" in printed
    assert "| dr_reduction | " in printed
    record = json.loads(out.read_text())
    for name in names:
        result = record["datasets"][name]
        assert result["errors"] == {} and result["not_applicable"] == {}
        assert result["sizes"]["logged"] == 400
        for method in methods:
            assert all(np.isfinite(v) for v in result["reward"][method]), (name, method)


def test_a_rule_variant_sets_its_settings_for_its_fit_only():
    """bench_round_rule.py: a variant's SPEC names module settings; they hold during the
    variant's fit and are put back after it, and an unknown setting is refused by name."""
    rule = _import_script("bench_round_rule")
    import opboost.algorithms.learners.lightgbm_reward_start as reward_start
    import opboost.core.resolve as resolve

    settings = rule.parse_spec("count_rows=0,action_splits=lightgbm,paired_confidence=0.8")
    before = (reward_start.MIN_HOLDOUT_ROWS_FOR_COUNT, reward_start.action_split_params)
    seen = {}

    def fit(trial):
        seen.update(
            count=reward_start.MIN_HOLDOUT_ROWS_FOR_COUNT,
            splits=reward_start.action_split_params(26),
            paired=resolve.AUTO_PAIRED_CONFIDENCE,
        )
        return trial

    assert rule.variant_method(fit, settings)("trial") == "trial"
    assert seen == {"count": 0, "splits": {}, "paired": 0.8}
    assert (reward_start.MIN_HOLDOUT_ROWS_FOR_COUNT, reward_start.action_split_params) == before
    assert resolve.AUTO_PAIRED_CONFIDENCE == 0.95
    assert rule.parse_spec("0.75:20") == [
        (resolve, "AUTO_ROUNDS_CONFIDENCE", 0.75),
        (resolve, "AUTO_PATIENCE", 20),
    ]
    assert rule.parse_spec("challenger_confidence=0.75") == [
        (resolve, "AUTO_CHALLENGER_CONFIDENCE", 0.75)
    ]
    assert rule.parse_spec("challengers=dr_reduction+reward_regression,stopping_rounds=40") == [
        (resolve, "AUTO_CHALLENGERS", ("dr_reduction", "reward_regression")),
        (reward_start, "STOPPING_ROUNDS", 40),
    ]
    assert rule.parse_spec("held_out_trees=400,most_counted_trees=800") == [
        (reward_start, "HELD_OUT_TREES", 400),
        (reward_start, "MOST_COUNTED_TREES", 800),
    ]
    (start, held_out) = rule.parse_spec("start_param=lambda_l2:10,held_out_param=lambda_l2:0.5")
    assert start[:2] == (reward_start, "REWARD_MODEL_PARAMS")
    assert start[2] == {**reward_start.REWARD_MODEL_PARAMS, "lambda_l2": 10}
    assert held_out[:2] == (reward_start, "SELECTION_PARAMS")
    assert held_out[2] == {**reward_start.SELECTION_PARAMS, "lambda_l2": 0.5}
    assert "lambda_l2" not in reward_start.REWARD_MODEL_PARAMS  # a copy, not the module's dict
    with pytest.raises(SystemExit, match="unknown setting 'patiance'"):
        rule.parse_spec("patiance=5")


def test_compare_runs_judges_a_new_run_against_an_earlier_runs_peers(tmp_path, capsys):
    """compare_runs.py: the paired W/T/L of a new run's method against an earlier run's
    methods on the data sets both have, the earlier default shown as "before"."""
    compare = _import_script("compare_runs")

    def run(path, rewards):
        datasets = {name: {"sizes": {"logged": 100}, "reward": r} for name, r in rewards.items()}
        path.write_text(json.dumps({"datasets": datasets}))
        return str(path)

    new = run(tmp_path / "new.json", {
        "w_1": {"default": [1.0, 1.1, 1.2]},  # 0.5 above the peer on every seed: a win
        "w_2": {"default": [0.0, 0.3, -0.1]},  # noise around the peer: a tie
        "w_3": {"default": [0.0, 0.0, 0.0]},  # not in the old run
    })  # fmt: skip
    old = run(tmp_path / "old.json", {
        "w_1": {"reward_regression": [0.5, 0.6, 0.7], "default": [1.0, 1.1, 1.2]},
        "w_2": {"reward_regression": [0.1, 0.1, 0.1], "default": [0.0, 0.3, -0.1]},
    })  # fmt: skip
    argv = ["--new", new, "--old", old, "--against", "reward_regression", "default"]
    assert compare.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| w_1 | 100 | 1.1000 | +0.5000 ± 0.0000 (W) | +0.0000 ± 0.0000 (T) |" in printed
    assert "w_3" not in printed
    assert "reward_regression: W/T/L 1/1/0, mean +0.2333, 1 means below -0.003: w_2 -0.0333" in (
        printed
    )
    assert "before: W/T/L 0/2/0, mean +0.0000, 0 means below -0.003" in printed
    with pytest.raises(SystemExit, match="no data set has method 'vw'"):
        compare.main([*argv, "--method", "vw"])


def test_the_replacement_probe_replays_the_rules_own_test(capsys):
    """bench_replacement_tests.py: the per-row DR values it replays are the rule's own (gap
    0), and its "normal 0.95" test is the default's: 0 against itself."""
    probe = _import_script("bench_replacement_tests")
    assert probe.main(["--world-seeds", "12", "--seeds", "1", "--max-rows", "800"]) == 0
    captured = capsys.readouterr()
    assert "formula gap 0.0e+00" in captured.err
    assert "| normal 0.95 | +0.0000 | 0 |" in captured.out
