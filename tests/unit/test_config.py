"""Config files: error messages (file, key path, valid names), search validation, round-trip."""

from __future__ import annotations

import copy
import tomllib

import pytest
import tomli_w

from opboost.api.exceptions import ConfigError
from opboost.compose.config import (
    dumps_resolved,
    load_config,
    parse_config,
    resolved_config,
)
from opboost.compose.config.search import select_candidate, with_candidate

BASE = {
    "data": {"name": "wine"},
    "simulation": {"valid_fraction": 0.2},
    "experiment": {"seeds": [0, 1]},
    "algorithms": [
        {"label": "logging", "baseline": "logging"},
        {
            "label": "BOPL-S",
            "objective": "bopl_s",
            "booster": {"n_rounds": 5},
            "base_learner": {"name": "lightgbm_tree", "num_leaves": 7},
            "callbacks": [{"name": "early_stopping", "patience": 3}],
        },
        {"label": "chen", "online_learner": {"name": "chen_bandit_boost", "n_learners": 5}},
    ],
}


def config(**changes):
    """BASE with top-level sections replaced or algorithm tables edited."""
    raw = copy.deepcopy(BASE)
    raw.update(changes)
    return raw


def offline(**table):
    """A config whose second algorithm (the offline one) gets extra keys."""
    raw = config()
    raw["algorithms"][1].update(table)
    return raw


def test_misspelt_algorithm_key_names_file_key_and_suggestion():
    """An unknown algorithm key lists the valid keys and the closest one."""
    with pytest.raises(
        ConfigError,
        match=r"^study\.toml \[algorithms\[1\]\.base_lerner\]: unknown key 'base_lerner' in an "
        r"offline algorithm .*Valid keys: label, search, booster, objective, estimator, "
        r"base_learner, callbacks\. Did you mean 'base_learner'\?$",
    ):
        parse_config(offline(base_lerner="lightgbm_tree"), file="study.toml")


def test_misspelt_section_key_and_top_level_section():
    """Unknown keys in [simulation] and unknown sections are errors with suggestions."""
    raw = config(simulation={"log_fracton": 0.1})
    with pytest.raises(
        ConfigError,
        match=r"^c\.toml \[simulation\.log_fracton\]: unknown key 'log_fracton' in "
        r"\[simulation\]\. Valid keys: log_fraction, .*Did you mean 'log_fraction' or",
    ):
        parse_config(raw, file="c.toml")
    raw = config(experimnt={"seeds": [0]})
    with pytest.raises(ConfigError, match=r"\[experimnt\].*Did you mean 'experiment'\?$"):
        parse_config(raw, file="c.toml")


def test_misspelt_plugin_name_suggests_closest():
    """An unknown objective name lists the registered ones and suggests the closest."""
    raw = offline(objective="bopl_z")
    with pytest.raises(
        ConfigError,
        match=r"^c\.toml \[algorithms\[1\]\.objective\.name\]: Unknown objective 'bopl_z'\. "
        r"Known: bopl \(opboost .*\), bopl_s \(opboost .*\)\. "
        r"Did you mean 'bopl_s' or 'bopl'\? A .*$",
    ):
        parse_config(raw, file="c.toml")


def test_unknown_component_parameter_lists_valid_ones():
    """A misspelt base-learner parameter names the class and its parameters."""
    raw = offline(base_learner={"name": "lightgbm_tree", "num_leafs": 7})
    with pytest.raises(
        ConfigError,
        match=r"\[algorithms\[1\]\.base_learner\.num_leafs\]: base_learner 'lightgbm_tree' "
        r"\(LightGBMTree\) has no parameter 'num_leafs'\. Valid: num_leaves, .*"
        r"Did you mean 'num_leaves' or 'num_threads'\?$",
    ):
        parse_config(raw, file="c.toml")


