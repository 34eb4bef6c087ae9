"""Built-in estimators, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.hookspecs import hookimpl


@hookimpl
def opboost_register_estimators():
    from opboost.estimators.ips import IPS, TruncatedIPS

    classes = [IPS, TruncatedIPS]
    try:  # the self-normalised, direct and doubly robust estimators
        from opboost.estimators.snips import SNIPS

        classes.append(SNIPS)
    except ImportError:
        pass
    try:
        from opboost.estimators.direct import DirectMethod, DoublyRobust

        classes += [DirectMethod, DoublyRobust]
    except ImportError:
        pass
    return classes
