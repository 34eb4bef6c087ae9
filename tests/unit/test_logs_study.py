"""Studies on the user's own logs ([data] path): a CSV written here is split by seed, every
algorithm is judged on the held-out logs by IPS, SNIPS and DR (the numbers equal the
estimators by hand), and bad [data] tables are refused with messages naming the key, the
column and the file."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

import opboost
from opboost import LoggedBandit
from opboost.api.exceptions import ConfigError
from opboost.compose.config import load_config, parse_config
from opboost.compose.study import comparable, run_study
from opboost.simulation.supervised import supervised_to_bandit

OFFERS = ["promo_D", "promo_B", "promo_A", "promo_C"]  # not sorted: the catalogue's order counts
COLUMNS = ["age", "income", "tenure", "city"]
MAPPING = {
    "contexts": COLUMNS,
    "action": "offer",
    "propensity": "p",
    "reward": "clicked",
    "actions": OFFERS,
}
BOPL_S = {"objective": "bopl_s", "n_rounds": 6, "warm_start": "none"}


def _write_logs(path) -> pd.DataFrame:
    """480 logged rows (of 600 labelled rows; 20% train the logger) with string action ids
    and a string context column, written as a CSV."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0).astype(int)
    y = np.where(rng.random(600) < 0.3, rng.integers(0, 4, 600), y)  # noisy labels
    logged = supervised_to_bandit(X, y, n_actions=4, log_fraction=0.2, random_state=0).logged
    frame = pd.DataFrame(logged.contexts, columns=COLUMNS[:3])
    frame["city"] = np.array(["Oslo", "Lima", "Pune"])[rng.integers(0, 3, len(frame))]
    frame["offer"] = np.array(OFFERS)[logged.actions]
    frame["p"] = logged.propensities
    frame["clicked"] = logged.rewards
    frame.to_csv(path, index=False)
    return frame


def _raw(**data) -> dict:
    return {
        "data": {"path": "logs.csv", **MAPPING, **data},
        "experiment": {"seeds": [0, 1]},
        "algorithms": [
            {"label": "uniform", "baseline": "uniform"},
            {"label": "logging", "baseline": "logging"},
            {
                "label": "BOPL-S",
                "objective": BOPL_S["objective"],
                "booster": {"n_rounds": BOPL_S["n_rounds"], "warm_start": "none"},
            },
        ],
    }


@pytest.fixture(scope="module")
def logs_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("logs")
    _write_logs(directory / "logs.csv")
    return directory


@pytest.fixture(scope="module")
def study(logs_dir):
    config = parse_config(_raw(), file=str(logs_dir / "study.toml"))
    out = logs_dir / "run"
    return run_study(config, out, n_jobs=1, progress=False), out


def _by_hand_split(frame: pd.DataFrame, seed: int, fraction: float = 0.25):
    """The documented split: the first round(fraction * n) rows of a seeded permutation."""
    n = len(frame)
    order = np.random.default_rng(np.random.SeedSequence([seed, 0])).permutation(n)
    hold = np.sort(order[: round(fraction * n)])
    train = np.sort(order[round(fraction * n) :])
    full = LoggedBandit.from_dataframe(frame, **MAPPING)
    return full.subset(train), full.subset(hold)


def test_study_on_logs_writes_the_tables(study):
    """results.json/csv/md and heldout_value.png are written, with every held-out metric."""
    _, out = study
    for name in ("results.json", "results.csv", "results.md", "heldout_value.png"):
        assert (out / name).is_file(), name
    table = (out / "results.md").read_text()
    assert "| held-out IPS | held-out SNIPS | held-out DR |" in table
    assert "Logs: logs.csv" in table
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    for name in ("ips", "snips", "dr"):
        for end in ("", "_low", "_high"):
            assert f"heldout_{name}{end}" in header
    trials = json.loads((out / "results.json").read_text())["trials"]
    assert {t["info"]["n_holdout"] for t in trials} == {120}
    assert {t["info"]["n_logged"] for t in trials} == {360}


