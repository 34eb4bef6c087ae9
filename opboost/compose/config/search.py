"""Hyper-parameter search inside a study (London et al. 2023, section 5.1).

An algorithm's ``search`` table lists candidate values per parameter::

    search = { method = "random", n_iter = 8, seed = 0, space = {
        "base_learner.num_leaves" = [7, 15, 31], "booster.n_rounds" = [50, 100] } }

A space key is a dotted path into the algorithm's table: ``"booster.n_rounds"``,
``"base_learner.num_leaves"``, ``"objective"`` (the component name), ``"objective.name"``,
``"online_learner.delta"``, ``"params.n_estimators"`` (baselines), ``"n_passes"``. Every
value is validated at parse time exactly as if it were written in the table.

``method = "grid"`` tries every combination; ``"random"`` draws ``n_iter`` distinct
combinations of the grid with a generator seeded by ``seed``. In a study every candidate is
trained on every seed's simulated log and scored on the validation rows; the candidate with
the highest mean validation reward is selected and its policies' test rewards are reported.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opboost.api.exceptions import ConfigError
from opboost.compose.config.validate import check_keys, check_type, suggest

__all__ = ["METHODS", "SearchSpec", "parse_search", "select_candidate", "with_candidate"]

METHODS = ("random", "grid")
_KEYS = ("method", "n_iter", "seed", "space")
#: Tables whose missing entries default to {} (others default to the component's name).
_PLAIN_TABLES = ("booster", "params")
_COMPONENT_DEFAULTS = {
    "objective": "auto",
    "estimator": "ips",
    "base_learner": "lightgbm_tree",
}


@dataclass(frozen=True)
class SearchSpec:
    """A validated search: ``space`` maps dotted keys to lists of candidate values."""

    method: str
    n_iter: int
    seed: int
    space: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def grid_size(self) -> int:
        """Number of combinations in the grid."""
        return math.prod(len(v) for v in self.space.values())

    def candidates(self) -> list[dict[str, Any]]:
        """The overrides to try, in a fixed order; each a {dotted key: value} dict."""
        keys = list(self.space)
        size = self.grid_size
        if self.method == "grid" or self.n_iter >= size:
            combos = list(itertools.product(*(range(len(self.space[k])) for k in keys)))
        else:
            rng = np.random.default_rng(self.seed)
            chosen = np.sort(rng.choice(size, size=self.n_iter, replace=False))
            lengths = [len(self.space[k]) for k in keys]
            combos = [tuple(int(i) for i in np.unravel_index(c, lengths)) for c in chosen]
        return [{k: self.space[k][i] for k, i in zip(keys, combo, strict=True)} for combo in combos]

    def to_dict(self) -> dict[str, Any]:
        """The table as written in a resolved config."""
        return {
            "method": self.method,
            "n_iter": self.n_iter,
            "seed": self.seed,
            "space": {k: list(v) for k, v in self.space.items()},
        }


def with_candidate(table: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of the algorithm ``table`` with the dotted ``overrides`` of a search
    candidate set (and no ``search`` table)."""
    out = copy.deepcopy(table)
    out.pop("search", None)
    for key, value in overrides.items():
        head, _, param = key.partition(".")
        if not param:
            out[head] = copy.deepcopy(value)
            continue
        section = out.get(head)
        if section is None:
            section = {} if head in _PLAIN_TABLES else {"name": _COMPONENT_DEFAULTS.get(head)}
        elif isinstance(section, str):
            section = {"name": section}
        section = dict(section)
        section[param] = copy.deepcopy(value)
        out[head] = section
    return out


def _strip_where(exc: ConfigError) -> str:
    text = str(exc)
    prefix = f"{exc.file} [{exc.key}]: " if exc.key else f"{exc.file}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def parse_search(
    value: Any, algorithm: Any, file: str, parse_candidate: Callable[[dict], Any]
) -> SearchSpec:
    """Validate the ``search`` table of ``algorithm`` (an AlgorithmSpec with ``raw``): every
    candidate's algorithm table must pass ``parse_candidate`` (the config's algorithm parser,
    without search), whose :class:`ConfigError` names the candidate."""
    key = f"algorithms[{algorithm.index}].search"
    if not isinstance(value, dict):
        raise ConfigError(
            'must be a table, e.g. { method = "random", n_iter = 8, space = '
            '{ "booster.n_rounds" = [50, 100] } }.',
            file=file,
            key=key,
        )
    check_keys(value, _KEYS, file, key, "search")
    method = value.get("method", "random")
    if method not in METHODS:
        raise ConfigError(
            f"must be one of {', '.join(repr(m) for m in METHODS)}. Got {method!r}."
            f"{suggest(str(method), list(METHODS))}",
            file=file,
            key=f"{key}.method",
        )
    n_iter, seed = value.get("n_iter", 8), value.get("seed", 0)
    check_type(n_iter, 8, file, f"{key}.n_iter")
    check_type(seed, 0, file, f"{key}.seed")
    if n_iter < 1 or seed < 0:
        bad = "n_iter" if n_iter < 1 else "seed"
        raise ConfigError(
            f"must be >= {1 if bad == 'n_iter' else 0}. Got {value[bad]!r}.",
            file=file,
            key=f"{key}.{bad}",
        )
    space = value.get("space")
    if not isinstance(space, dict) or not space:
        raise ConfigError(
            'must be a non-empty table of lists, e.g. { "base_learner.num_leaves" = [7, 15] }.',
            file=file,
            key=f"{key}.space",
        )
    for name, values in space.items():
        where = f'{key}.space."{name}"'
        if name in ("label", "search", "baseline") or name.startswith(("label.", "search.")):
            raise ConfigError(f"cannot search over {name!r}.", file=file, key=where)
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"must be a non-empty list of candidate values. Got {values!r}.",
                file=file,
                key=where,
            )
        for candidate in values:
            table = with_candidate(algorithm.raw, {name: candidate})
            try:
                parse_candidate(table)
            except ConfigError as exc:
                raise ConfigError(
                    f"candidate {candidate!r} is invalid: {_strip_where(exc)}",
                    file=file,
                    key=where,
                ) from exc
    return SearchSpec(method, n_iter, seed, {k: list(v) for k, v in space.items()})


def select_candidate(scores: dict[int, list[float]]) -> int:
    """The candidate index with the highest mean score (ties: the lowest index).

    ``scores`` maps candidate index -> validation rewards over seeds; NaN means unknown.
    """
    if not scores:
        raise ValueError("select_candidate: no candidates were scored.")
    means = {i: float(np.mean(v)) if v else float("nan") for i, v in scores.items()}
    finite = {i: m for i, m in means.items() if np.isfinite(m)}
    if not finite:
        return min(scores)
    best = max(finite.values())
    return min(i for i, m in finite.items() if m == best)
