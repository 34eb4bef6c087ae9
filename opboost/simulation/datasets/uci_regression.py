"""UCI loaders for the experiments of Brukhim & Hazan (2021, §4 and appendix E): abalone,
adult and letter, read from ``data_dir`` (or ``$OPBOOST_DATA``) in the UCI file formats.

Encodings (appendix E gives the feature counts 10, 105 and 16, which these reproduce):

- **abalone** (regression, 4,177 × 10): sex one-hot (M, F, I) + the 7 raw measurements;
  target = rings (1..29), as a real number. Label set for loss feedback: the box [0, 30].
- **adult** (binary, 48,842 × 105 = adult.data + adult.test): the 6 numeric columns
  min–max scaled to [0, 1], the 8 categorical columns one-hot over the categories listed in
  adult.names (``?`` = all zeros); label 1 for ``>50K``. For loss feedback the target is the
  scalar 0/1 label in the box [0, 1] (squared loss; Table 2's 0.15 is on this scale).
- **letter** (26 classes, 20,000 × 16): the 16 integer features divided by 15; label A–Z
  as 0..25. For loss feedback the target is the one-hot vector in the probability simplex
  of R^26 (squared loss ``||ŷ - e_y||²``).

:func:`loss_feedback_targets` turns a loaded :class:`SupervisedData` into these targets.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.api.dataset import Dataset, SupervisedData, find_file

__all__ = ["Abalone", "Adult", "Letter", "loss_feedback_targets"]

_UCI = "https://archive.ics.uci.edu/dataset"

_ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
_ADULT_NUMERIC = [
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
]
_ADULT_CATEGORIES: dict[str, list[str]] = {
    "workclass": [
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ],
    "education": [
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ],
    "marital-status": [
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ],
    "relationship": [
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": [
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ],
}


def _find(data_dir: Any, folder: str, filename: str, source: str) -> Path:
    """The path of ``filename`` in ``data_dir/folder`` (or ``data_dir``); else raise."""
    return find_file(data_dir, folder, (filename,), source)


def _read_csv(path: Path, **kwargs: Any):
    import pandas as pd  # lazy: only the loaders of real data sets need pandas

    return pd.read_csv(path, header=None, skipinitialspace=True, skip_blank_lines=True, **kwargs)


def _one_hot(values, categories: list[str]) -> np.ndarray:
    """(n, len(categories)) 0/1 matrix; values outside ``categories`` (e.g. ``?``) → zeros."""
    import pandas as pd

    codes = pd.Index(categories).get_indexer(values)
    out = np.zeros((len(codes), len(categories) + 1))
    out[np.arange(len(codes)), codes] = 1.0  # code -1 lands in the last, dropped column
    return out[:, :-1]


class Abalone(Dataset):
    """UCI Abalone: 4,177 rows, 10 features (sex one-hot + 7 measurements), target rings."""

    name: ClassVar[str] = "abalone"
    task: ClassVar[str] = "regression"
    #: Label set of the loss-feedback experiments.
    label_range: ClassVar[tuple[float, float]] = (0.0, 30.0)

    def __init__(self) -> None:
        pass

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        path = _find(data_dir, "abalone", "abalone.data", f"{_UCI}/1/abalone")
        df = _read_csv(path)
        X = np.hstack(
            [
                _one_hot(df[0].to_numpy(), ["M", "F", "I"]),
                df.iloc[:, 1:8].to_numpy(dtype=np.float64),
            ]
        )
        y = df[8].to_numpy(dtype=np.float64)
        return SupervisedData("abalone", X, y, "regression", 0, reward=None)


class Adult(Dataset):
    """UCI Adult: 48,842 rows (data + test), 105 features, binary income label (1 = >50K)."""

    name: ClassVar[str] = "adult"
    label_range: ClassVar[tuple[float, float]] = (0.0, 1.0)

    def __init__(self) -> None:
        pass

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        src = f"{_UCI}/2/adult"
        train = _read_csv(_find(data_dir, "adult", "adult.data", src), names=_ADULT_COLUMNS)
        test = _read_csv(
            _find(data_dir, "adult", "adult.test", src), names=_ADULT_COLUMNS, skiprows=1
        )
        import pandas as pd

        df = pd.concat([train, test], ignore_index=True)
        num = df[_ADULT_NUMERIC].to_numpy(dtype=np.float64)
        span = num.max(axis=0) - num.min(axis=0)
        num = (num - num.min(axis=0)) / np.where(span > 0, span, 1.0)
        cats = [_one_hot(df[c].to_numpy(), cs) for c, cs in _ADULT_CATEGORIES.items()]
        X = np.hstack([num, *cats])
        income = df["income"].astype(str).str.rstrip(".").to_numpy()
        y = (income == ">50K").astype(np.int64)
        test_index = np.arange(len(train), len(df))
        return SupervisedData("adult", X, y, "multiclass", 2, test_index=test_index)


class Letter(Dataset):
    """UCI Letter Recognition: 20,000 rows, 16 features in [0, 1], 26 classes (A–Z)."""

    name: ClassVar[str] = "letter"

    def __init__(self) -> None:
        pass

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        path = _find(data_dir, "letter", "letter-recognition.data", f"{_UCI}/59/letter+recognition")
        df = _read_csv(path)
        X = df.iloc[:, 1:17].to_numpy(dtype=np.float64) / 15.0
        y = (df[0].str.strip().map(ord).to_numpy() - ord("A")).astype(np.int64)
        n = len(df)
        test_index = np.arange(16_000, n) if n > 16_000 else None
        return SupervisedData("letter", X, y, "multiclass", 26, test_index=test_index)


def loss_feedback_targets(data: SupervisedData) -> tuple[np.ndarray, str, float, float]:
    """Targets ``Y`` (n, m) and label set ``(label_set, low, high)`` used by the paper.

    Regression: ``y`` as an (n, 1) column in the box of the data set's ``label_range``
    (the observed range otherwise). Two classes: the 0/1 label as an (n, 1) column in
    [0, 1]. K > 2 classes: one-hot rows in the simplex of R^K.
    """
    y = np.asarray(data.y)
    if data.task == "regression":
        low, high = float(y.min()), float(y.max())
        if data.name == "abalone":
            low, high = Abalone.label_range
        return y.reshape(len(y), -1).astype(np.float64), "box", low, high
    if data.n_actions == 2:
        return y.astype(np.float64)[:, None], "box", 0.0, 1.0
    return np.eye(data.n_actions)[y], "simplex", 0.0, 1.0
