"""The LightGBM toolkit of the SDK: what every LightGBM-based learner and engine shares.

The saved ensemble (:mod:`~opboost.api.lgbm.ensemble`, with its model text checked by
:mod:`~opboost.api.lgbm.model_text`), the designed rows and their binned Dataset
(:mod:`~opboost.api.lgbm.rows`), a round's trees read and scaled in place
(:mod:`~opboost.api.lgbm.layout`), the shared tree parameters (:mod:`~opboost.api.lgbm.params`),
the rows that grow a tree (:mod:`~opboost.api.lgbm.sampling`)
and the thread counts (:mod:`~opboost.api.lgbm.threads`,
:mod:`~opboost.api.lgbm.process_threads`). The built-in LightGBM learners
(``opboost.algorithms.learners``) and the Dask engine (``opboost.dask``) build on it; so may a
plugin. Importing this package imports no LightGBM.
"""

from __future__ import annotations

__all__: list[str] = []
