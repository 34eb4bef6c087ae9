"""Built-in loss-feedback online learners (Brukhim & Hazan 2021) and OCO boosting
(Brukhim et al. 2020), registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_online_learners():
    from opboost.algorithms.online.brukhim_hazan import BrukhimHazanBoost
    from opboost.algorithms.online.fkm import NFKM
    from opboost.algorithms.online.oco_boost import OCOBoost
    from opboost.algorithms.online.ogd import OGB, OGD

    return [BrukhimHazanBoost, NFKM, OGD, OGB, OCOBoost]
