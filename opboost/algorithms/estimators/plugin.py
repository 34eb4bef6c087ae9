"""Built-in estimators, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_estimators():
    from opboost.algorithms.estimators.direct import DirectMethod, DoublyRobust
    from opboost.algorithms.estimators.ips import IPS, TruncatedIPS
    from opboost.algorithms.estimators.slate import (
        SlateIndependentIPS,
        SlateRewardInteractionIPS,
    )
    from opboost.algorithms.estimators.slate_dr import SlateCascadeDR, SlateIndependentDR
    from opboost.algorithms.estimators.snips import SNIPS

    slates = [SlateIndependentIPS, SlateRewardInteractionIPS, SlateIndependentDR, SlateCascadeDR]
    return [IPS, TruncatedIPS, SNIPS, DirectMethod, DoublyRobust, *slates]
