"""Loaders of London et al.'s real data sets, on tiny files written in the real formats."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
import scipy.sparse as sp

from opboost.core.registry import make
from opboost.simulation.datasets.arff import meka_label_count, read_arff
from opboost.simulation.datasets.covertype import Covertype
from opboost.simulation.datasets.fashion_mnist import FashionMNIST, read_idx
from opboost.simulation.datasets.multilabel import TMC2007_500, Scene
from opboost.simulation.supervised import reward_table


def _idx(path, array: np.ndarray) -> None:
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def fashion_dir(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "fashion_mnist"
    folder.mkdir()
    for prefix, n in (("train", 12), ("t10k", 5)):
        _idx(folder / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        _idx(folder / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return tmp_path


def test_fashion_mnist_split_scaling_and_partial_credit(fashion_dir):
    data = FashionMNIST().load(fashion_dir)
    assert data.X.shape == (17, 784) and data.X.dtype == np.float32
    assert data.X.min() >= 0.0 and data.X.max() <= 1.0
    raw = read_idx(fashion_dir / "fashion_mnist" / "train-images-idx3-ubyte.gz")
    np.testing.assert_allclose(data.X[0], raw[0].ravel() / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(data.test_index, np.arange(12, 17))
    table = reward_table(data.y, data.reward, data.n_actions)
    # shirt (6) vs T-shirt (0): 1/4; coat (4) vs pullover (2): 1/4; sneaker (7) vs boot (9)
    assert data.reward[6, 0] == data.reward[4, 2] == data.reward[7, 9] == 0.25
    assert data.reward[1, 3] == 0.0 and data.reward[8, 8] == 1.0  # trouser/dress; bag
    assert data.reward[[1, 3, 8]].sum() == 3.0  # singleton groups: only the diagonal
    np.testing.assert_array_equal(table.argmax(axis=1), data.y)


def test_idx_truncated_names_file(fashion_dir):
    path = fashion_dir / "fashion_mnist" / "t10k-labels-idx1-ubyte.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(struct.pack(">II", 0x0801, 9) + bytes(3))
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte\.gz.*truncated"):
        FashionMNIST().load(fashion_dir)


@pytest.mark.parametrize(
    ("name", "missing"),
    [
        ("fashion_mnist", "train-images-idx3-ubyte.gz"),
        ("scene", "scene-train.arff"),
        ("tmc2007_500", "tmc2007-500.arff"),
        ("covertype", "covtype.data.gz"),
    ],
)
def test_missing_file_names_file_directory_and_source(tmp_path, name, missing):
    with pytest.raises(FileNotFoundError) as info:
        make("dataset", name).load(tmp_path)
    text = str(info.value)
    assert missing in text and str(tmp_path) in text and "http" in text


_SCENE_HEADER = """@relation MultiLabelData

@attribute Att1 numeric
@attribute Att2 numeric
@attribute Att3 numeric
@attribute Beach {0,1}
@attribute Sunset {0,1}
@attribute FallFoliage {0,1}
@attribute Field {0,1}
@attribute Mountain {0,1}
@attribute Urban {0,1}

@data
"""


def test_scene_dense_arff(tmp_path):
    folder = tmp_path / "scene"
    folder.mkdir()
    (folder / "scene-train.arff").write_text(
        _SCENE_HEADER + "0.1,0.2,0.3,1,0,0,0,0,0\n0.4,0.5,0.6,0,1,0,0,1,0\n% comment\n\n"
    )
    (folder / "scene-test.arff").write_text(_SCENE_HEADER + "0.7,0.8,0.9,0,0,0,0,0,1\n")
    data = Scene().load(tmp_path)
    assert data.task == "multilabel" and data.n_actions == 6 and data.reward == "multilabel"
    np.testing.assert_allclose(data.X, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]])
    np.testing.assert_array_equal(data.y[1], [0, 1, 0, 0, 1, 0])
    assert data.y.dtype == np.uint8 and data.test_index is None
    np.testing.assert_array_equal(Scene(official_split=True).load(tmp_path).test_index, [2])


def test_tmc_sparse_arff_meka_header(tmp_path):
    folder = tmp_path / "tmc2007_500"
    folder.mkdir()
    attrs = "".join(f"@attribute w{i} {{0,1}}\n" for i in range(4))
    attrs += "".join(f"@attribute class{j:02d} {{0,1}}\n" for j in range(1, 4))
    (folder / "tmc2007-500.arff").write_text(
        f"@relation 'tmc2007-500: -C -3'\n\n{attrs}\n@data\n"
        "{0 1,3 1,4 1}\n{1 1,5 1,6 1}\n{}\n{2 1, 6 1}\n"
    )
    assert meka_label_count("'tmc2007-500: -C -3'") == -3
    data = TMC2007_500().load(tmp_path)
    assert sp.issparse(data.X) and data.X.shape == (4, 4) and data.n_actions == 3
    np.testing.assert_array_equal(
        data.X.toarray(), [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]]
    )
    np.testing.assert_array_equal(data.y, [[1, 0, 0], [0, 1, 1], [0, 0, 0], [0, 0, 1]])


def test_sparse_arff_nominal_codes(tmp_path):
    path = tmp_path / "x.arff"
    path.write_text(
        "@relation r\n@attribute a numeric\n@attribute b {no,yes}\n@data\n{0 2.5,1 yes}\n{1 no}\n"
    )
    parsed = read_arff(path)
    np.testing.assert_allclose(parsed.values.toarray(), [[2.5, 1.0], [0.0, 0.0]])


def test_covertype_gz(tmp_path):
    folder = tmp_path / "covertype"
    folder.mkdir()
    rng = np.random.default_rng(1)
    rows = np.hstack([rng.integers(0, 3000, (14, 54)), (np.arange(14) % 7 + 1)[:, None]])
    text = "\n".join(",".join(map(str, r)) for r in rows) + "\n"
    with gzip.open(folder / "covtype.data.gz", "wt") as handle:
        handle.write(text)
    data = Covertype().load(tmp_path)
    assert data.X.shape == (14, 54) and data.n_actions == 7
    np.testing.assert_array_equal(data.y, np.arange(14) % 7)
    np.testing.assert_array_equal(data.X, rows[:, :-1])
    R = data.reward  # Firs {0,5}, Pines {1,2}, Populus {3,4}, Krummholz 6 alone
    assert R[0, 5] == R[5, 0] == R[1, 2] == R[3, 4] == 0.25
    assert R[6].sum() == 1.0 and R[0, 1] == 0.0


def test_registered():
    for name in ("fashion_mnist", "scene", "tmc2007_500", "covertype"):
        assert make("dataset", name).name == name
