"""Unclear errors replaced by ones that name the thing and the fix, and values that were
accepted or silently replaced now refused by name (issue 40 items 7 and 8). Every message is
asserted whole."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import opboost
from opboost.api.data.logged import LoggedBandit
from opboost.compose.choice import PolicyChoice
from opboost.compose.cli import main
from opboost.compose.config import load_config
from opboost.compose.study import run_study


def _raises(error, message: str):
    return pytest.raises(error, match=f"^{re.escape(message)}$")


def _logs(n: int = 20, k: int = 3) -> LoggedBandit:
    rng = np.random.default_rng(0)
    return LoggedBandit(rng.normal(size=(n, 2)), rng.integers(0, k, n), np.full(n, 1 / k),
                        rng.random(n), k)  # fmt: skip


def _frame(n: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"x": rng.normal(size=n), "a": rng.choice(["u", "v", "w"], n), "p": 1 / 3, "r": 1.0}
    )


def _from_frame(df, **kwargs):
    return LoggedBandit.from_dataframe(
        df, contexts=["x"], action="a", propensity="p", reward="r", **kwargs
    )


# --- item 7: accepted or silently replaced before ------------------------------------------


def test_n_actions_beyond_32_bits_is_refused_by_name():
    message = (
        "LoggedBandit: n_actions must be at most 2**31 - 1 = 2147483647. Got "
        "9223372036854775808; action indices are 32-bit categories to LightGBM. Number the "
        "actions 0 .. K-1 (from_dataframe's actions= maps any ids to them)."
    )
    with _raises(ValueError, message):
        LoggedBandit(np.ones((2, 1)), [0, 1], [1.0, 1.0], [0.0, 1.0], 2**63)


def test_infinite_scale_is_refused_by_name():
    """Booster(scale=inf) fitted 0 rounds without a word."""
    message = (
        "The 'scale' parameter of Booster must be finite. Got inf instead; use None to keep "
        "the base learner's scale."
    )
    with _raises(ValueError, message):
        opboost.Booster(scale=float("inf"), n_rounds=2).fit(_logs())


CONFIG = """
[data]
name = "digits"

[experiment]
seeds = [0]

[[algorithms]]
label = "stopped"
booster = {{ n_rounds = 5 }}
callbacks = [{{ name = "early_stopping", metric = "{metric}" }}]
"""


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (
            "eval_snips_argmx",
            "The 'metric' parameter of EarlyStopping must be a metric a fit records, one of "
            "alpha, gradient_norm, train_objective, train_value, eval_ips_softmax, "
            "eval_snips_softmax, eval_ips_argmax, eval_snips_argmax, select_value, select_low, "
            "select_high. Got 'eval_snips_argmx' instead; eval_* metrics need "
            "Booster.fit(..., eval_data=...), select_* ones validation_fraction.",
        ),
        (
            "eval_snips_argmax",
            "early stopping on 'eval_snips_argmax' needs validation rows: set [simulation] "
            "valid_fraction, e.g. 0.2, or stop on 'train_objective'.",
        ),
        (
            "select_value",
            "early stopping on 'select_value' needs held-out logs: set "
            "booster.validation_fraction, e.g. 0.2, or stop on 'train_objective'.",
        ),
    ],
    ids=["unknown", "eval_without_validation_rows", "select_without_held_out_logs"],
)
def test_early_stopping_metric_a_trial_cannot_record_fails_at_config_show(
    tmp_path, capsys, metric, message
):
    """It used to pass ``config show`` and fail in ``run`` without the file or key."""
    config = tmp_path / "stop.toml"
    config.write_text(CONFIG.format(metric=metric))
    assert main(["config", "show", str(config)]) == 2
    key = "algorithms[0].callbacks[0].metric"
    assert capsys.readouterr().err == f"opboost: error: {config} [{key}]: {message}\n"


@pytest.mark.parametrize("command", [["quickstart"], ["study", "x.toml", "--out", "o"]])
def test_n_jobs_0_is_refused_on_the_command_line(capsys, command):
    """--n-jobs 0 silently fell back to the config's n_jobs."""
    with pytest.raises(SystemExit) as info:
        main([*command, "--n-jobs", "0"])
    assert info.value.code == 2
    error = capsys.readouterr().err.strip().split("\n")[-1]
    assert (
        error == f"opboost {command[0]}: error: argument --n-jobs: must be an integer >= 1. Got '0'"
    )


