"""Simulation: supervised data turned into bandit logs and streams, a catalogue of items with
features and candidate sets (``simulate_catalogue``), label-hiding environments, the online
runners and the data set loaders. Algorithms never import it.

Submodules load lazily, so ``import opboost.simulation`` stays light.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = [
    "BanditEnvironment",
    "BanditRunResult",
    "HiddenLabelError",
    "LossEnvironment",
    "LossRunResult",
    "SimulatedBandit",
    "SimulatedCatalogue",
    "SoftmaxLoggingPolicy",
    "expected_reward",
    "reward_table",
    "run_bandit",
    "run_loss_feedback",
    "simulate_catalogue",
    "supervised_to_bandit",
]

_LAZY: dict[str, tuple[str, str]] = {
    "BanditEnvironment": ("opboost.simulation.environment", "BanditEnvironment"),
    "BanditRunResult": ("opboost.simulation.results", "BanditRunResult"),
    "HiddenLabelError": ("opboost.api.exceptions", "HiddenLabelError"),
    "LossEnvironment": ("opboost.simulation.loss_environment", "LossEnvironment"),
    "LossRunResult": ("opboost.simulation.loss_runner", "LossRunResult"),
    "SimulatedBandit": ("opboost.simulation.supervised", "SimulatedBandit"),
    "SimulatedCatalogue": ("opboost.simulation.items", "SimulatedCatalogue"),
    "SoftmaxLoggingPolicy": ("opboost.simulation.supervised", "SoftmaxLoggingPolicy"),
    "expected_reward": ("opboost.simulation.supervised", "expected_reward"),
    "reward_table": ("opboost.simulation.supervised", "reward_table"),
    "run_bandit": ("opboost.simulation.runners", "run_bandit"),
    "run_loss_feedback": ("opboost.simulation.loss_runner", "run_loss_feedback"),
    "simulate_catalogue": ("opboost.simulation.items", "simulate_catalogue"),
    "supervised_to_bandit": ("opboost.simulation.supervised", "supervised_to_bandit"),
}


__getattr__, __dir__ = lazy_attributes("opboost.simulation", _LAZY, globals())
