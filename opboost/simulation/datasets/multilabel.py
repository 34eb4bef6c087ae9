"""Loaders for the multilabel data sets of London et al. (2023): Scene and TMC2007-500 (MULAN).

Both return ``task="multilabel"``, ``y`` an (n, K) uint8 0/1 label matrix and
``reward="multilabel"`` (reward 1 if the action is one of the row's labels, London et al.
appendix F.4). The paper makes its own random splits of both (appendix F.2), so by default
there is no ``test_index``; ``official_split=True`` keeps MULAN's scene-train/scene-test split.

Files are looked for in ``<data_dir>/<folder>/`` and then ``<data_dir>/``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.api.dataset import Dataset, SupervisedData, find_file
from opboost.simulation.datasets.arff import (
    ArffData,
    meka_label_count,
    mulan_label_names,
    read_arff,
)

__all__ = ["TMC2007_500", "Scene", "split_labels"]

_MULAN = "http://mulan.sourceforge.net/datasets-mlc.html"


def split_labels(arff: ArffData, labels: list[str] | None, path: Path) -> tuple[object, np.ndarray]:
    """(X, Y): features (n, d) (dense or CSR) and the (n, K) uint8 label matrix.

    Labels are the attributes named in ``labels`` (MULAN XML), else MEKA's ``-C n`` header.
    """
    m = len(arff.names)
    if labels is not None:
        label_cols = arff.column_index(labels, path)
    else:
        count = meka_label_count(arff.relation)
        if count is None:
            raise ValueError(
                f"{path}: cannot tell label attributes from features: no MULAN XML label file "
                f"and no MEKA '-C n' in the relation {arff.relation!r}."
            )
        label_cols = np.arange(count) if count > 0 else np.arange(m + count, m)
    feature_cols = np.setdiff1d(np.arange(m), label_cols)
    values = arff.values
    if sp.issparse(values):
        values = sp.csc_matrix(values)
        X = sp.csr_matrix(values[:, feature_cols])
        Y = values[:, label_cols].toarray()
    else:
        X, Y = values[:, feature_cols], values[:, label_cols]
    if np.isnan(Y).any() or not np.isin(Y, (0.0, 1.0)).all():
        raise ValueError(f"{path}: label attributes must be 0/1 without missing values.")
    return X, Y.astype(np.uint8)


class Scene(Dataset):
    """MULAN Scene: 2,407 images (1,211 train + 1,196 test files), 294 features in [0, 1],
    6 labels (Beach, Sunset, FallFoliage, Field, Mountain, Urban).

    Parameters
    ----------
    official_split
        if True, ``test_index`` marks the rows of scene-test.arff; the default
        (False) pools both files, as London et al. do before their random 80/20 split.
    """

    name: ClassVar[str] = "scene"
    _parameter_constraints: ClassVar[dict] = {"official_split": ["boolean"]}
    task: ClassVar[str] = "multilabel"
    source: ClassVar[str] = _MULAN + " (scene.rar: scene-train.arff, scene-test.arff, scene.xml)"

    def __init__(self, *, official_split: bool = False) -> None:
        self.official_split = official_split

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        self.validate_params()
        train_path = find_file(data_dir, "scene", ("scene-train.arff",), self.source)
        test_path = find_file(data_dir, "scene", ("scene-test.arff",), self.source)
        xml = train_path.parent / "scene.xml"
        labels = mulan_label_names(xml) if xml.is_file() else None
        if labels is None:  # the six labels are the last attributes of the MULAN files
            labels = ["Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban"]
        X1, Y1 = split_labels(read_arff(train_path), labels, train_path)
        X2, Y2 = split_labels(read_arff(test_path), labels, test_path)
        X, Y = np.vstack([X1, X2]), np.vstack([Y1, Y2])
        test_index = np.arange(len(X1), len(X)) if self.official_split else None
        return SupervisedData(
            "scene", X, Y, "multilabel", Y.shape[1], "multilabel", test_index=test_index
        )


class TMC2007_500(Dataset):
    """TMC2007-500 (MULAN/MEKA): 28,596 aviation safety reports, 500 binary word features
    (a sparse CSR matrix), 22 labels; the full set (the paper splits it randomly)."""

    name: ClassVar[str] = "tmc2007_500"
    task: ClassVar[str] = "multilabel"
    source: ClassVar[str] = _MULAN + " (tmc2007-500.arff, MEKA header '-C -22')"

    def __init__(self) -> None:
        pass

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        path = find_file(data_dir, "tmc2007_500", ("tmc2007-500.arff",), self.source)
        xml = path.parent / "tmc2007-500.xml"
        labels = mulan_label_names(xml) if xml.is_file() else None
        X, Y = split_labels(read_arff(path), labels, path)
        return SupervisedData("tmc2007_500", X, Y, "multilabel", Y.shape[1], "multilabel")
