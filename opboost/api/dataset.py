"""Base class of data set loaders (kind "dataset") and the labelled data they return."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.api.component import Component

__all__ = ["DATA_ENV", "Dataset", "SupervisedData", "find_file", "resolve_data_dir"]

#: Environment variable naming the directory that holds real data sets.
DATA_ENV = "OPBOOST_DATA"


@dataclass(frozen=True, eq=False)
class SupervisedData:
    """Labelled rows and the task's reward structure.

    ``X`` is (n, d) (dense or CSR); ``y`` is (n,) class indices, an (n, K) 0/1 label matrix
    (multilabel) or (n,) / (n, m) real targets (regression). ``reward`` is what
    [`reward_table`][opboost.simulation.supervised.reward_table] takes. ``test_index`` is the data
    set's official test split, if it has one.
    """

    name: str
    X: Any
    y: Any
    task: str
    n_actions: int
    reward: Any = "multiclass"
    test_index: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.X.shape[0])


def resolve_data_dir(data_dir: str | os.PathLike | None) -> Path | None:
    """``data_dir`` if given, else ``$OPBOOST_DATA``, else None."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else None


class Dataset(Component):
    """A data set loader. ``load`` returns [`SupervisedData`][opboost.api.dataset.SupervisedData].

    Loaders of real data read from ``data_dir`` (or ``$OPBOOST_DATA``) and raise
    ``FileNotFoundError`` naming the file, the directory searched and where to get it.
    """

    kind: ClassVar[str] = "dataset"
    #: "multiclass", "multilabel" or "regression"; "logged_bandit" for real logs, whose
    #: loader has ``load_logged(data_dir) -> LoggedBandit`` instead (``load`` raises).
    task: ClassVar[str] = "multiclass"
    #: True when the data ship with a dependency (no data_dir needed).
    bundled: ClassVar[bool] = False

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        """The data set, read from ``data_dir`` (or ``$OPBOOST_DATA``) unless ``bundled``."""
        raise NotImplementedError


def find_file(
    data_dir: str | os.PathLike | None, folder: str, files: tuple[str, ...], source: str
) -> Path:
    """The first of ``files`` in ``<data_dir>/<folder>`` or ``<data_dir>``.

    ``data_dir`` falls back to ``$OPBOOST_DATA``. A missing file raises FileNotFoundError
    naming the file, the directories searched and ``source`` (where to obtain it).
    """
    base = resolve_data_dir(data_dir)
    if base is None:
        raise FileNotFoundError(
            f"{files[0]} not found: no data directory given. Pass data_dir=... or set "
            f"${DATA_ENV} to a directory holding {folder}/{files[0]} (get it from {source})."
        )
    searched = [base / folder, base]
    for directory in searched:
        for name in files:
            if (directory / name).is_file():
                return directory / name
    raise FileNotFoundError(
        f"{files[0]} not found in {' or '.join(str(d) for d in searched)}. "
        f"Download it from {source} and place it in {base / folder}."
    )
