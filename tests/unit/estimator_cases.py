"""The built-in estimators, each built small and seeded, for tests parametrised over all."""

from __future__ import annotations

import pytest

from opboost.algorithms.estimators.direct import DirectMethod, DoublyRobust
from opboost.algorithms.estimators.ips import IPS, TruncatedIPS
from opboost.algorithms.estimators.snips import SNIPS

ESTIMATORS = [
    pytest.param(IPS, id="ips"),
    pytest.param(lambda: TruncatedIPS(max_weight=5.0), id="truncated_ips"),
    pytest.param(SNIPS, id="snips"),
    pytest.param(lambda: DirectMethod(n_folds=2, random_state=0), id="dm"),
    pytest.param(lambda: DoublyRobust(n_folds=2, random_state=0), id="dr"),
]
