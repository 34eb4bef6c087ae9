"""Simulation: supervised data turned into bandit logs and streams, a catalogue of items with
features and candidate sets (``simulate_catalogue``), random user-like tables
(``tabular_world``), label-hiding environments, the online
runners, deployments retrained in batches (``run_batched``, ``run_online``; fixed actions or
a catalogue's candidates, ``catalogue_stream``; slates, ``slate_stream`` and
``run_slates``) and the data set
loaders. Algorithms never import it.

Submodules load lazily, so ``import opboost.simulation`` stays light.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = [
    "BanditEnvironment",
    "BanditRunResult",
    "CatalogueStream",
    "DeploymentResult",
    "DeploymentStream",
    "HiddenLabelError",
    "LossEnvironment",
    "LossRunResult",
    "SimulatedBandit",
    "SimulatedCatalogue",
    "SlateStream",
    "SlateWorld",
    "SoftmaxLoggingPolicy",
    "TabularWorld",
    "catalogue_stream",
    "deployment_stream",
    "expected_reward",
    "make_slate_world",
    "reward_table",
    "run_bandit",
    "run_batched",
    "run_loss_feedback",
    "run_online",
    "run_slates",
    "simulate_catalogue",
    "slate_stream",
    "supervised_to_bandit",
    "tabular_world",
]

_LAZY: dict[str, tuple[str, str]] = {
    "BanditEnvironment": ("opboost.simulation.environment", "BanditEnvironment"),
    "BanditRunResult": ("opboost.simulation.results", "BanditRunResult"),
    "CatalogueStream": ("opboost.simulation.catalogue_deployment", "CatalogueStream"),
    "DeploymentResult": ("opboost.simulation.deployment", "DeploymentResult"),
    "DeploymentStream": ("opboost.simulation.deployment", "DeploymentStream"),
    "HiddenLabelError": ("opboost.api.exceptions", "HiddenLabelError"),
    "LossEnvironment": ("opboost.simulation.loss_environment", "LossEnvironment"),
    "LossRunResult": ("opboost.simulation.loss_runner", "LossRunResult"),
    "SimulatedBandit": ("opboost.simulation.supervised", "SimulatedBandit"),
    "SimulatedCatalogue": ("opboost.simulation.items", "SimulatedCatalogue"),
    "SlateStream": ("opboost.simulation.slate_deployment", "SlateStream"),
    "SlateWorld": ("opboost.simulation.slate_world", "SlateWorld"),
    "SoftmaxLoggingPolicy": ("opboost.simulation.supervised", "SoftmaxLoggingPolicy"),
    "TabularWorld": ("opboost.simulation.tabular_worlds", "TabularWorld"),
    "catalogue_stream": ("opboost.simulation.catalogue_deployment", "catalogue_stream"),
    "deployment_stream": ("opboost.simulation.deployment", "deployment_stream"),
    "expected_reward": ("opboost.simulation.supervised", "expected_reward"),
    "make_slate_world": ("opboost.simulation.slate_world", "make_slate_world"),
    "reward_table": ("opboost.simulation.supervised", "reward_table"),
    "run_bandit": ("opboost.simulation.runners", "run_bandit"),
    "run_batched": ("opboost.simulation.deployment", "run_batched"),
    "run_loss_feedback": ("opboost.simulation.loss_runner", "run_loss_feedback"),
    "run_online": ("opboost.simulation.deployment", "run_online"),
    "run_slates": ("opboost.simulation.slate_deployment", "run_slates"),
    "simulate_catalogue": ("opboost.simulation.items", "simulate_catalogue"),
    "slate_stream": ("opboost.simulation.slate_deployment", "slate_stream"),
    "supervised_to_bandit": ("opboost.simulation.supervised", "supervised_to_bandit"),
    "tabular_world": ("opboost.simulation.tabular_worlds", "tabular_world"),
}


__getattr__, __dir__ = lazy_attributes("opboost.simulation", _LAZY, globals())
