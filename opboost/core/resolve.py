"""The Booster's components by registry name: built, parameterised and checked to fit
together. Core meets the algorithms only here, and only by name."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sklearn.base import clone

from opboost.api.callback import Callback
from opboost.api.data.tabular import use_categorical_features
from opboost.api.engine import BoosterEngine, Components, FitSettings, RemoteLogs, StepSettings
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state
from opboost.core.booster_checks import check_callbacks, with_progress
from opboost.core.booster_inputs import check_missing
from opboost.core.fit.slot_fit import make_fit, uses_pairs
from opboost.core.registry import get_registry
from opboost.core.selection import SelectionSettings

__all__ = [
    "AUTO_CHALLENGERS",
    "AUTO_CHALLENGER_CONFIDENCE",
    "AUTO_OBJECTIVES",
    "AUTO_PAIRED_CONFIDENCE",
    "AUTO_PATIENCE",
    "AUTO_ROUNDS",
    "AUTO_ROUNDS_CONFIDENCE",
    "AUTO_VALIDATION_FRACTION",
    "COMPONENT_KINDS",
    "FitPlan",
    "RoundChoice",
    "auto_objective",
    "effective_round_choice",
    "effective_rounds",
    "offers_start",
    "plan_fit",
    "resolve",
    "resolve_components",
    "set_component_params",
    "split_component_params",
]

#: The Booster parameters that name a component, and the component kind of each.
COMPONENT_KINDS = {
    "objective": "objective",
    "estimator": "estimator",
    "base_learner": "base_learner",
}


#: What ``objective="auto"`` (the Booster's default) is, by whether the fit starts from the
#: base learner's own reward model with one training coefficient per row: measured in
#: docs/benchmarks/defaults.md ("The default objective follows the start").
AUTO_OBJECTIVES = {True: "poem", False: "bopl_s"}


def split_component_params(params: dict[str, Any]) -> tuple[dict, dict[str, dict]]:
    """(plain parameters, {component: {param: value}}) of ``set_params``' keywords, where
    ``<component>__<param>`` (component: objective, estimator, base_learner) is nested."""
    nested: dict[str, dict[str, Any]] = {}
    plain: dict[str, Any] = {}
    for key, value in params.items():
        component, sep, sub = key.partition("__")
        if sep and component in COMPONENT_KINDS:
            nested.setdefault(component, {})[sub] = value
        else:
            plain[key] = value
    return plain, nested


def set_component_params(booster: Any, nested: dict[str, dict[str, Any]]) -> None:
    """Merge ``nested`` (:func:`split_component_params`) into new ``<component>_params``
    dicts of ``booster``."""
    for component, values in nested.items():
        name = f"{component}_params"
        current = getattr(booster, name)
        if current is not None and not isinstance(current, Mapping):
            raise InvalidParameterError(
                f"The {name!r} parameter of Booster must be a dict or None to take "
                f"{component}__<param> settings. Got {current!r} instead."
            )
        setattr(booster, name, {**dict(current or {}), **values})


def resolve(booster: Any, param: str, spec: Any = None) -> Any:
    """The component of ``booster``'s parameter ``param`` ("objective", "estimator" or
    "base_learner") with its ``<param>_params``; ``spec`` (a name or instance) instead of the
    parameter's value when given."""
    given = getattr(booster, param)
    chosen = spec is not None and _is_auto(given)  # "auto" resolved to ``spec``
    spec, kind = given if spec is None else spec, COMPONENT_KINDS[param]
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
                + (
                    f" ({param}='auto' chose {spec!r} for this fit; name the {kind} that takes "
                    f"these parameters.)"
                    if chosen
                    else ""
                )
            ) from exc
    if getattr(spec, "kind", None) != kind:
        raise InvalidParameterError(
            f"The {param!r} parameter of Booster must be a registered {kind} name or "
            f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} instance. Got {spec!r} "
            f"(kind {getattr(spec, 'kind', None)!r}) instead."
        )
    component = clone(spec)
    return component.set_params(**params) if params else component


