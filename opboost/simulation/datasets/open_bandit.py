"""The Open Bandit Dataset (Saito et al. 2021): real logged bandit feedback from ZOZOTOWN.

Fashion items (80 in campaign "all") recommended in 3 positions by two logging policies, a
uniform-random one and Bernoulli Thompson sampling ("bts"), on the same platform, so each
log's on-policy click rate is the ground truth for estimates made from the other log.

The files follow obp's layout: ``{behavior_policy}/{campaign}/{campaign}.csv`` and
``{behavior_policy}/{campaign}/item_context.csv``, under ``<data_dir>/open_bandit`` or
``<data_dir>`` itself (obp's ``obd`` folder). ``load_logged`` reads them as obp's
``OpenBanditDataset`` does (``load_raw_data`` and ``pre_process``):

* rows sorted by ``timestamp`` (a stable sort); actions are ``item_id``; positions are the
  dense ranks of ``position`` minus 1 (1..3 become 0..2); rewards are ``click``;
  propensities are ``propensity_score`` (the logger's probability of the item at the row's
  position);
* contexts: the one-hot encoding of ``user_feature_*`` with the first (sorted) category of
  each feature dropped (``pd.get_dummies(..., drop_first=True)``), then, with
  ``user_item_affinity=True`` (not obp's default), the 80 ``user-item_affinity_*`` columns;
* action features, one row per item (``item_id`` order), columns as obp's
  ``action_context``: ``item_id``, ``item_feature_1..3`` label-encoded (codes of the sorted
  categories, as scikit-learn's ``LabelEncoder``), then the numeric ``item_feature_0``.

A log, not labelled data: ``load`` raises and points to ``load_logged``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import numpy as np

from opboost.api.constraints import Options
from opboost.api.data.logged import LoggedBandit
from opboost.api.dataset import DATA_ENV, Dataset, SupervisedData, resolve_data_dir
from opboost.api.exceptions import InvalidParameterError

__all__ = ["OpenBandit"]

_SOURCE = (
    "https://research.zozo.com/data.html (the full data set) or the small sample inside the "
    "obp source distribution on PyPI (obp/dataset/obd/)"
)
POLICIES = ("random", "bts")
CAMPAIGNS = ("all", "men", "women")
LOG_COLUMNS = ("timestamp", "item_id", "position", "click", "propensity_score")


class OpenBandit(Dataset):
    """The Open Bandit Dataset as a :class:`LoggedBandit` with positions and action features.

    Parameters
    ----------
    behavior_policy
        "random" (uniform) or "bts" (Bernoulli Thompson sampling), the logger.
    campaign
        "all" (default), "men" or "women".
    user_item_affinity
        also put the ``user-item_affinity_*`` columns in the contexts (obp's
        ``pre_process`` uses only the one-hot user features; off by default to match it).
    """

    name: ClassVar[str] = "open_bandit"
    task: ClassVar[str] = "logged_bandit"
    source: ClassVar[str] = _SOURCE

    _parameter_constraints: ClassVar[dict] = {
        "behavior_policy": [Options(POLICIES)],
        "campaign": [Options(CAMPAIGNS)],
        "user_item_affinity": ["boolean"],
    }

    def __init__(
        self,
        *,
        behavior_policy: str = "random",
        campaign: str = "all",
        user_item_affinity: bool = False,
    ) -> None:
        self.behavior_policy = behavior_policy
        self.campaign = campaign
        self.user_item_affinity = user_item_affinity

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        raise InvalidParameterError(
            "OpenBandit: the Open Bandit Dataset is logged bandit feedback, not labelled "
            "data, so it has no SupervisedData to simulate logs from; use "
            "OpenBandit(...).load_logged(data_dir), which returns a LoggedBandit."
        )

    def folder(self, data_dir: str | os.PathLike | None = None) -> Path:
        """The directory holding ``{campaign}.csv`` and ``item_context.csv``."""
        self.validate_params()
        base = resolve_data_dir(data_dir)
        relative = Path(self.behavior_policy) / self.campaign
        wanted = f"{relative / self.campaign}.csv and {relative / 'item_context.csv'}"
        if base is None:
            raise FileNotFoundError(
                f"Open Bandit Dataset not found: no data directory given. Pass data_dir=... "
                f"(--data-dir on the command line) or set ${DATA_ENV} to a directory holding "
                f"open_bandit/{wanted} (get it from {self.source})."
            )
        searched = [base / "open_bandit" / relative, base / relative]
        for folder in searched:
            if (folder / f"{self.campaign}.csv").is_file():
                return folder
        raise FileNotFoundError(
            f"{self.campaign}.csv not found in {' or '.join(str(d) for d in searched)}. "
            f"Set ${DATA_ENV} (or pass data_dir / --data-dir) to the directory holding "
            f"open_bandit/{wanted}; get them from {self.source}."
        )

    def load_logged(self, data_dir: str | os.PathLike | None = None) -> LoggedBandit:
        """The log as a LoggedBandit (see the module docstring for every column's use)."""
        folder = self.folder(data_dir)
        log = _read(folder / f"{self.campaign}.csv", LOG_COLUMNS)
        items = _read(folder / "item_context.csv", ("item_id", "item_feature_0"))
        log = log.sort_values("timestamp", kind="stable")
        users = [c for c in log.columns if c.startswith("user_feature")]
        contexts = [_one_hot(log[users])]
        if self.user_item_affinity:
            affinity = [c for c in log.columns if c.startswith("user-item_affinity")]
            contexts.append(log[affinity].to_numpy(dtype=np.float64))
        return LoggedBandit(
            contexts=np.hstack(contexts),
            actions=log["item_id"].to_numpy(),
            propensities=log["propensity_score"].to_numpy(dtype=np.float64),
            rewards=log["click"].to_numpy(dtype=np.float64),
            n_actions=len(items),
            positions=np.unique(log["position"].to_numpy(), return_inverse=True)[1],
            action_features=_item_features(items, folder / "item_context.csv"),
        )


def _read(path: Path, columns: tuple[str, ...]):
    import pandas as pd

    if not path.is_file():
        raise FileNotFoundError(
            f"{path.name} not found in {path.parent}; the Open Bandit Dataset needs it next to "
            f"the log. Set ${DATA_ENV} (or pass data_dir / --data-dir) to the directory "
            f"holding open_bandit/; get the files from {_SOURCE}."
        )
    table = pd.read_csv(path, index_col=0)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(
            f"{path}: column(s) {missing} missing; expected obp's Open Bandit Dataset columns "
            f"{list(columns)}. Found {list(table.columns)[:12]}."
        )
    return table


def _one_hot(table) -> np.ndarray:
    """obp's ``pd.get_dummies(user_features, drop_first=True)`` as float64."""
    import pandas as pd

    return pd.get_dummies(table, drop_first=True, dtype=np.float64).to_numpy(dtype=np.float64)


def _item_features(items, path: Path) -> np.ndarray:
    """(n_items, 5) obp's action_context: item_id and item_feature_1.. label-encoded, then
    item_feature_0; row a describes item a."""
    items = items.sort_values("item_id", kind="stable")
    ids = items["item_id"].to_numpy()
    if not np.array_equal(ids, np.arange(len(ids))):
        raise ValueError(
            f"{path}: item_id must be 0..{len(ids) - 1}, each once, so that row a describes "
            f"item a. Got {ids[:10].tolist()}..."
        )
    categorical = [c for c in items.columns if c not in ("item_id", "item_feature_0")]
    # LabelEncoder's codes: the index of each value among the sorted distinct values
    # (item_id, already 0..K-1, encodes to itself).
    codes = [np.unique(items[c].to_numpy(), return_inverse=True)[1] for c in categorical]
    return np.column_stack([ids, *codes, items["item_feature_0"].to_numpy(dtype=np.float64)])
