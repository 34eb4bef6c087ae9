"""Online boosting with bandit or loss feedback.

Contextual-bandit feedback (the reward of the chosen action only): ``chen_bandit_boost``
(Chen, Lin & Lu 2014), its baselines ``banditron`` and ``conservative_ova``, and the
references ``linucb`` and ``epsilon_greedy`` (per-action ridge regressions), run with
:func:`run_bandit` through a label-hiding :class:`BanditEnvironment`. Every learner
standardises contexts online (:class:`RunningScaler`) unless ``standardize=False``.

Loss-value feedback (noisy multi-point bandit feedback on a convex loss):
``brukhim_hazan`` (Brukhim & Hazan 2021, Algorithm 2), the baselines ``n_fkm``, ``ogd`` and
``ogb``, and ``oco_boost`` (Brukhim et al. 2020, Algorithm 4), run with
:func:`run_loss_feedback` through a label-hiding :class:`LossEnvironment`.

Submodules load lazily, so ``import opboost.online`` stays light (no river).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BanditEnvironment",
    "BanditLearner",
    "BanditRunResult",
    "Banditron",
    "ChenBanditBoost",
    "ConservativeOVA",
    "EpsilonGreedyLinear",
    "HiddenLabelError",
    "LinUCB",
    # loss feedback
    "LossEnvironment",
    "LossFeedbackLearner",
    "LossRunResult",
    "OnlineLearner",
    "RunningScaler",
    "run_bandit",
    "run_loss_feedback",
]

_LAZY: dict[str, tuple[str, str]] = {
    "OnlineLearner": ("opboost.online.base", "OnlineLearner"),
    # contextual-bandit feedback
    "BanditLearner": ("opboost.online.bandit", "BanditLearner"),
    "BanditEnvironment": ("opboost.online.environment", "BanditEnvironment"),
    "HiddenLabelError": ("opboost.online.environment", "HiddenLabelError"),
    "Banditron": ("opboost.online.banditron", "Banditron"),
    "ChenBanditBoost": ("opboost.online.chen_bandit_boost", "ChenBanditBoost"),
    "ConservativeOVA": ("opboost.online.conservative_ova", "ConservativeOVA"),
    "LinUCB": ("opboost.online.linear_bandits", "LinUCB"),
    "EpsilonGreedyLinear": ("opboost.online.linear_bandits", "EpsilonGreedyLinear"),
    "RunningScaler": ("opboost.online.scaling", "RunningScaler"),
    "BanditRunResult": ("opboost.online.results", "BanditRunResult"),
    "run_bandit": ("opboost.online.runners", "run_bandit"),
    # loss feedback
    "LossFeedbackLearner": ("opboost.online.loss_feedback", "LossFeedbackLearner"),
    "LossEnvironment": ("opboost.online.loss_feedback", "LossEnvironment"),
    "LossRunResult": ("opboost.online.loss_runner", "LossRunResult"),
    "run_loss_feedback": ("opboost.online.loss_runner", "run_loss_feedback"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, attr = _LAZY[name]
        value = getattr(importlib.import_module(module_name), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'opboost.online' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