def _is_auto(spec: Any) -> bool:
    return isinstance(spec, str) and spec == "auto"


def offers_start(learner: Any, *, can_start: bool, pairs: bool, auto: bool = False) -> bool:
    """Whether a fit can start from ``learner``'s own reward model: in memory (``can_start``)
    and offered by the learner for the fit's rows (``pairs``: candidate pairs [x; phi(a)],
    :meth:`BaseLearner.offers_pair_reward_start`; else :meth:`BaseLearner.offers_reward_start`,
    or with ``auto`` :meth:`BaseLearner.prefers_reward_start`: the start "auto" takes)."""
    if not can_start:
        return False
    if pairs:
        return learner.offers_pair_reward_start()
    return learner.prefers_reward_start() if auto else learner.offers_reward_start()


def auto_objective(
    booster: Any, estimator: Any, learner: Any, *, can_start: bool, pairs: bool = False
) -> str:
    """The objective ``"auto"`` stands for in a fit of ``booster``: "poem" (sample-variance
    penalised IPS) when the fit starts from ``learner``'s own reward model
    (:func:`effective_warm_start`) and ``estimator`` gives one coefficient per row, else
    "bopl_s" (:data:`AUTO_OBJECTIVES`)."""
    start, _ = effective_warm_start(booster, learner, can_start=can_start, pairs=pairs)
    from_model = start == "reward_model" and offers_start(learner, can_start=can_start, pairs=pairs)
    return AUTO_OBJECTIVES[from_model and not estimator.action_coefficients]


def resolve_components(booster: Any, *, can_start: bool = True, pairs: bool = False) -> Components:
    """The objective, estimator and base learner of ``booster``, checked to fit together;
    ``objective="auto"`` is resolved (:func:`auto_objective`) for a fit that ``can_start``
    from a reward model (False: distributed logs) on stacked rows or, with ``pairs``, on
    candidate pairs (logs with candidates or action features)."""
    estimator = resolve(booster, "estimator")
    learner = resolve(booster, "base_learner")
    name = booster.objective
    if _is_auto(name):
        name = auto_objective(booster, estimator, learner, can_start=can_start, pairs=pairs)
    objective = resolve(booster, "objective", name)
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
    return Components(objective, estimator, learner)


#: Rounds of ``n_rounds="auto"`` (the Booster's default), but after a reward-model start on
#: candidate pairs, where the rounds only overfit the logs (docs/catalogue.md).
AUTO_ROUNDS = 100


def effective_rounds(booster: Any, warm_start: str | None, *, pairs: bool) -> int:
    """The rounds a fit of ``booster`` runs at most: ``n_rounds``, or for "auto"
    :data:`AUTO_ROUNDS`, 0 when the fit on candidate ``pairs`` starts from the learner's
    reward model (``warm_start`` as :func:`effective_warm_start` resolved it)."""
    if booster.n_rounds != "auto":
        return int(booster.n_rounds)
    return 0 if pairs and warm_start == "reward_model" else AUTO_ROUNDS


#: ``validation_fraction="auto"`` after a reward-model start over fixed actions, at every log
#: size: hold out this share of the rows, grow the rounds on the rest and keep them only
#: where their paired held-out gain over the start alone is clear (docs/tuning.md, "How many
#: rounds"; measured on the tuning worlds of ``examples/benchmarks/_bench_tabular.py``).
AUTO_VALIDATION_FRACTION = 0.2
#: The one-sided confidence of the paired test a replacement of the boosted policy needs (the
#: constant action, the challengers).
AUTO_PAIRED_CONFIDENCE = 0.95
#: The one-sided confidence the rounds need over the start alone: lower than a replacement's,
#: as the held-out fifth of a small log rarely shows the rounds' gain at 95% where it is large
#: (1,400 logged digits rows: 0.75 and 0.79 kept against 0.89 with the rounds; tuning worlds
#: of the tabular suite: 0.004 lower on average, docs/benchmarks/defaults.md).
AUTO_ROUNDS_CONFIDENCE = 0.75
#: Rounds grown past the best held-out round before the fit stops.
AUTO_PATIENCE = 20
#: Registered policy learners that may replace the boosted policy when their paired
#: held-out gain over it is clear (the doubly robust reduction to per-action regression).
AUTO_CHALLENGERS: tuple[str, ...] = ("dr_reduction",)
#: The one-sided confidence of the paired test a challenger needs to replace the kept policy.
AUTO_CHALLENGER_CONFIDENCE = 0.95


