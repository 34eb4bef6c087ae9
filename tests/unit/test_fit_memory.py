"""The Python memory a stacked fit holds per (context, action) row (issue 24, item 3).

tracemalloc sees numpy's buffers (not LightGBM's native allocations, which
``examples/benchmarks/bench_offline.py`` measures as peak RSS). A fit needs four n*K float64
arrays at its peak (the scores F, the policy, LightGBM's previous training scores and the
round's buffer, which holds the float32 gradients and hessians and then the tree's outputs)
and a few (n,) vectors; before the round's work was done in row blocks it held about 92 bytes
per stacked row (the gradient g, the problem's targets and weights, w*y, two score buffers).
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from opboost import Booster, LoggedBandit

#: Bytes of traced Python memory per stacked row a fit may peak at (measured 46 at K = 10).
MAX_BYTES_PER_STACKED_ROW = 56


def test_python_memory_of_a_stacked_fit_per_stacked_row():
    n, k, d = 20_000, 10, 5
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    actions = rng.integers(k, size=n)
    logs = LoggedBandit(X, actions, np.full(n, 1.0 / k), (X[:, 0] > 0).astype(float), k)
    booster = Booster(
        n_rounds=3,
        warm_start="none",
        random_state=0,
        base_learner_params={"num_threads": 1, "num_leaves": 4},
    )
    booster.fit(logs.subset(np.arange(100)))  # imports and first calls outside the trace
    tracemalloc.start()
    try:
        booster.fit(logs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert booster.n_rounds_ == 3
    per_row = peak / (n * k)
    assert per_row <= MAX_BYTES_PER_STACKED_ROW, (
        f"the fit's Python buffers peaked at {per_row:.1f} bytes per stacked row (at most "
        f"{MAX_BYTES_PER_STACKED_ROW}); an (n, K) float64 array is 8: look for a new one"
    )
