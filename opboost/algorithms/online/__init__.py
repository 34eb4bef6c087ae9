"""Online boosting algorithms with bandit or loss feedback.

Contextual-bandit feedback (the reward of the chosen action only): ``chen_bandit_boost``
(Chen, Lin & Lu 2014), its baselines ``banditron`` and ``conservative_ova``, and the
references ``linucb`` and ``epsilon_greedy`` (per-action ridge regressions). Every learner
standardises contexts online (:class:`RunningScaler`) unless ``standardize=False``.

Loss-value feedback (noisy multi-point bandit feedback on a convex loss):
``brukhim_hazan`` (Brukhim & Hazan 2021, Algorithm 2), the baselines ``n_fkm``, ``ogd`` and
``ogb``, and ``oco_boost`` (Brukhim et al. 2020, Algorithm 4).

The interfaces they implement are in :mod:`opboost.api` (``OnlineLearner``,
``BanditLearner``, ``LossFeedbackLearner``); the environments and runners that simulate
their streams are in :mod:`opboost.simulation`. Submodules load lazily, so
``import opboost.algorithms.online`` stays light (no river).
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = [
    "Banditron",
    "BrukhimHazanBoost",
    "ChenBanditBoost",
    "ConservativeOVA",
    "EpsilonGreedyLinear",
    "LinUCB",
    "RunningScaler",
]

_LAZY: dict[str, tuple[str, str]] = {
    "Banditron": ("opboost.algorithms.online.banditron", "Banditron"),
    "BrukhimHazanBoost": ("opboost.algorithms.online.brukhim_hazan", "BrukhimHazanBoost"),
    "ChenBanditBoost": ("opboost.algorithms.online.chen_bandit_boost", "ChenBanditBoost"),
    "ConservativeOVA": ("opboost.algorithms.online.conservative_ova", "ConservativeOVA"),
    "EpsilonGreedyLinear": ("opboost.algorithms.online.linear_bandits", "EpsilonGreedyLinear"),
    "LinUCB": ("opboost.algorithms.online.linear_bandits", "LinUCB"),
    "RunningScaler": ("opboost.algorithms.online.scaling", "RunningScaler"),
}


__getattr__, __dir__ = lazy_attributes("opboost.algorithms.online", _LAZY, globals())