def test_n_jobs_0_is_refused_by_run_study(tmp_path):
    config = tmp_path / "stop.toml"
    config.write_text(CONFIG.format(metric="train_objective"))
    message = f"{config}: n_jobs must be an integer >= 1 (parallel trials). Got 0."
    with _raises(ValueError, message):
        run_study(load_config(config), None, n_jobs=0)


# --- item 8: unclear errors ----------------------------------------------------------------


def test_duplicate_dataframe_columns_are_named():
    df = _frame()
    with _raises(
        ValueError,
        "LoggedBandit.from_dataframe: column(s) ['x'] appear more than once in the DataFrame; "
        "rename or drop the duplicates (df.loc[:, ~df.columns.duplicated()] keeps the first).",
    ):
        _from_frame(pd.concat([df, df[["x"]]], axis=1), actions=["u", "v", "w"])


def test_empty_dataframe_is_named():
    with _raises(
        ValueError,
        "LoggedBandit.from_dataframe: the DataFrame has no rows; a LoggedBandit needs at "
        "least one logged row.",
    ):
        _from_frame(_frame().iloc[:0])


def test_subset_of_no_rows_is_named():
    with _raises(
        ValueError,
        "LoggedBandit.subset: no rows selected; a LoggedBandit needs at least one row.",
    ):
        _logs().subset([])


def test_negative_random_state_is_named():
    with _raises(
        ValueError,
        "The 'random_state' parameter of Booster must be None, an int >= 0 or a "
        "numpy.random.Generator. Got -1 instead.",
    ):
        opboost.Booster(random_state=-1, n_rounds=2).fit(_logs())


def test_callbacks_that_are_not_a_list_are_named():
    with _raises(
        ValueError,
        "Booster.fit: callbacks must be a list of opboost.core.callbacks.Callback objects. Got 5 "
        "(int); pass e.g. callbacks=[EarlyStopping()].",
    ):
        opboost.Booster(n_rounds=2).fit(_logs(), callbacks=5)


