"""The "open_bandit" loader on a tiny CSV tree in obp's layout and column names (the real
sample's headers: an unnamed index, timestamp, item_id, position (1-based), click,
propensity_score, user_feature_0..3, user-item_affinity_0..K-1; item_context.csv: an unnamed
index, item_id, item_feature_0 numeric, item_feature_1..3 categorical strings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.core.registry import make
from opboost.simulation.datasets.open_bandit import OpenBandit

K = 3
LOG = pd.DataFrame(
    {
        # deliberately out of time order: the loader sorts by timestamp, as obp does
        "timestamp": [
            "2019-11-24 00:00:03+00:00",
            "2019-11-24 00:00:01+00:00",
            "2019-11-24 00:00:02+00:00",
            "2019-11-24 00:00:04+00:00",
        ],
        "item_id": [2, 0, 1, 0],
        "position": [3, 1, 2, 1],
        "click": [1, 0, 0, 1],
        "propensity_score": [0.5, 0.25, 0.125, 0.75],
        "user_feature_0": ["b", "a", "b", "c"],
        "user_feature_1": ["x", "y", "x", "x"],
        "user_feature_2": ["u", "u", "v", "v"],
        "user_feature_3": ["p", "q", "q", "p"],
        **{f"user-item_affinity_{j}": [0.1 * j, 0.0, 1.0, 2.0] for j in range(K)},
    }
)
ITEMS = pd.DataFrame(
    {
        "item_id": [1, 0, 2],  # out of order on purpose
        "item_feature_0": [-0.5, 0.25, 1.5],
        "item_feature_1": ["f3", "a7", "f3"],
        "item_feature_2": ["zz", "zz", "aa"],
        "item_feature_3": ["m", "k", "m"],
    }
)


def _write(folder, log=LOG, items=ITEMS, campaign="all"):
    folder.mkdir(parents=True)
    log.to_csv(folder / f"{campaign}.csv")  # with the unnamed index column, as the sample
    items.to_csv(folder / "item_context.csv")


@pytest.fixture
def obd(tmp_path):
    """<tmp>/open_bandit/{random,bts}/all/ as in the shared data directory."""
    for policy in ("random", "bts"):
        _write(tmp_path / "open_bandit" / policy / "all")
    return tmp_path


def test_reads_obps_layout_like_obps_pre_process(obd):
    data = OpenBandit(behavior_policy="bts").load_logged(obd)
    assert isinstance(data, LoggedBandit)
    # sorted by timestamp: rows 1, 2, 0, 3 of the file
    order = [1, 2, 0, 3]
    np.testing.assert_array_equal(data.actions, LOG["item_id"].to_numpy()[order])
    np.testing.assert_array_equal(data.positions, [0, 1, 2, 0])  # 1..3 -> 0..2
    np.testing.assert_array_equal(data.rewards, [0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(data.propensities, [0.25, 0.125, 0.5, 0.75])
    assert data.n_actions == K and data.n_positions == 3
    # one-hot, first sorted category dropped: f0 b,c | f1 y | f2 v | f3 q
    expected = np.array(
        [
            # f0=a, f1=y, f2=u, f3=q
            [0, 0, 1, 0, 1],
            # f0=b, f1=x, f2=v, f3=q
            [1, 0, 0, 1, 1],
            # f0=b, f1=x, f2=u, f3=p
            [1, 0, 0, 0, 0],
            # f0=c, f1=x, f2=v, f3=p
            [0, 1, 0, 1, 0],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(data.contexts, expected)
    # obp's action_context: item_id, item_feature_1..3 label-encoded, item_feature_0
    np.testing.assert_array_equal(
        data.action_features,
        [[0, 0, 1, 0, 0.25], [1, 1, 1, 1, -0.5], [2, 1, 0, 1, 1.5]],
    )


def test_affinity_columns_are_optional(obd):
    data = OpenBandit(user_item_affinity=True).load_logged(obd)
    affinity = LOG[[f"user-item_affinity_{j}" for j in range(K)]].to_numpy()[[1, 2, 0, 3]]
    np.testing.assert_array_equal(data.contexts[:, -K:], affinity)
    assert data.n_features == 5 + K


def test_registered_and_reads_obd_folder_and_env(tmp_path, monkeypatch):
    """Registered as "open_bandit"; reads <dir>/{policy}/{campaign} (obp's obd folder) too,
    and $OPBOOST_DATA when no data_dir is given."""
    _write(tmp_path / "random" / "men", campaign="men")
    monkeypatch.setenv("OPBOOST_DATA", str(tmp_path))
    data = make("dataset", "open_bandit", campaign="men").load_logged()
    assert len(data) == len(LOG)


def test_load_points_to_load_logged(obd):
    with pytest.raises(InvalidParameterError, match=r"not labelled data.*load_logged\(data_dir\)"):
        OpenBandit().load(obd)


def test_missing_files_name_file_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("OPBOOST_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=r"no data directory given.*\$OPBOOST_DATA"):
        OpenBandit().load_logged()
    with pytest.raises(FileNotFoundError) as info:
        OpenBandit(behavior_policy="bts").load_logged(tmp_path)
    text = str(info.value)
    assert "all.csv not found" in text and str(tmp_path / "open_bandit" / "bts" / "all") in text
    assert "$OPBOOST_DATA" in text and "--data-dir" in text
    folder = tmp_path / "open_bandit" / "random" / "all"
    _write(folder)
    (folder / "item_context.csv").unlink()
    with pytest.raises(FileNotFoundError, match=r"item_context\.csv not found in .*random/all"):
        OpenBandit().load_logged(tmp_path)


def test_bad_parameters_and_columns(obd):
    with pytest.raises(
        InvalidParameterError,
        match=r"^The 'behavior_policy' parameter of OpenBandit must be one of "
        r"\{'random', 'bts'\}\. Got 'ts' instead\.$",
    ):
        OpenBandit(behavior_policy="ts").load_logged(obd)
    with pytest.raises(InvalidParameterError, match=r"'campaign' parameter of OpenBandit must be"):
        OpenBandit(campaign="kids").load_logged(obd)
    _write(obd / "broken" / "random" / "all", log=LOG.drop(columns="propensity_score"))
    with pytest.raises(ValueError, match=r"all\.csv: column\(s\) \['propensity_score'\] missing"):
        OpenBandit().load_logged(obd / "broken")
    _write(obd / "gaps" / "random" / "all", items=ITEMS.assign(item_id=[1, 0, 5]))
    with pytest.raises(ValueError, match=r"item_id must be 0\.\.2, each once"):
        OpenBandit().load_logged(obd / "gaps")
