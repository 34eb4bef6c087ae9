"""The SDK's numerics: a round's row arithmetic, independent of any interface.

``arrays`` (dot products, one-hot rows, contexts as float arrays), ``row_blocks`` (a round's
(n, K) arithmetic a block of rows at a time), ``problem`` (:class:`BaseProblem`, a round's
base-learning problem), ``softmax`` (the policy of the scores), ``design`` (the stacked
(x, a) design of the regression reduction) and ``memory_limit`` (a fit's memory against the
process's limits). The package imports no interface of the SDK; ``opboost.api`` exports the
names of its contract among them (``softmax``, ``as_contexts``, ``stacked_design``,
``check_memory``, ``BaseProblem``), the rest is imported by its module path.
"""

from __future__ import annotations

__all__: list[str] = []
