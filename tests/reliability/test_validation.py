"""Issue 20, items 4, 7, 12 and 13: config mistakes are caught at parse time, named by file and
key; LightGBM aliases and typos in ``params`` are rejected; the CLI reports clean errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.compose.cli import main
from opboost.compose.config import load_config, parse_config

FILE = "examples/x.toml"


def _config(algorithm=None, **sections):
    """A valid config dict (with validation rows, so searches are allowed) plus changes."""
    raw = {
        "data": {"name": "digits"},
        "simulation": {"valid_fraction": 0.2},
        "algorithms": [{"label": "ok", "baseline": "uniform"}, {"label": "x", **(algorithm or {})}],
    }
    for name, table in sections.items():
        raw[name] = {**raw.get(name, {}), **table}
    return raw


# (config, key path, bad value as it appears in the message)
BAD_VALUES = [
    pytest.param(
        _config({"booster": {"n_rounds": -5}}),
        "algorithms[1].booster.n_rounds",
        "-5",
        id="n_rounds",
    ),
    pytest.param(
        _config({"base_learner": {"name": "lightgbm_tree", "num_leaves": 1}}),
        "algorithms[1].base_learner.num_leaves",
        "Got 1 ",
        id="num_leaves",
    ),
    pytest.param(
        _config({"booster": {"learning_rate": 0.0}}),
        "algorithms[1].booster.learning_rate",
        "0.0",
        id="learning_rate",
    ),
    pytest.param(
        _config({"booster": {"validation_fraction": 2.0}}),
        "algorithms[1].booster.validation_fraction",
        "2.0",
        id="validation_fraction",
    ),
    pytest.param(
        _config({"callbacks": [{"name": "early_stopping", "patience": -2}]}),
        "algorithms[1].callbacks[0].patience",
        "-2",
        id="patience",
    ),
    pytest.param(
        _config({"online_learner": {"name": "chen_bandit_boost", "gamma": 5.0}}),
        "algorithms[1].online_learner.gamma",
        "5.0",
        id="gamma",
    ),
    pytest.param(
        _config({"estimator": {"name": "truncated_ips", "max_weight": -1.0}}),
        "algorithms[1].estimator.max_weight",
        "-1.0",
        id="max_weight",
    ),
    pytest.param(
        _config({"baseline": "reward_regression", "params": {"num_leaves": 1}}),
        "algorithms[1].params.num_leaves",
        "Got 1 ",
        id="baseline-num_leaves",
    ),
    pytest.param(
        _config(simulation={"log_fraction": math.nan}),
        "simulation.log_fraction",
        "nan",
        id="log_fraction-nan",
    ),
    pytest.param(
        _config(simulation={"logging_C": math.inf}),
        "simulation.logging_C",
        "inf",
        id="logging_C-inf",
    ),
    pytest.param(
        _config(simulation={"test_fraction": math.nan}),
        "simulation.test_fraction",
        "nan",
        id="test_fraction-nan",
    ),
    pytest.param(
        _config(experiment={"confidence": math.nan}),
        "experiment.confidence",
        "nan",
        id="confidence-nan",
    ),
    pytest.param(
        _config({"search": {"space": {"booster.n_rounds": [10, -2]}}}),
        'algorithms[1].search.space."booster.n_rounds"',
        "-2",
        id="search-candidate",
    ),
    pytest.param(
        _config({"base_learner": {"name": "lightgbm_tree", "params": {"max_leaves": 4}}}),
        "algorithms[1].base_learner.params",
        "max_leaves",
        id="lightgbm-alias",
    ),
    pytest.param(_config(data={"name": "diabetes"}), "data.name", "diabetes", id="regression-data"),
]


@pytest.mark.parametrize("raw, key, value", BAD_VALUES)
def test_bad_value_is_a_config_error_naming_file_key_and_value(raw, key, value, monkeypatch):
    """Every bad value is a ConfigError raised by the parser, before any trial runs; the
    message names the file, the key path and the value."""
    import opboost.compose.trial.trial_data

    def no_trials(*args, **kwargs):  # pragma: no cover - reached only on a regression
        raise AssertionError("a trial ran")

    monkeypatch.setattr(opboost.compose.trial.trial_data, "prepare_trial", no_trials)
    with pytest.raises(ConfigError) as info:
        parse_config(raw, file=FILE)
    message = str(info.value)
    assert FILE in message and f"[{key}]" in message and value in message
    assert info.value.file == FILE and info.value.key == key


def test_valid_config_still_parses():
    """The checks accept the defaults and ordinary values (no false alarms)."""
    raw = _config(
        {
            "booster": {"n_rounds": 5, "learning_rate": 0.5, "validation_fraction": 0.2},
            "base_learner": {"name": "lightgbm_tree", "num_leaves": 4, "params": {"subsample": 1}},
            "estimator": {"name": "truncated_ips", "max_weight": math.inf},
            "callbacks": [{"name": "early_stopping", "patience": 2}, {"name": "history"}],
            "search": {"space": {"booster.n_rounds": [3, 5]}},
        }
    )
    raw["algorithms"].append({"label": "chen", "online_learner": {"name": "chen_bandit_boost"}})
    config = parse_config(raw, file=FILE)
    assert [a.label for a in config.algorithms] == ["ok", "x", "chen"]


@pytest.mark.parametrize(
    "params, match",
    [
        pytest.param(
            {"max_leaves": 4}, r"alias of 'num_leaves'.*use num_leaves=4 \(named", id="max_leaves"
        ),
        pytest.param(
            {"num_leaf": 4}, r"alias of 'num_leaves'.*use num_leaves=4 \(named", id="num_leaf"
        ),
        pytest.param(
            {"min_child_samples": 5},
            r"alias of 'min_data_in_leaf'.*use min_data_in_leaf=5 \(named",
            id="min_child_samples",
        ),
        pytest.param(
            {"num_leafs": 4},
            r"'num_leafs'.*not a LightGBM parameter.*Did you mean"
            r".*'num_leaves'",
            id="num_leafs",
        ),
        pytest.param(
            {"shrinkage_rate": 0.1}, r"may not set \['shrinkage_rate'\]", id="reserved-alias"
        ),
    ],
)
def test_lightgbm_alias_or_typo_in_params_is_rejected(params, match):
    """Aliases of named/reserved settings and unknown names in ``params`` are errors."""
    with pytest.raises(InvalidParameterError, match=match):
        LightGBMTree(params=params)._lgb_params(0)
    with pytest.raises(InvalidParameterError, match=match):
        LightGBMTree(params=params).prepare(np.zeros((20, 2)), 2)


def test_lightgbm_params_accepts_real_parameters():
    """Real LightGBM parameters (and aliases of unnamed ones) still pass through."""
    params = LightGBMTree(params={"force_col_wise": True, "subsample": 1.0})._lgb_params(0)
    assert params["force_col_wise"] is True and params["subsample"] == 1.0


# --- the command line ------------------------------------------------------------------------

BASELINE = '[data]\nname = "{data}"\n[[algorithms]]\nbaseline = "{baseline}"\n{extra}'


def _cli(capsys, argv):
    code = main(argv)
    return code, capsys.readouterr().err


def test_cli_non_utf8_config_is_a_clean_error(tmp_path, capsys):
    """A Latin-1 config is `opboost: error: <file> ...` (exit 2), not a traceback."""
    path = tmp_path / "latin1.toml"
    path.write_bytes(
        BASELINE.format(data="digits", baseline="uniform", extra="# caf\xe9\n").encode("latin-1")
    )
    code, err = _cli(capsys, ["run", str(path)])
    assert code == 2 and err.startswith("opboost: error: ") and "latin1.toml" in err
    assert "UTF-8" in err
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)


def test_cli_regression_data_set_is_a_clean_error(tmp_path, capsys):
    """A regression data set in a study config, or for quickstart, exits 2 with a message."""
    path = tmp_path / "reg.toml"
    path.write_text(BASELINE.format(data="diabetes", baseline="uniform", extra=""))
    code, err = _cli(capsys, ["run", str(path)])
    assert code == 2 and err.startswith("opboost: error: ") and "reg.toml" in err
    assert "'diabetes' is a regression task" in err
    code, err = _cli(capsys, ["quickstart", "--dataset", "diabetes", "--seeds", "1"])
    assert code == 2 and "'diabetes' is a regression task" in err


def test_cli_bad_baseline_parameter_is_a_clean_error(tmp_path, capsys):
    """A baseline's out-of-range parameter exits 2 naming file and key, before any trial."""
    path = tmp_path / "base.toml"
    path.write_text(
        BASELINE.format(
            data="digits", baseline="reward_regression", extra="params = { learning_rate = -1.0 }\n"
        )
    )
    code, err = _cli(capsys, ["run", str(path)])
    assert code == 2 and "base.toml [algorithms[0].params.learning_rate]" in err
    assert "-1.0" in err