@dataclass(frozen=True)
class RoundChoice:
    """How a fit chooses its rounds on held-out logs: ``fraction`` held out (None: no
    choice, every round kept), scored by the estimator named ``selection``; ``paired``,
    ``rounds_confidence``, ``patience``, ``challengers`` and ``challenger_confidence`` as in
    :class:`opboost.core.selection.SelectionSettings` (None: the highest held-out estimate,
    every round grown)."""

    fraction: float | None
    selection: str
    paired: float | None = None
    rounds_confidence: float | None = None
    patience: int | None = None
    challengers: tuple[str, ...] = ()
    challenger_confidence: float | None = None


def effective_round_choice(
    booster: Any,
    n_rows: int | None,
    warm_start: str | None,
    rounds: int,
    callbacks: Sequence[Any] = (),
    *,
    pairs: bool,
) -> RoundChoice:
    """The :class:`RoundChoice` of a fit of ``booster`` on ``n_rows`` logged rows in memory
    (None: logs elsewhere), after ``warm_start`` and ``rounds`` were resolved.

    ``selection="auto"`` is "dr" scored with the start's own reward model when the fit starts
    from one over fixed actions, else "snips". ``validation_fraction="auto"`` is the paired
    rule (:data:`AUTO_VALIDATION_FRACTION` held out, :data:`AUTO_PAIRED_CONFIDENCE`,
    :data:`AUTO_PATIENCE`) when the fit starts from a reward model over fixed actions in
    memory, runs rounds and has no callback that chooses where the rounds end
    (``Callback.chooses_rounds``: early stopping); else :data:`AUTO_VALIDATION_FRACTION` with
    the highest estimate kept for ``safe=True`` (its fallback needs held-out logs), and None
    without. A ``Checkpoint`` changes nothing: the choice's state is checkpointed with the
    rounds, so a resumed fit chooses as an uninterrupted one."""
    own_start = warm_start == "reward_model" and not pairs
    selection = booster.selection
    if selection == "auto":
        selection = "dr" if own_start else "snips"
    fraction = booster.validation_fraction
    if fraction != "auto":
        return RoundChoice(fraction, selection)
    chooses = any(getattr(cb, "chooses_rounds", False) for cb in callbacks)
    paired_rule = own_start and n_rows is not None and rounds > 0
    if paired_rule and not chooses:  # EarlyStopping: the user's own choice
        return RoundChoice(
            AUTO_VALIDATION_FRACTION,
            selection,
            AUTO_PAIRED_CONFIDENCE,
            AUTO_ROUNDS_CONFIDENCE,
            AUTO_PATIENCE,
            AUTO_CHALLENGERS,
            AUTO_CHALLENGER_CONFIDENCE,
        )
    if booster.safe and n_rows is not None:  # the fallback needs held-out logs
        return RoundChoice(AUTO_VALIDATION_FRACTION, selection)
    return RoundChoice(None, selection)


#: ``warm_start_prob`` when left None, per start: measured in docs/benchmarks/defaults.md.
DEFAULT_WARM_START_PROBS: dict[str, float] = {"reward_model": 0.7}