def test_booster_parameters_are_checked_like_components():
    """A misspelt Booster key lists the valid ones; a key the config manages says how."""
    with pytest.raises(
        ConfigError,
        match=r"\[algorithms\[1\]\.booster\.n_round\]: Booster has no parameter 'n_round'\. "
        r"Valid: n_rounds, .*Did you mean 'n_rounds'\?$",
    ):
        parse_config(offline(booster={"n_round": 3}), file="c.toml")
    with pytest.raises(
        ConfigError,
        match=r"\[algorithms\[1\]\.booster\.random_state\]: set 'random_state' with its own "
        r"table .* through \[experiment\] seeds\.$",
    ):
        parse_config(offline(booster={"random_state": 1}), file="c.toml")


def test_wrong_types_name_the_expected_type():
    """Strings where numbers belong are rejected at parse time with the declared constraint."""
    with pytest.raises(
        ConfigError,
        match=r"^c\.toml \[algorithms\[1\]\.booster\.n_rounds\]: The 'n_rounds' parameter of "
        r"Booster must be one of \{'auto'\}\. Got '5' instead; use a number of boosting "
        r"rounds such as 100 \(0: the start alone\), or 'auto'\.$",
    ):
        parse_config(offline(booster={"n_rounds": "5"}), file="c.toml")
    with pytest.raises(ConfigError, match=r"\[simulation\.test_fraction\]: must be float"):
        parse_config(config(simulation={"test_fraction": "0.2"}), file="c.toml")
    with pytest.raises(ConfigError, match=r"\[experiment\.seeds\]: must be a non-empty list"):
        parse_config(config(experiment={"seeds": [0, 0]}), file="c.toml")


def test_out_of_range_and_choice_values():
    """Ranges and choices of [simulation]/[experiment] are checked."""
    with pytest.raises(
        ConfigError, match=r"\[simulation\.log_fraction\]: must be in \(0, 1\)\. Got 1\.5\.$"
    ):
        parse_config(config(simulation={"log_fraction": 1.5}), file="c.toml")
    with pytest.raises(
        ConfigError,
        match=r"\[experiment\.selection\]: must be one of 'true', 'snips'\. Got 'snip'\. "
        r"Did you mean 'snips'\?$",
    ):
        parse_config(config(experiment={"selection": "snip"}), file="c.toml")


def test_missing_sections():
    """A config without [data] or without algorithms says what to add."""
    raw = config()
    del raw["data"]
    with pytest.raises(ConfigError, match=r"^c\.toml: has no \[data\] table; add e\.g\."):
        parse_config(raw, file="c.toml")
    with pytest.raises(ConfigError, match=r"^c\.toml \[algorithms\]: has no \[\[algorithms\]\]"):
        parse_config(config(algorithms=[]), file="c.toml")


def test_baseline_and_online_checks():
    """Unknown baselines, baseline parameters and loss-feedback online learners are errors."""
    raw = config(algorithms=[{"label": "b", "baseline": "best_constnt"}])
    with pytest.raises(ConfigError, match=r"unknown baseline 'best_constnt'.*'best_constant'\?$"):
        parse_config(raw, file="c.toml")
    raw = config(algorithms=[{"label": "b", "baseline": "uniform", "params": {"x": 1}}])
    with pytest.raises(ConfigError, match=r"baseline 'uniform' has no parameter 'x'\. Valid: none"):
        parse_config(raw, file="c.toml")
    raw = config(algorithms=[{"label": "o", "online_learner": "ogd"}])
    with pytest.raises(
        ConfigError,
        match=r"\[algorithms\[0\]\.online_learner\.name\]: online learner 'ogd' learns from "
        # installed plugins (e.g. opboost-vw) may add names after these
        r"'loss' feedback; .* Use one of: banditron, chen_bandit_boost, conservative_ova\b",
    ):
        parse_config(raw, file="c.toml")
    raw = config(
        algorithms=[{"label": "o", "online_learner": {"name": "banditron", "n_actions": 3}}]
    )
    with pytest.raises(ConfigError, match=r"'n_actions' of online_learner 'banditron' is set"):
        parse_config(raw, file="c.toml")


