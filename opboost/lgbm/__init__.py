"""The LightGBM toolkit: what every LightGBM-based learner and engine of opboost shares.

The saved ensemble (:mod:`~opboost.lgbm.ensemble`, with its model text checked by
:mod:`~opboost.lgbm.model_text`), the designed rows and their binned Dataset
(:mod:`~opboost.lgbm.rows`), a round's trees read and scaled in place
(:mod:`~opboost.lgbm.layout`), the shared tree parameters (:mod:`~opboost.lgbm.params`),
the rows that grow a tree (:mod:`~opboost.lgbm.sampling`)
and the thread counts (:mod:`~opboost.lgbm.threads`,
:mod:`~opboost.lgbm.process_threads`). The built-in LightGBM learners
(``opboost.algorithms.learners``) and the Dask engine (``opboost.dask``) build on it. A layer
between them and the SDK: it imports only ``opboost.api``, and neither the SDK nor the core nor
the simulation imports it (the contracts in pyproject.toml); it is no part of the plugin
contract. Importing this package imports no LightGBM.
"""

from __future__ import annotations

__all__: list[str] = []