def test_directory_given_as_config_is_named(tmp_path, capsys):
    (tmp_path / "a.toml").write_text("")
    assert main(["config", "show", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"opboost: error: {tmp_path}: is a directory, not a config file; pass a TOML config "
        f"file such as {tmp_path / 'a.toml'}.\n"
    )


def test_quickstart_negative_seeds_is_named(capsys):
    """--seeds -1 used to fail in the packaged config's [experiment.seeds] with 'Got []'."""
    with pytest.raises(SystemExit):
        main(["quickstart", "--seeds", "-1"])
    error = capsys.readouterr().err.strip().split("\n")[-1]
    assert error == "opboost quickstart: error: argument --seeds: must be an integer >= 1. Got '-1'"


@pytest.fixture(scope="module")
def policy():
    return opboost.Booster(n_rounds=2, warm_start="none", random_state=0).fit(_logs()).policy_


def test_saving_over_a_directory_names_the_target_not_the_temporary_file(policy, tmp_path):
    (tmp_path / "p.json").mkdir()
    with _raises(
        IsADirectoryError,
        f"[Errno 21] cannot write {tmp_path / 'p.json'}: it is a directory; remove it or pick "
        f"a file name",
    ):
        policy.save(tmp_path / "p.json")


def test_saving_into_a_missing_directory_names_it(policy, tmp_path):
    target = tmp_path / "missing" / "p.json"
    with _raises(
        FileNotFoundError,
        f"[Errno 2] cannot write {target}: {target.parent} is not an existing directory; "
        f"create it first",
    ):
        policy.save(target)


def test_saving_a_directory_below_a_file_names_the_file(policy, tmp_path):
    (tmp_path / "file").write_text("x")
    with _raises(
        NotADirectoryError,
        f"[Errno 20] cannot save a policy at {tmp_path / 'file' / 'p'}: {tmp_path / 'file'} is "
        f"not a directory",
    ):
        policy.save(tmp_path / "file" / "p")


@pytest.mark.parametrize(("bad", "shown"), [(["w"], "['w'] (list)"), (float("nan"), "nan (float)")])
def test_catalogue_with_a_list_or_nan_is_named_when_the_logs_are_built(bad, shown):
    """It raised a raw TypeError, or a JSON error only when the policy was saved."""
    with _raises(
        ValueError,
        f"LoggedBandit.from_dataframe: actions= has {shown} at position 2; action ids must be "
        f"strings or finite numbers.",
    ):
        _from_frame(_frame(), actions=["u", "v", bad, "w"])


def test_policy_choice_on_12_rows_names_the_held_out_rows():
    """scikit-learn's "Found array with 1 sample(s)" from the DR reward model before."""
    with _raises(
        ValueError,
        "PolicyChoice.fit: validation_fraction=0.2 holds out 2 of 12 rows, but the doubly "
        "robust scores need at least 4 (their reward model is cross-fitted on two folds). Use "
        "more logs or a larger validation_fraction.",
    ):
        PolicyChoice(booster_params={"n_rounds": 2}).fit(_logs(12))


def test_absurd_synthetic_data_size_fails_at_config_show(tmp_path, capsys):
    """n_samples = 10**10 passed config show and died in run with a numpy traceback."""
    config = tmp_path / "big.toml"
    config.write_text(
        '[data]\nname = "synthetic_multiclass"\nn_samples = 10000000000\n\n[experiment]\n'
        'seeds = [0]\n\n[[algorithms]]\nlabel = "u"\nbaseline = "uniform"\n'
    )
    assert main(["config", "show", str(config)]) == 2
    assert re.fullmatch(
        rf"opboost: error: {re.escape(str(config))} \[data\.n_samples\]: The 'n_samples' "
        r"parameter of SyntheticMulticlass asks for 10,000,000,000 x 50 float64 values "
        r"\(n_samples x n_features\): at least 3725\.3 GiB needed, more than the \d+\.\d GiB "
        r"(of physical memory|left under .*); use fewer samples or features\.\n",
        capsys.readouterr().err,
    )


# --- Dask: Parquet files -------------------------------------------------------------------


def _parquet(tmp_path, **columns):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    for i in range(2):
        frame = pd.DataFrame(
            {"x": rng.normal(size=30), "a": rng.integers(0, 3, 30), "p": 1 / 3, "r": 1.0, **columns}
        )
        frame.to_parquet(tmp_path / f"part{i}.parquet")
    return tmp_path


def _read(path, contexts):
    from opboost.dask import DaskLoggedBandit

    return DaskLoggedBandit.from_parquet(
        path,
        context_columns=contexts,
        action_column="a",
        reward_column="r",
        propensity_column="p",
        n_actions=3,
    )


def test_dask_truncated_parquet_file_is_named(tmp_path):
    path = _parquet(tmp_path)
    data = (path / "part1.parquet").read_bytes()
    (path / "part1.parquet").write_bytes(data[: len(data) // 2])
    with _raises(
        ValueError,
        f"DaskLoggedBandit.from_parquet: {path / 'part1.parquet'}: not a readable Parquet file "
        f"(Parquet magic bytes not found in footer. Either the file is corrupted or this is not "
        f"a parquet file.); it is truncated or corrupted: write it again or remove it.",
    ):
        _read(path, ["x"])


def test_dask_non_numeric_column_is_named(tmp_path):
    path = _parquet(tmp_path, s="text")
    with pytest.raises(ValueError) as info:
        _read(path, ["x", "s"])
    assert re.fullmatch(
        rf"DaskLoggedBandit\.from_parquet: column 's' of {re.escape(str(path))} has dtype "
        r"(object|string|str); contexts, actions, propensities and rewards must be numeric\. "
        r"Encode it as numbers \(categories as integer codes\) when writing the files\.",
        str(info.value),
    )
