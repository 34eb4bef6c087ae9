"""What a parsed config is made of: plugin components by kind, name and parameters, and
algorithm rows (offline, online, policy learner or baseline)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opboost.core.registry import get_registry

__all__ = ["AlgorithmSpec", "ComponentSpec", "LogsSpec", "WorldSpec"]


@dataclass(frozen=True)
class ComponentSpec:
    """A plugin component by kind and name, with its explicitly set parameters."""

    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def build(self, **extra: Any) -> Any:
        """A new instance with ``params`` and ``extra``."""
        return get_registry().get(self.kind, self.name)(**{**self.params, **extra})


@dataclass(frozen=True)
class WorldSpec:
    """A simulated world (``[data] world = "catalogue"`` or ``"slates"``): the parameters of
    ``simulate_catalogue`` (without ``n``) or ``make_slate_world`` (without ``seed``), and
    ``n_test``, with their defaults."""

    params: dict[str, Any]
    name: str = "catalogue"

    def describe(self) -> str:
        """One line for the command line: the world's parameters."""
        return f"{self.name} world: " + ", ".join(f"{k}={v!r}" for k, v in self.params.items())

    def resolved(self) -> dict[str, Any]:
        """The ``[data]`` table with its defaults."""
        return {"world": self.name, **self.params}

    def build(self, n: int | None = None, random_state: Any = 0) -> Any:
        """The world of ``random_state``: a catalogue's ``n`` rows (default ``n_test``; a
        ``SimulatedCatalogue``) or a ``SlateWorld``."""
        params = {k: v for k, v in self.params.items() if k != "n_test"}
        if self.name == "slates":
            from opboost.simulation.slate_world import make_slate_world

            return make_slate_world(**params, seed=random_state)
        from opboost.simulation.items import simulate_catalogue

        n = self.params["n_test"] if n is None else n
        return simulate_catalogue(n, **params, random_state=random_state)


@dataclass(frozen=True)
class LogsSpec:
    """A study's own logs (``[data] path = ...``): the file and its column mapping, as in
    :meth:`opboost.LoggedBandit.from_dataframe`, and the held-out fraction of each seed.
    ``path`` is as written; ``file_path`` resolved against the config file's directory."""

    path: str
    file_path: str
    #: The config file (named in errors about the logs file).
    config_file: str
    contexts: tuple[str, ...]
    action: str
    propensity: str
    reward: str
    actions: tuple[Any, ...] | None = None
    n_actions: int | None = None
    position: str | None = None
    holdout_fraction: float = 0.25

    @property
    def name(self) -> str:
        """The logs file's name (how reports call the data)."""
        return Path(self.file_path).name

    def describe(self) -> str:
        """One line for the command line: the file and the held-out share."""
        return f"logs: {self.file_path} (held out per seed: {self.holdout_fraction:g} of the rows)"

    def resolved(self) -> dict[str, Any]:
        """The ``[data]`` table with its defaults (None values omitted: TOML has no null)."""
        out: dict[str, Any] = {"path": self.path, "contexts": list(self.contexts)}
        out.update(action=self.action, propensity=self.propensity, reward=self.reward)
        if self.actions is not None:
            out["actions"] = list(self.actions)
        if self.n_actions is not None:
            out["n_actions"] = self.n_actions
        if self.position is not None:
            out["position"] = self.position
        out["holdout_fraction"] = self.holdout_fraction
        return out


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm row: ``family`` is "offline", "online", "policy" or "baseline"."""

    label: str
    family: str
    booster: dict[str, Any] = field(default_factory=dict)
    objective: ComponentSpec | None = None
    estimator: ComponentSpec | None = None
    base_learner: ComponentSpec | None = None
    callbacks: tuple[ComponentSpec, ...] = ()
    online_learner: ComponentSpec | None = None
    n_passes: int = 1
    policy_learner: ComponentSpec | None = None
    baseline: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: Hyper-parameter search (an :class:`opboost.compose.config.search.SearchSpec`), or None.
    search: Any = None
    #: The algorithm's TOML table as written (search candidates are re-parsed from it).
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    index: int = 0
    #: Its own deployment settings in a deployment study (batch_size, epsilon, temperature).
    deployment: dict[str, Any] = field(default_factory=dict)

    def make_booster(self, random_state: Any = None) -> Any:
        """The configured :class:`opboost.Booster` (offline algorithms)."""
        from opboost.core.booster import Booster

        return Booster(
            objective=self.objective.name,
            objective_params=self.objective.params,
            estimator=self.estimator.name,
            estimator_params=self.estimator.params,
            base_learner=self.base_learner.name,
            base_learner_params=self.base_learner.params,
            random_state=random_state,
            verbose=0,  # the study shows its trials' progress
            **self.booster,
        )

    def make_callbacks(self) -> list[Any]:
        """New instances of the configured fit callbacks."""
        return [spec.build() for spec in self.callbacks]

    def make_online_learner(self, n_actions: int, random_state: Any = None) -> Any:
        """The configured online bandit learner for ``n_actions`` actions."""
        return self.online_learner.build(n_actions=n_actions, random_state=random_state)
