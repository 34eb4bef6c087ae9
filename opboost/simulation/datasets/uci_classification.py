"""Loaders for the real multiclass data sets of Chen, Lin & Lu (2014): Car, Nursery,
Connect-4 (UCI) and Statlog DNA (LIBSVM).

Each reads from ``data_dir`` (or ``$OPBOOST_DATA``), looking for the file in
``<data_dir>/<folder>/`` and then in ``<data_dir>/`` itself. Categorical features are
one-hot encoded ("decomposition into binary vectors", as the paper does for the
perceptron) with categories in sorted order per column; ``encoding="ordinal"`` gives the
sorted category codes instead. Classes are numbered in sorted order of their names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import numpy as np

from opboost.api.constraints import Options
from opboost.api.dataset import Dataset, SupervisedData, find_file

__all__ = ["DNA", "Car", "Connect4", "Nursery", "encode_categorical"]

_UCI = "https://archive.ics.uci.edu/dataset"


def encode_categorical(cells: np.ndarray, encoding: str) -> np.ndarray:
    """(n, m) string cells -> (n, sum of categories) one-hot, or (n, m) sorted codes."""
    codes, sizes = [], []
    for column in cells.T:
        levels, inverse = np.unique(column, return_inverse=True)
        codes.append(inverse)
        sizes.append(len(levels))
    codes_arr = np.stack(codes, axis=1) if codes else np.zeros((len(cells), 0), np.int64)
    if encoding == "ordinal":
        return codes_arr.astype(np.float64)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    X = np.zeros((len(cells), int(sum(sizes))))
    rows = np.repeat(np.arange(len(cells)), cells.shape[1])
    X[rows, (codes_arr + offsets).ravel()] = 1.0
    return X


def _read_categorical(path: Path, name: str, encoding: str) -> SupervisedData:
    import pandas as pd

    frame = pd.read_csv(
        path,
        header=None,
        dtype=str,
        skip_blank_lines=True,
        skipinitialspace=True,
        compression="infer",
    )
    cells = frame.to_numpy(dtype=str)
    classes, y = np.unique(cells[:, -1], return_inverse=True)
    X = encode_categorical(cells[:, :-1], encoding)
    return SupervisedData(name, X, y.astype(np.int64), "multiclass", len(classes))


class _Categorical(Dataset):
    """A UCI file of categorical columns with the class in the last column."""

    folder: ClassVar[str] = ""
    files: ClassVar[tuple[str, ...]] = ()
    source: ClassVar[str] = ""
    _parameter_constraints: ClassVar[dict] = {"encoding": [Options(("onehot", "ordinal"))]}

    def __init__(self, *, encoding: str = "onehot") -> None:
        self.encoding = encoding

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        self.validate_params()
        path = find_file(data_dir, self.folder, self.files, self.source)
        return _read_categorical(path, self.name, self.encoding)


class Car(_Categorical):
    """UCI Car Evaluation: 1,728 rows, 6 categorical features (21 one-hot), 4 classes."""

    name: ClassVar[str] = "car"
    folder: ClassVar[str] = "car"
    files: ClassVar[tuple[str, ...]] = ("car.data",)
    source: ClassVar[str] = f"{_UCI}/19/car+evaluation"


class Nursery(_Categorical):
    """UCI Nursery: 12,960 rows, 8 categorical features (27 one-hot), 5 classes."""

    name: ClassVar[str] = "nursery"
    folder: ClassVar[str] = "nursery"
    files: ClassVar[tuple[str, ...]] = ("nursery.data",)
    source: ClassVar[str] = f"{_UCI}/76/nursery"


class Connect4(_Categorical):
    """UCI Connect-4: 67,557 rows, 42 cells in {x, o, b} (126 one-hot), 3 classes."""

    name: ClassVar[str] = "connect4"
    folder: ClassVar[str] = "connect4"
    files: ClassVar[tuple[str, ...]] = ("connect-4.data.gz", "connect-4.data")
    source: ClassVar[str] = f"{_UCI}/26/connect+4"


class DNA(Dataset):
    """Statlog DNA (LIBSVM scaled): 3,186 rows (2,000 train + 1,186 test), 180 binary
    features, 3 classes. ``test_index`` marks the rows of ``dna.scale.t``."""

    name: ClassVar[str] = "dna"
    source: ClassVar[str] = (
        "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass.html#dna"
    )

    def __init__(self) -> None:
        pass

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        from sklearn.datasets import load_svmlight_file

        train = find_file(data_dir, "dna", ("dna.scale",), self.source)
        test = find_file(data_dir, "dna", ("dna.scale.t",), self.source)
        X1, y1 = load_svmlight_file(str(train), n_features=180)
        X2, y2 = load_svmlight_file(str(test), n_features=180)
        X = np.vstack([X1.toarray(), X2.toarray()])
        classes, y = np.unique(np.concatenate([y1, y2]), return_inverse=True)
        test_index = np.arange(X1.shape[0], X.shape[0])
        return SupervisedData(
            "dna", X, y.astype(np.int64), "multiclass", len(classes), test_index=test_index
        )
