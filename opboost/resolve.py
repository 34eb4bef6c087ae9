"""The Booster's components by registry name: built, parameterised and checked to fit
together. Core meets the algorithms only here, and only by name."""

from __future__ import annotations

from typing import Any

from sklearn.base import clone

from opboost.api.exceptions import InvalidParameterError

__all__ = ["COMPONENT_KINDS", "resolve", "resolve_components"]

#: The Booster parameters that name a component, and the component kind of each.
COMPONENT_KINDS = {
    "objective": "objective",
    "estimator": "estimator",
    "base_learner": "base_learner",
}


def resolve(booster: Any, param: str) -> Any:
    """The component of ``booster``'s parameter ``param`` ("objective", "estimator" or
    "base_learner") with its ``<param>_params``."""
    from opboost.registry import get_registry

    spec, kind = getattr(booster, param), COMPONENT_KINDS[param]
    params = dict(getattr(booster, f"{param}_params") or {})
    if isinstance(spec, str):
        try:
            cls = get_registry().get(kind, spec)
        except ValueError as exc:
            raise InvalidParameterError(f"The {param!r} parameter of Booster: {exc}") from exc
        try:
            return cls(**params)
        except TypeError as exc:
            raise InvalidParameterError(
                f"The '{param}_params' parameter of Booster does not fit {kind} {spec!r}: "
                f"{exc}. Valid parameters: {', '.join(cls._get_param_names()) or 'none'}."
            ) from exc
    if getattr(spec, "kind", None) != kind:
        raise InvalidParameterError(
            f"The {param!r} parameter of Booster must be a registered {kind} name or "
            f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} instance. Got {spec!r} "
            f"(kind {getattr(spec, 'kind', None)!r}) instead."
        )
    component = clone(spec)
    return component.set_params(**params) if params else component


def resolve_components(booster: Any) -> tuple[Any, Any, Any]:
    """(objective, estimator, base learner) of ``booster``, checked to fit together."""
    objective = resolve(booster, "objective")
    estimator = resolve(booster, "estimator")
    learner = resolve(booster, "base_learner")
    if not getattr(estimator, "supports_training", False):
        raise InvalidParameterError(
            f"The 'estimator' parameter of Booster: {estimator.name!r} gives no training "
            f"coefficients, so it cannot drive boosting; use estimator='ips', "
            f"'truncated_ips' or 'dr' for training and {estimator.name!r} to evaluate."
        )
    if learner.reduction not in objective.reductions:
        raise InvalidParameterError(
            f"The base learner {learner.name!r} solves the {learner.reduction} reduction, "
            f"which objective {objective.name!r} does not support; use a regression base "
            f"learner such as 'lightgbm_tree'."
        )
    if booster.warm_start not in (None, "none", "auto") and learner.reduction != "regression":
        raise InvalidParameterError(
            f"The 'warm_start' parameter of Booster needs a regression base learner to fit "
            f"the constant scores; {learner.name!r} solves {learner.reduction}. Use "
            f"warm_start='none' or a learner such as 'lightgbm_tree'."
        )
    return objective, estimator, learner


#: ``warm_start_prob`` when left None, per start: measured in docs/defaults.md.
DEFAULT_WARM_START_PROBS: dict[str, float] = {"reward_model": 0.7}


def effective_warm_start(
    booster: Any, learner: Any, *, can_start: bool
) -> tuple[str | None, float]:
    """(start, probability) a fit of ``booster`` uses, from its ``warm_start`` and
    ``warm_start_prob``. The start is None (F_0 = 0) for None or "none"; for
    "auto" "reward_model" when ``learner`` fits its own reward model
    (:meth:`BaseLearner.offers_reward_start`) and the fit can start from one (``can_start``:
    not the distributed fit, not logs with candidates or action features), else None.
    ``prob`` None is the start's default: 0.7 for "reward_model", else 0.5."""
    warm_start, prob = booster.warm_start, booster.warm_start_prob
    if warm_start == "auto":
        offered = can_start and learner.offers_reward_start()
        warm_start = "reward_model" if offered else None
    elif warm_start == "none":
        warm_start = None
    if prob is None:
        prob = DEFAULT_WARM_START_PROBS.get(warm_start or "", 0.5)
    return warm_start, float(prob)