def test_missing_file_and_bad_toml(tmp_path):
    """load_config names the missing file, and the TOML syntax error."""
    with pytest.raises(ConfigError, match=r"nope\.toml: config file not found"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[data\nname = 1\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: is not valid TOML"):
        load_config(bad)


def test_search_validation_messages():
    """Each search candidate is validated as if written in the table."""
    raw = offline(search={"space": {"base_learner.num_leaves": [7, "x"]}})
    with pytest.raises(
        ConfigError,
        match=r'\[algorithms\[1\]\.search\.space\."base_learner\.num_leaves"\]: candidate \'x\' '
        r"is invalid: The 'num_leaves' parameter of LightGBMTree must be an int\. Got 'x' "
        r"instead\.$",
    ):
        parse_config(raw, file="c.toml")
    raw = offline(search={"method": "grd", "space": {"booster.n_rounds": [5]}})
    with pytest.raises(
        ConfigError,
        match=r"search\.method\]: must be one of 'random', 'grid'\. "
        r"Got 'grd'\. Did you mean 'grid'\?$",
    ):
        parse_config(raw, file="c.toml")
    raw = offline(search={"space": {"booster.n_rounds": [5]}})
    raw["simulation"] = {}
    with pytest.raises(
        ConfigError,
        match=r"has a search, which selects on validation rows; "
        r"set \[simulation\] valid_fraction",
    ):
        parse_config(raw, file="c.toml")


def test_search_candidates_are_seeded_and_grid_is_complete():
    """Random search draws distinct seeded candidates; grid enumerates the product."""
    space = {"base_learner.num_leaves": [3, 7, 15], "booster.n_rounds": [5, 10]}
    raw = offline(search={"method": "random", "n_iter": 4, "seed": 3, "space": space})
    spec = parse_config(raw).algorithm("BOPL-S").search
    first = spec.candidates()
    assert first == spec.candidates()
    assert len(first) == 4 and len({tuple(c.values()) for c in first}) == 4
    raw["algorithms"][1]["search"]["method"] = "grid"
    grid = parse_config(raw).algorithm("BOPL-S").search.candidates()
    assert len(grid) == 6
    assert grid[0] == {"base_learner.num_leaves": 3, "booster.n_rounds": 5}
    table = with_candidate(raw["algorithms"][1], grid[-1])
    assert table["base_learner"] == {"name": "lightgbm_tree", "num_leaves": 15}
    assert table["booster"] == {"n_rounds": 10} and "search" not in table
    assert select_candidate({0: [0.5, 0.7], 1: [0.6, 0.6], 2: [0.1, 0.2]}) == 0


def test_config_show_round_trips():
    """The resolved TOML parses back to components with identical get_params."""
    raw = offline(search={"method": "grid", "space": {"booster.n_rounds": [3, 5]}})
    raw["algorithms"].append(
        {"label": "rr", "baseline": "reward_regression", "params": {"n_estimators": 20}}
    )
    first = parse_config(raw, file="a.toml")
    text = dumps_resolved(first)
    again = parse_config(tomllib.loads(text), file="b.toml")
    assert resolved_config(again) == resolved_config(first)
    assert tomli_w.dumps(resolved_config(again)) == text
    for a, b in zip(first.algorithms, again.algorithms, strict=True):
        if a.family == "offline":
            own = [
                {
                    k: v
                    for k, v in x.make_booster(0).get_params().items()
                    if not k.endswith("_params")
                }
                for x in (a, b)
            ]
            assert own[0] == own[1]
            for part in ("objective", "estimator", "base_learner"):
                assert (
                    getattr(a, part).build().get_params() == getattr(b, part).build().get_params()
                )
            assert [c.get_params() for c in a.make_callbacks()] == [
                c.get_params() for c in b.make_callbacks()
            ]
        if a.family == "online":
            assert a.make_online_learner(3).get_params() == b.make_online_learner(3).get_params()
    assert "min_data_in_leaf = 20" in text and "[experiment]" in text
    assert again.algorithm("rr").params["n_estimators"] == 20


def test_policy_learner_rows_parse_and_resolve():
    """A policy_learner row becomes family "policy" with its defaults resolved."""
    raw = config(
        algorithms=[
            {"label": "RR", "policy_learner": {"name": "reward_regression", "num_leaves": 7}}
        ]
    )
    parsed = parse_config(raw, file="c.toml")
    (algo,) = parsed.algorithms
    assert algo.family == "policy" and algo.policy_learner.params == {"num_leaves": 7}
    row = resolved_config(parsed)["algorithms"][0]
    assert (
        row["policy_learner"]["n_estimators"] == 200 and "random_state" not in row["policy_learner"]
    )


def test_policy_learner_errors_name_key_and_fix():
    """A misspelt parameter is suggested; random_state is managed by the trial seed."""
    misspelt = config(
        algorithms=[{"policy_learner": {"name": "reward_regression", "num_leafs": 7}}]
    )
    with pytest.raises(
        ConfigError,
        match=r"c\.toml \[algorithms\[0\]\.policy_learner\.num_leafs\]: policy_learner "
        r"'reward_regression' \(RewardRegression\) has no parameter 'num_leafs'\..*"
        r"Did you mean 'num_leaves' or 'num_threads'\?",
    ):
        parse_config(misspelt, file="c.toml")
    seeded = config(
        algorithms=[{"policy_learner": {"name": "reward_regression", "random_state": 1}}]
    )
    with pytest.raises(
        ConfigError, match=r"'random_state' of policy_learner 'reward_regression' is set"
    ):
        parse_config(seeded, file="c.toml")


def test_offline_algorithm_without_objective_uses_the_booster_default():
    """No ``objective`` key: the Booster's default "auto" (chosen per fit), kept through the
    resolved config; parameters given with it are passed on unchecked until the fit."""
    raw = config()
    del raw["algorithms"][1]["objective"]
    parsed = parse_config(raw, file="a.toml")
    row = resolved_config(parsed)["algorithms"][1]
    assert row["objective"] == {"name": "auto"}
    again = parse_config(tomllib.loads(dumps_resolved(parsed)), file="b.toml")
    assert again.algorithms[1].make_booster(0).get_params()["objective"] == "auto"
    raw["algorithms"][1]["objective"] = {"name": "auto", "variance_penalty": 0.3}
    booster = parse_config(raw, file="c.toml").algorithms[1].make_booster(0)
    assert booster.get_params()["objective_params"] == {"variance_penalty": 0.3}


def test_shipped_labels_that_name_the_papers_algorithms_run_them():
    """In examples/, an offline algorithm labelled BOPL or BOPL-S is London et al.'s algorithm
    as published, boosting from F_0 = 0, unless its label says it starts from the reward model
    (or is Booster()'s default)."""
    from pathlib import Path

    from opboost.core.resolve import effective_warm_start

    root = Path(__file__).resolve().parents[2] / "examples"
    checked = []
    for path in sorted(root.rglob("*.toml")):
        for algo in load_config(path).algorithms:
            label = algo.label.lower()
            if algo.family != "offline" or "bopl" not in label:
                continue
            if any(word in label for word in ("reward model", "reward-model", "default")):
                continue
            booster = algo.make_booster(random_state=0)
            learner = booster.resolve_components()[2]
            start, _ = effective_warm_start(booster, learner, can_start=True)
            assert start is None, f"{path.relative_to(root)}: {algo.label!r} starts from {start}"
            checked.append(algo.label)
    assert len(checked) > 20


def test_the_papers_configs_grow_every_tree_on_every_row():
    """London et al.'s tables grew every tree on every row: their configs in examples/paper
    turn off ``row_sampling``, whose "auto" would sample their large designs (stacked rows,
    or since issue 39 the K per-action trees on the contexts)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples" / "paper"
    checked = []
    for path in sorted(root.glob("london2023_*.toml")):
        for algo in load_config(path).algorithms:
            if algo.family != "offline":
                continue
            learner = algo.make_booster(random_state=0).resolve_components()[2]
            if hasattr(learner, "row_sampling"):
                assert learner.row_sampling == "none", f"{path.name}: {algo.label!r}"
                checked.append((path.name, algo.label))
    assert len(checked) >= 20
