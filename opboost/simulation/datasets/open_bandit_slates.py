"""The Open Bandit Dataset read as slates: one row per impression, its 3 positions side by side.

The files are obp's per-position rows (``opboost.simulation.datasets.open_bandit``): one row
per (impression, position) with the item shown, the click and the logger's probability of
that item at that position. Rows of one impression share their ``timestamp`` and user
features; this reader groups them so (rows read in time order, as ``OpenBandit`` reads them):

* an impression is the rows with the same timestamp and ``user_feature_*`` values (a second
  row at an impression's position starts another impression);
* ``slates[i, k]`` is the item shown at position k (positions 1..3 become columns 0..2),
  ``rewards[i, k]`` its click and ``marginal_propensities[i, k]`` its ``propensity_score``;
  a position with no row holds item -1, reward 0 and propensity 1 and adds nothing to any
  estimate;
* contexts are the impression's first row's (``OpenBandit.load_logged``'s encoding),
  ``item_features`` obp's ``action_context``.

The logger's cascade propensities (of the items above a position together) are not in the
files, so ``cascade_propensities`` is None: the independent estimators (``slate_iips``,
``slate_idr``) apply, the reward-interaction ones refuse the logs. The small sample shipped with
obp (10,000 rows per logger) was drawn row by row: almost every impression there has one
position logged, so its slate estimates sum fewer positions than a full log's.
"""

from __future__ import annotations

import os

import numpy as np

from opboost.api.slates import SlateLogs
from opboost.simulation.datasets.open_bandit import OpenBandit

__all__ = ["open_bandit_slates"]


def open_bandit_slates(
    behavior_policy: str = "random",
    campaign: str = "all",
    data_dir: str | os.PathLike | None = None,
    *,
    user_item_affinity: bool = False,
) -> SlateLogs:
    """The Open Bandit log of ``behavior_policy`` ("random" or "bts") and ``campaign`` as
    [`SlateLogs`][opboost.api.slates.SlateLogs], read from ``data_dir`` (or ``$OPBOOST_DATA``),
    which holds ``open_bandit/{behavior_policy}/{campaign}/{campaign}.csv``."""
    dataset = OpenBandit(
        behavior_policy=behavior_policy, campaign=campaign, user_item_affinity=user_item_affinity
    )
    import pandas as pd

    logged = dataset.load_logged(data_dir)  # checks the files and their columns
    table = pd.read_csv(dataset.folder(data_dir) / f"{campaign}.csv", index_col=0)
    table = table.sort_values("timestamp", kind="stable").reset_index(drop=True)
    users = [c for c in table.columns if c.startswith("user_feature")]
    keys = table[["timestamp", *users]].astype(str).agg("\x1f".join, axis=1)
    # a repeated position within a key opens a further impression
    repeat = table.groupby([keys, logged.positions]).cumcount().astype(str)
    impression = np.unique((keys + "\x1f" + repeat).to_numpy(), return_inverse=True)[1]
    # number impressions by their first row, so they stay in time order
    first = np.full(impression.max() + 1, len(table))
    np.minimum.at(first, impression, np.arange(len(table)))
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    row = rank[impression]
    n, length = len(first), logged.n_positions
    slates = np.full((n, length), -1, dtype=np.int64)
    rewards, propensities = np.zeros((n, length)), np.ones((n, length))
    slates[row, logged.positions] = logged.actions
    rewards[row, logged.positions] = logged.rewards
    propensities[row, logged.positions] = logged.propensities
    contexts = np.asarray(logged.contexts)[np.sort(first)]
    return SlateLogs(
        contexts,
        slates,
        rewards,
        propensities,
        logged.n_actions,
        item_features=logged.action_features,
    )
