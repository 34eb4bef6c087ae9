"""The in-memory fit on candidate sets and action features: boosting in slot coordinates.

Logs with ``candidates`` and/or ``action_features`` are boosted on the slot view
(:mod:`opboost.api.data.slots`): scores F are (n, C) with each row's candidates in its first
C_i slots and :data:`~opboost.api.data.slots.MASKED_SCORE` in the padding, so the softmax runs over
each row's candidates only and the objective, the estimator's per-row coefficients, the step and the
held-out selection all run unchanged on the slot logs. The base learner fits one tree per round on
the P = sum_i C_i candidate pairs [x_i; phi(a)] (``BaseLearner.prepare_pairs``). Logs with neither
never come here: they take :class:`~opboost.core.fit.memory.InMemoryFit` as is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.data.pairs import ACTION_SCHEMA_KEY, ActionSchema, PairRows
from opboost.api.data.slots import MASKED_SCORE, SlotView, mask_slots
from opboost.api.engine import Components, FitSettings
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.numerics.memory_limit import check_stacked_fit
from opboost.api.policy import Policy
from opboost.core.booster_checks import check_f, split_holdout
from opboost.core.fit.memory import InMemoryFit, check_reward_range
from opboost.core.fit.warm_start import reward_scale
from opboost.core.selection import SelectionSettings

__all__ = ["SlotFit", "check_pair_fit", "make_fit", "uses_pairs"]


def uses_pairs(data: LoggedBandit) -> bool:
    """Whether ``data`` is boosted on candidate pairs: it has candidates or action features."""
    return data.candidates is not None or data.action_features is not None


def check_pair_fit(learner: Any, settings: FitSettings, *, safe: bool) -> None:
    """Refuse, naming the fix, what a fit on candidate pairs does not support."""
    if not getattr(learner, "supports_pairs", False):
        raise InvalidParameterError(
            f"Booster.fit: the logs have candidate sets or action features, which base learner "
            f"{learner.name!r} cannot boost on (it has no prepare_pairs); use "
            f"base_learner='lightgbm_tree'."
        )
    start = settings.warm_start
    if start not in (None, "reward_model") or (
        start == "reward_model" and not learner.offers_pair_reward_start()
    ):
        supported = "None or 'reward_model'" if learner.offers_pair_reward_start() else "None"
        raise InvalidParameterError(
            f"Booster.fit: warm_start={start!r} is not supported on logs with candidate sets "
            f"or action features with base learner {learner.name!r}; use warm_start={supported}."
        )
    if safe:
        raise InvalidParameterError(
            "Booster.fit: safe=True falls back to a constant action, which a catalogue whose "
            "candidates change per row does not have; use safe=False."
        )


def make_fit(
    data: LoggedBandit,
    eval_data: LoggedBandit | None,
    components: Components,
    settings: FitSettings,
    selection: SelectionSettings | None = None,
    *,
    start_only: bool = False,
) -> InMemoryFit:
    """The in-memory fit of ``data``: with ``selection``, on what is left after holding out
    ``settings.validation_fraction`` of the rows (seeded by ``selection.seed``); a
    :class:`SlotFit` for logs with candidates or action features (checked with
    :func:`check_pair_fit`), else an :class:`InMemoryFit` (``start_only`` as there); refused
    first when its stacked design cannot fit in memory (:func:`check_stacked_fit`)."""
    check_stacked_fit(data, "Booster.fit")  # the logs as given, before any hold-out
    holdout = None
    if selection is not None:
        data, held_out = split_holdout(data, settings.validation_fraction, selection.seed)
        holdout = (held_out, selection)
    if not uses_pairs(data):
        return InMemoryFit(data, eval_data, components, settings, holdout, start_only=start_only)
    check_pair_fit(components.learner, settings, safe=selection is not None and selection.safe)
    return SlotFit(data, eval_data, components, settings, holdout)


class SlotFit(InMemoryFit):
    """:class:`InMemoryFit` in slot coordinates (see the module docstring).

    ``logs`` are the logs as given (n rows, K actions); ``data`` their slot logs (n rows, C
    slots); ``schema`` the :class:`ActionSchema` of phi, recorded in the policy's metadata.
    """

    fixed_actions = False

    def __init__(
        self,
        data: LoggedBandit,
        eval_data: LoggedBandit | None,
        components: Components,
        settings: FitSettings,
        holdout: tuple[LoggedBandit, SelectionSettings] | None = None,
    ) -> None:
        self.logs = data
        self.active: np.ndarray | None = None  # the rows the learner fits on (None: all)
        self.schema = ActionSchema.of_logs(data.action_features, data.n_actions, data.item_schema)
        self._phi = self.schema.phi(data.action_features, "Booster.fit")
        self._pairs: dict[int, tuple[LoggedBandit, PairRows]] = {}
        slot = self.view_of(data)
        slot_eval = None if eval_data is None else self.view_of(eval_data)
        super().__init__(slot, slot_eval, components, settings, holdout)
        self.scores = mask_slots(self.scores, self.data.candidates)
        if self.eval_data is not None:
            self.eval_scores = mask_slots(self.eval_scores, self.eval_data.candidates)

    def _coefficients(self) -> np.ndarray:
        """Per-row coefficients of the slot logs, or the estimator's per-action coefficients
        in slot coordinates (``Estimator.pair_coefficients``: DR and DM with a reward model
        on [x; phi(a)])."""
        shift = float(self.settings.reward_shift)
        logs = self.logs if shift == 0.0 else self.logs.with_rewards(self.logs.rewards + shift)
        options = {}
        q = getattr(self.learner, "pair_reward_predictions_", None)
        if q is not None and self.estimator.takes_reward_predictions:
            options["reward_predictions"] = q  # the start's cross-fitted model: no second fit
        gamma = self.estimator.pair_coefficients(logs, self.inputs_of(self.data), **options)
        if gamma is None:
            coef = super()._coefficients()
            if coef.ndim != 1:
                raise InvalidParameterError(
                    f"Booster.fit: estimator {self.estimator.name!r} gives per-action "
                    f"coefficients but no pair_coefficients, which boosting on candidate sets "
                    f"needs; use a per-row estimator such as 'ips', or 'dr'."
                )
            return coef
        gamma = np.asarray(gamma, dtype=np.float64)
        shape = self.data.candidates.shape
        if gamma.shape == shape and not np.all(np.isfinite(gamma)):
            check_reward_range(logs, self.estimator.name)
        if gamma.shape != shape or not np.all(np.isfinite(gamma)):
            raise InvalidParameterError(
                f"Estimator {self.estimator.name!r} returned invalid pair coefficients (shape "
                f"{gamma.shape}); expected finite values of shape {shape} (rows x slots)."
            )
        return np.where(self.data.candidates, gamma, 0.0)

    def view_of(self, data: LoggedBandit) -> LoggedBandit:
        """The slot logs of ``data`` (logs of the same catalogue), with their pairs kept for
        :meth:`inputs_of`."""
        view = SlotView.from_candidates(data.candidates, len(data), data.n_actions)
        slot = view.slot_logs(data)
        pairs = PairRows(
            data.contexts, self._phi, view, self.schema.categorical, self.schema.interaction
        )
        self._pairs[id(slot)] = (slot, pairs)
        return slot

    def inputs_of(self, data: LoggedBandit) -> PairRows:
        hit = self._pairs.get(id(data))
        if hit is None or hit[0] is not data:
            raise InvalidParameterError("SlotFit: logs not seen through view_of.")
        return hit[1]

    def ensemble_scores(self, ensemble: Any, X: PairRows) -> np.ndarray:
        """Slot scores (n, C) of ``ensemble`` on the pairs ``X``, masked outside them."""
        return X.view.scatter(ensemble.score_pairs(X), MASKED_SCORE)

    def start(self) -> None:
        if self.round or self.ensemble_start is not None:
            raise InvalidParameterError(
                "Booster.fit: resuming from a checkpoint is not supported on logs with "
                "candidate sets or action features; use a new checkpoint directory."
            )
        pairs = self.inputs_of(self.data)
        self.active = self._active_rows()
        prepared = pairs if self.active is None else pairs.take(self.active)
        self.learner.prepare_pairs(prepared, random_state=self.seed)
        if self.settings.warm_start == "reward_model":
            self._start_from_pair_rewards()
        if self._deferred:
            super()._set_coefficients()  # after the start: DR and DM reuse its model

    @property
    def _deferred(self) -> bool:
        """Whether the coefficients wait for the start (its cross-fitted q, for DR and DM)."""
        return self.settings.warm_start == "reward_model" and bool(
            self.estimator.takes_reward_predictions
        )

    def _set_coefficients(self) -> None:
        """The coefficients, now; when they reuse the start's model, in :meth:`begin`."""
        self.coef = None
        if not self._deferred:
            super()._set_coefficients()

    def _active_rows(self) -> np.ndarray | None:
        """The rows the learner fits on (n,) bool, or None for all: with an objective whose
        rows of zero coefficients are inert (``Objective.inert_zero_rows``), the rows with a
        nonzero one (a click, under IPS); their pairs alone carry the rounds' gradient."""
        if self.coef is None or not self.objective.inert_zero_rows:
            return None
        active = self.coef != 0 if self.coef.ndim == 1 else (self.coef != 0).any(axis=1)
        return None if active.all() or not active.any() else active

    def _fit_round(self, problem: BaseProblem) -> np.ndarray:
        """f_t (n, C): the learner's fit on the active rows (0 on the others, whose gradient
        and weight are 0 whatever f is)."""
        if self.active is None:
            return super()._fit_round(problem)
        active, shape = self.active, self.scores.shape
        part = BaseProblem(problem.reduction, problem.targets[active], problem.weights[active])
        values = np.zeros(shape)
        values[active] = check_f(
            self.learner.fit_round(part), (int(active.sum()), shape[1]), self.learner
        )
        return values

    def _start_from_pair_rewards(self) -> None:
        """F_0 = q / tau from the learner's reward model on the logged pairs
        (:meth:`BaseLearner.start_from_pair_rewards`), in front of the ensemble; on the
        inactive rows (:meth:`_active_rows`) F stays 0, which no round reads."""
        start = self.learner.start_from_pair_rewards(
            self.inputs_of(self.data), self.logs.actions, self.train.rewards,
            reward_scale(self.data, self.settings.warm_start_prob),
            rows=self.active,
        )  # fmt: skip
        self.reward_start = getattr(self.learner, "reward_start_", None)
        interaction = getattr(self.learner, "pair_interaction_", None)
        if interaction is not None:  # every pair gains the interaction column
            self.schema = dataclasses.replace(self.schema, interaction=interaction)
            values = self.learner.pair_interaction_values_  # the training pairs' own
            for key, (slot, pairs) in self._pairs.items():
                own = values if slot is self.data else None  # other logs: W as served
                self._pairs[key] = (slot, pairs.with_interaction(interaction, own))
        rows = slice(None) if self.active is None else self.active
        shape = (self.scores[rows].shape[0], self.scores.shape[1])
        self.scores[rows] += check_f(start, shape, self.learner)
        if self.eval_data is not None:
            self.eval_scores = self.ensemble_scores(
                self.learner.ensemble(), self.inputs_of(self.eval_data)
            )

    def metadata(self, n_rounds: int) -> dict[str, Any]:
        meta = super().metadata(n_rounds)
        meta["n_actions"] = self.logs.n_actions
        meta[ACTION_SCHEMA_KEY] = self.schema.to_json()
        return meta

    def policy_of(self, ensemble: Any, metadata: dict[str, Any]) -> Policy:
        return Policy(ensemble, self.logs.n_actions, metadata)