def effective_warm_start(
    booster: Any, learner: Any, *, can_start: bool, pairs: bool = False
) -> tuple[str | None, float]:
    """(start, probability) a fit of ``booster`` uses, from its ``warm_start`` and
    ``warm_start_prob``. The start is None (F_0 = 0) for None or "none"; for
    "auto" "reward_model" when ``learner`` fits its own reward model on the fit's rows and
    the fit can start from one (:func:`offers_start`: not the distributed fit), else None.
    ``prob`` None is the start's default: 0.7 for "reward_model", else 0.5."""
    warm_start, prob = booster.warm_start, booster.warm_start_prob
    if warm_start == "auto":
        offered = offers_start(learner, can_start=can_start, pairs=pairs, auto=True)
        warm_start = "reward_model" if offered else None
    elif warm_start == "none":
        warm_start = None
    if prob is None:
        prob = DEFAULT_WARM_START_PROBS.get(warm_start or "", 0.5)
    return warm_start, float(prob)


@dataclass(frozen=True)
class FitPlan:
    """What one fit of a Booster runs with, resolved before anything is fitted: the ``logs``
    given (in memory: all of them, before any hold-out; or :class:`RemoteLogs`), the
    ``components``, ``settings``, the most rounds, the checked ``callbacks``, the held-out
    ``selection`` (None: none), and ``make_engine``, which builds the engine."""

    logs: Any
    components: Components
    settings: FitSettings
    n_rounds: int
    callbacks: list[Callback]
    selection: SelectionSettings | None
    make_engine: Callable[[], BoosterEngine]


def _seed(booster: Any) -> int:
    """An integer seed drawn from ``booster.random_state``."""
    return int(check_random_state(booster.random_state).integers(2**31 - 1))


def plan_fit(booster: Any, logs: Any, eval_data: Any, callbacks: Any) -> FitPlan:
    """The :class:`FitPlan` of ``booster`` on ``logs`` (a validated LoggedBandit, or
    :class:`RemoteLogs`, which build their own engine and cannot start from a reward model)."""
    remote = isinstance(logs, RemoteLogs)
    data = None if remote else logs
    pairs = not remote and uses_pairs(data)
    callbacks = with_progress(check_callbacks(callbacks), booster.verbose)
    components = resolve_components(booster, can_start=not remote, pairs=pairs)
    learner = components.learner
    check_missing(learner, data, "data")
    check_missing(learner, eval_data, "eval_data")
    start = effective_warm_start(booster, learner, can_start=not remote, pairs=pairs)
    n_rounds = effective_rounds(booster, start[0], pairs=pairs)
    if n_rounds == 0 and start[0] is None:
        raise InvalidParameterError(
            f"Booster: n_rounds=0 keeps only the start F_0, and this fit has none "
            f"(warm_start={booster.warm_start!r} with base_learner={learner.name!r}); use "
            f"warm_start='reward_model' with a learner that fits one, or n_rounds >= 1."
        )
    use_categorical_features(learner, getattr(data, "schema", None))  # from_dataframe's
    n_rows = None if remote else len(data)
    choice = effective_round_choice(booster, n_rows, start[0], n_rounds, callbacks, pairs=pairs)
    selection = None
    if not remote and choice.fraction is not None:
        selection = SelectionSettings(
            _seed(booster),
            choice.selection,
            booster.selection_policy,
            booster.safe,
            bool(booster.refit),
            choice.paired,
            choice.rounds_confidence,
            choice.patience,
            choice.challengers,
            choice.challenger_confidence,
        )
    step = StepSettings(booster.scale, booster.l2, booster.learning_rate)
    settings = FitSettings(_seed(booster), booster.reward_shift, *start, choice.fraction, step)
    if remote:
        options = {"eval_data": eval_data, "callbacks": callbacks}
        make = functools.partial(logs.make_engine, components, settings, **options)
    else:
        # no round and no checkpoint: F_0 on the training rows is read by no one unless the
        # fit has evaluation or held-out rows (InMemoryFit's start_only checks those)
        start_only = n_rounds == 0 and not any(
            getattr(cb, "writes_checkpoints", False) for cb in callbacks
        )
        make = functools.partial(
            make_fit, data, eval_data, components, settings, selection, start_only=start_only
        )
    return FitPlan(logs, components, settings, n_rounds, callbacks, selection, make)