@pytest.mark.parametrize("seed", [0, 1])
def test_heldout_numbers_are_the_estimators_by_hand(study, logs_dir, seed):
    """IPS and SNIPS of the uniform policy and of BOPL-S's argmax policy equal the formulas
    computed by hand on the seed's held-out split; the logging policy's is the mean reward."""
    results, _ = study
    frame = pd.read_csv(logs_dir / "logs.csv")
    train, hold = _by_hand_split(frame, seed)
    metrics = {t["label"]: t["metrics"] for t in results["trials"] if t["seed"] == seed}
    r, p = hold.rewards, hold.propensities

    w = 1.0 / (4 * p)  # the uniform policy's importance weights
    assert metrics["uniform"]["heldout_ips"] == pytest.approx(np.mean(w * r), rel=1e-9)
    assert metrics["uniform"]["heldout_snips"] == pytest.approx(np.sum(w * r) / np.sum(w), rel=1e-9)
    assert metrics["logging"]["heldout_snips"] == pytest.approx(np.mean(r), rel=1e-9)

    with threadpool_limits(limits=1):
        booster = opboost.Booster(random_state=seed, verbose=0, **BOPL_S).fit(train)
    w = (booster.predict(hold.contexts) == hold.actions) / p
    assert metrics["BOPL-S"]["heldout_ips"] == pytest.approx(np.mean(w * r), rel=1e-6)
    assert metrics["BOPL-S"]["heldout_snips"] == pytest.approx(np.sum(w * r) / np.sum(w), rel=1e-6)
    for name in ("ips", "snips", "dr"):
        low, high = (metrics["BOPL-S"][f"heldout_{name}_{end}"] for end in ("low", "high"))
        assert low < metrics["BOPL-S"][f"heldout_{name}"] < high


def test_relative_path_is_read_from_the_config_directory(logs_dir, tmp_path, monkeypatch):
    """path = "logs.csv" is found next to the config file, whatever the working directory."""
    (logs_dir / "study.toml").write_text(
        '[data]\npath = "logs.csv"\ncontexts = ["age", "income", "tenure", "city"]\n'
        'action = "offer"\npropensity = "p"\nreward = "clicked"\n'
        '[[algorithms]]\nlabel = "uniform"\nbaseline = "uniform"\n'
    )
    monkeypatch.chdir(tmp_path)
    config = load_config(logs_dir / "study.toml")
    assert config.data.file_path == str(logs_dir / "logs.csv")
    assert config.data.holdout_fraction == 0.25


def test_a_study_runs_what_was_resolved_when_its_config_was_read(logs_dir, tmp_path, monkeypatch):
    """A config read by a relative file name (path = "logs.csv" beside it) runs the same study
    after the working directory changed: the trials run the logs path resolved when the config
    was read, not the config parsed again from the new directory."""
    raw = _raw()
    raw["experiment"]["seeds"] = [0]
    raw["algorithms"] = raw["algorithms"][:1]
    here = run_study(parse_config(raw, file=str(logs_dir / "study.toml")), None, progress=False)
    monkeypatch.chdir(logs_dir)
    config = parse_config(raw, file="study.toml")
    monkeypatch.chdir(tmp_path)  # no logs.csv here
    moved = run_study(config, None, progress=False)
    assert not moved["failed"]
    assert comparable(moved["trials"]) == comparable(here["trials"])
    assert moved["trials"][0]["metrics"]["heldout_ips"] > 0


def test_parquet_logs_give_the_csv_numbers(logs_dir, tmp_path):
    """The same logs as Parquet give the same held-out numbers as the CSV."""
    pytest.importorskip("pyarrow")
    pd.read_csv(logs_dir / "logs.csv").to_parquet(tmp_path / "logs.parquet")
    raw = _raw(path="logs.parquet")
    raw["algorithms"] = raw["algorithms"][:1]
    parquet = run_study(parse_config(raw, file=str(tmp_path / "s.toml")), None, progress=False)
    raw["data"]["path"] = str(logs_dir / "logs.csv")
    csv = run_study(parse_config(raw, file=str(tmp_path / "s.toml")), None, progress=False)
    assert parquet["summary"] == csv["summary"]


def _refusal(logs_dir, raw) -> str:
    """The message refusing ``raw`` when the config is read or, for the logs file and its
    columns, when a study on it starts."""
    with pytest.raises(ConfigError) as info:
        run_study(parse_config(raw, file=str(logs_dir / "study.toml")), None, progress=False)
    return str(info.value)


