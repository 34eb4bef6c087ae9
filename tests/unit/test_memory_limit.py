"""The memory estimate and the limits it is compared with (opboost.api.numerics.memory_limit)."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InsufficientMemoryError
from opboost.api.numerics import memory_limit


def test_cgroup_left_is_the_tightest_limit_of_the_group_and_its_parents(tmp_path):
    """cgroup v2: memory.max less memory.current of the group and each ancestor, the least;
    'max' is no limit."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "memory.max").write_text("5000\n")
    (tmp_path / "a" / "memory.current").write_text("1000\n")
    (tmp_path / "a" / "b" / "memory.max").write_text("max\n")
    (tmp_path / "a" / "b" / "memory.current").write_text("700\n")
    membership = tmp_path / "cgroup"
    membership.write_text("0::/a/b\n")
    assert memory_limit.cgroup_left(tmp_path, membership) == 4000
    membership.write_text("0::/\n")
    assert memory_limit.cgroup_left(tmp_path, membership) is None


def test_stacked_fit_bytes_count_candidates_only():
    """n*K stacked rows without candidate sets; with them, only the candidates (the arrays
    are n x the most candidates of a row)."""
    rng = np.random.default_rng(0)
    n, k = 10, 50
    X, a = rng.normal(size=(n, 4)), np.zeros(n, dtype=int)
    full = LoggedBandit(X, a, np.full(n, 0.5), rng.random(n), k)
    need, what = memory_limit.stacked_fit_bytes(full)
    assert need == n * k * memory_limit.CELL_BYTES + n * k * (memory_limit.STACKED_ROW_BYTES + 5)
    assert what == "10 rows x 50 actions, 500 stacked rows of 5 columns"
    mask = np.zeros((n, k), dtype=bool)
    mask[:, :2] = True
    mask[0, :3] = True
    few = LoggedBandit(X, a, np.full(n, 0.5), rng.random(n), k, candidates=mask)
    need, what = memory_limit.stacked_fit_bytes(few)
    assert need == n * 3 * memory_limit.CELL_BYTES + 21 * (memory_limit.STACKED_ROW_BYTES + 5)
    assert what == "10 rows x 50 actions, 21 stacked rows of 5 columns"


def test_check_memory_names_the_estimate_the_limit_and_the_fix(monkeypatch):
    monkeypatch.setattr(memory_limit, "memory_left", lambda: (2**30, "of physical memory"))
    memory_limit.check_memory(2**30, "Fit", "it")  # exactly what is left: allowed
    with pytest.raises(InsufficientMemoryError) as info:
        memory_limit.check_memory(3 * 2**30, "Fit", "300 stacked rows", "Do less.")
    assert str(info.value) == (
        "Fit: 300 stacked rows: at least 3.0 GiB needed, more than the 1.0 GiB of physical "
        "memory. Do less."
    )
    assert isinstance(info.value, MemoryError)
