"""Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) from its gzip-compressed IDX files.

70,000 28x28 grayscale images (60,000 train + 10,000 test, the official split kept as
``test_index``), flattened to 784 features scaled to [0, 1] (float32, London et al. F.1), 10
classes. Reward: 1 for the true class, 1/4 within the "near miss" groups of London et al.
appendix F.4 -- Outerwear {coat, pullover}, Shirts {T-shirt/top, shirt}, Footwear {sandal,
sneaker, ankle boot} -- and 0 otherwise.

IDX (big-endian): images ``>IIII`` = (2051, n, 28, 28) then n*784 uint8; labels ``>II`` =
(2049, n) then n uint8. Files are looked for in ``<data_dir>/fashion_mnist/`` and
``<data_dir>/``, gzip-compressed or not.
"""

from __future__ import annotations

import gzip
import os
from numbers import Real
from pathlib import Path
from typing import ClassVar

import numpy as np

from opboost.api.constraints import Interval
from opboost.api.dataset import Dataset, SupervisedData, find_file
from opboost.simulation.supervised import partial_credit

__all__ = ["CLASSES", "GROUPS", "FashionMNIST", "read_idx"]

#: Class names in label order.
CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
#: Partial-credit groups (London et al. F.4): Outerwear, Shirts, Footwear.
GROUPS = ((2, 4), (0, 6), (5, 7, 9))
_SOURCE = "https://github.com/zalandoresearch/fashion-mnist (data/fashion/*.gz)"


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file (gzip or raw) as a uint8 array: (n,) for labels, (n, rows, cols) for images."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {raw[:4].hex()}).")
    ndim = raw[3]
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape))
    if len(raw) - offset != expected:
        raise ValueError(
            f"{path}: header says shape {shape} ({expected} bytes) but {len(raw) - offset} "
            f"bytes of data follow; the file is truncated or corrupted."
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(shape)


class FashionMNIST(Dataset):
    """Fashion-MNIST: X (70000, 784) float32 in [0, 1], y (70000,) in 0..9, partial credit.

    Parameters
    ----------
    credit
        the near-miss reward within a group (London et al.: 1/4).
    """

    name: ClassVar[str] = "fashion_mnist"
    _parameter_constraints: ClassVar[dict] = {
        "credit": [Interval(Real, 0.0, 1.0, fix="use London et al.'s 0.25, or 0.0 for no credit")]
    }
    source: ClassVar[str] = _SOURCE

    def __init__(self, *, credit: float = 0.25) -> None:
        self.credit = credit

    def _read(self, data_dir: str | os.PathLike | None, stem: str) -> np.ndarray:
        path = find_file(data_dir, "fashion_mnist", (f"{stem}.gz", stem), self.source)
        return read_idx(path)

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        self.validate_params()
        parts = []
        for prefix in ("train", "t10k"):
            images = self._read(data_dir, f"{prefix}-images-idx3-ubyte")
            labels = self._read(data_dir, f"{prefix}-labels-idx1-ubyte")
            if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
                raise ValueError(
                    f"Fashion-MNIST {prefix} files disagree: images {images.shape}, "
                    f"labels {labels.shape}."
                )
            parts.append((images.reshape(len(images), -1), labels))
        n_train = len(parts[0][1])
        X = np.vstack([p[0] for p in parts]).astype(np.float32) / np.float32(255.0)
        y = np.concatenate([p[1] for p in parts]).astype(np.int64)
        if y.max() >= len(CLASSES):
            raise ValueError(f"Fashion-MNIST labels must be 0..9; found {int(y.max())}.")
        reward = partial_credit(len(CLASSES), GROUPS, self.credit)
        return SupervisedData(
            "fashion_mnist",
            X,
            y,
            "multiclass",
            len(CLASSES),
            reward,
            test_index=np.arange(n_train, len(y)),
        )