def test_unknown_column_names_key_column_and_file(logs_dir):
    """A column missing from the file: the key, the column and both files are named."""
    message = _refusal(logs_dir, _raw(reward="click"))
    assert message == (
        f"{logs_dir / 'study.toml'} [data.reward]: column 'click' is not in "
        f"{logs_dir / 'logs.csv'}. Its columns: age, income, tenure, city, offer, p, clicked. "
        f"Did you mean 'clicked'?"
    )
    message = _refusal(logs_dir, _raw(contexts=["age", "incme"]))
    assert re.search(r"\[data\.contexts\[1\]\]: column 'incme' is not in .*logs\.csv", message)


def test_bad_data_tables_are_refused(logs_dir):
    """Unknown keys, a missing mapping key, a missing file and a bad holdout fraction."""
    assert "unknown key 'rewards' in [data] (a study on logs)" in _refusal(
        logs_dir, _raw(rewards="clicked")
    )
    raw = _raw()
    del raw["data"]["propensity"]
    assert "[data.propensity]: a study on logs needs the column mapping" in _refusal(logs_dir, raw)
    assert f"logs file {logs_dir / 'nope.csv'} not found" in _refusal(
        logs_dir, _raw(path="nope.csv")
    )
    assert "[data.holdout_fraction]: must be a fraction in (0, 1)" in _refusal(
        logs_dir, _raw(holdout_fraction=1.0)
    )
    raw = _raw()
    raw["simulation"] = {"log_fraction": 0.1}
    assert "[simulation]: a study on logs ([data] path) simulates nothing" in _refusal(
        logs_dir, raw
    )


def test_parquet_without_a_reader_says_what_to_install(logs_dir, tmp_path, monkeypatch):
    """Parquet logs without pyarrow or fastparquet: the error says to install one or use CSV."""
    import importlib.util

    pd.read_csv(logs_dir / "logs.csv").head(5).to_csv(tmp_path / "logs.parquet")  # any bytes
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("pyarrow", "fastparquet") else real(name, *a),
    )
    message = _refusal(tmp_path, _raw(path="logs.parquet"))
    assert message.endswith(
        f"[data.path]: reading the Parquet file {tmp_path / 'logs.parquet'} needs pyarrow or "
        f"fastparquet, and neither is installed: pip install pyarrow, or save the logs as CSV."
    )


def test_online_learners_are_refused_with_the_reason(logs_dir):
    """An online learner cannot learn from fixed logs: the error names it and says why."""
    raw = _raw()
    raw["algorithms"].append({"label": "LinUCB", "online_learner": {"name": "linucb"}})
    message = _refusal(logs_dir, raw)
    assert message.startswith(
        f"{logs_dir / 'study.toml'} [algorithms[3].online_learner]: algorithm 'LinUCB' is an "
        f"online learner (linucb): it chooses actions and learns from their rewards, which "
        f"fixed logs cannot answer"
    )


def test_search_is_refused_on_logs(logs_dir):
    raw = copy.deepcopy(_raw())
    raw["algorithms"][2]["search"] = {
        "method": "grid",
        "space": {"booster.reward_shift": [0.0, -0.5]},
    }
    assert "[algorithms[2].search]: algorithm 'BOPL-S' has a search, which selects on" in (
        _refusal(logs_dir, raw)
    )


def test_cli_names_a_missing_column_before_running(logs_dir, tmp_path, capsys):
    """opboost study --dry-run checks the logs file's columns: exit status 2 and the message."""
    from opboost.compose.cli import main

    config = tmp_path / "bad.toml"
    config.write_text(
        f'[data]\npath = "{(logs_dir / "logs.csv").as_posix()}"\n'
        'contexts = ["age"]\naction = "offer"\npropensity = "p"\nreward = "click"\n'
        '[[algorithms]]\nlabel = "uniform"\nbaseline = "uniform"\n'
    )
    assert main(["study", str(config), "--out", str(tmp_path / "run"), "--dry-run"]) == 2
    assert f"{config} [data.reward]: column 'click' is not in " in capsys.readouterr().err
