"""The in-memory engine: the ensemble scores F on the training rows and what changes per round.

:class:`InMemoryFit` implements :class:`opboost.api.engine.Engine` for logs held in memory: the
objective turns F and the estimator's coefficients into a base-learning problem, the base
learner fits f_t on the prepared rows, and a committed round updates F, the round state, the
history and (optionally) the held-out selection.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.engine import Components, FitSettings, Fitted
from opboost.api.exceptions import InvalidParameterError
from opboost.api.fit_metadata import policy_metadata, policy_values
from opboost.api.learner import BaseProblem
from opboost.api.numerics.row_blocks import add_scaled
from opboost.api.objective import centre_rows
from opboost.api.policy import Policy
from opboost.api.serving.tie_order import constant_tie_order, record_tie_order
from opboost.core.booster_checks import check_f
from opboost.core.fit.checkpoint import Progress, fingerprint, restored, snapshot
from opboost.core.fit.warm_start import fit_warm_start
from opboost.core.selection import RoundSelection, SelectionSettings

__all__ = ["InMemoryFit", "check_reward_range", "training_coefficients"]


def training_coefficients(estimator: Any, train: LoggedBandit) -> np.ndarray:
    """The estimator's coefficients c (n,) or Gamma (n, K) on ``train``; raise if invalid."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by name
        coef = np.asarray(estimator.coefficients(train), dtype=np.float64)
    shapes = [(len(train),), (len(train), train.n_actions)]
    if coef.shape in shapes and not np.all(np.isfinite(coef)):
        check_reward_range(train, estimator.name)
    if coef.shape not in shapes or not np.all(np.isfinite(coef)):
        raise InvalidParameterError(
            f"Estimator {estimator.name!r} returned invalid training coefficients (shape "
            f"{coef.shape}, finite {bool(np.all(np.isfinite(coef)))}); expected finite "
            f"values of shape {shapes[0]} or, per action, {shapes[1]}."
        )
    return coef


def check_reward_range(data: LoggedBandit, estimator: str) -> None:
    """InvalidParameterError naming the rewards when weighting them by the inverse
    propensities comes within 1e8 of float64's largest number (1.8e308): the estimator's
    non-finite coefficients are then an overflow of finite rewards (LoggedBandit checks them)."""
    largest = float(np.abs(data.rewards).max())
    smallest = float(data.propensities.min())
    if largest / smallest > 1e300:
        raise InvalidParameterError(
            f"Booster.fit: estimator {estimator!r} gave non-finite training coefficients: the "
            f"rewards reach |r| = {largest:.3g} and the propensities go down to "
            f"{smallest:.3g}, and rewards over propensities overflow float64. Rescale the "
            f"rewards, e.g. divide them by {largest:.3g} (the best policy is unchanged)."
        )


class InMemoryFit:
    """One fit on in-memory logs: scores F (n, K), coefficients, round state and history.

    With ``holdout`` logs (and how to select on them, ``selection``) the fit scores every
    committed round there (``selection``, an :class:`opboost.core.selection.RoundSelection`, from
    :meth:`begin` on). ``start_only``: the fit runs no rounds and nothing reads F on the
    training rows (no evaluation or held-out rows, no checkpoints): the start need not score
    them (:func:`opboost.core.fit.warm_start.fit_warm_start`), and there is no round state.
    """

    def __init__(
        self,
        data: LoggedBandit,
        eval_data: LoggedBandit | None,
        components: Components,
        settings: FitSettings,
        holdout: tuple[LoggedBandit, SelectionSettings] | None = None,
        *,
        start_only: bool = False,
    ) -> None:
        self.data, self.eval_data, self.settings = data, eval_data, settings
        self.start_only = start_only and eval_data is None and holdout is None
        self.components = components
        self.objective, self.estimator, self.learner = components
        self.holdout = holdout
        shift = float(settings.reward_shift)
        self.train = data if shift == 0.0 else data.with_rewards(data.rewards + shift)
        self.seed, self.n = settings.seed, len(data)
        self.estimator.seeded(self.seed)  # an unseeded reward-model estimator (DR, DM)
        self._set_coefficients()
        self.scores = np.zeros((len(data), data.n_actions))
        self.eval_scores = None if eval_data is None else np.zeros((len(eval_data), data.n_actions))
        self.round, self.stop_reason, self.ensemble_start = 0, None, None
        self.history: dict[str, list[float]] = {}
        self.train_metrics: dict[str, float] = {}
        self.eval_metrics: dict[str, float] = {}
        self.selection: Any = None
        self.best: tuple[int, Any] | None = None
        self.reward_start: dict[str, Any] | None = None  # what the reward-model start chose
        self._restored_selection: dict[str, Any] | None = None  # a checkpoint's held-out choice
        # the order the policy breaks equal scores in (fixed actions only: not slot logs)
        self.tie_order = constant_tie_order(data) if self.fixed_actions else None

    def _coefficients(self) -> np.ndarray:
        """The estimator's training coefficients on the (reward-shifted) training logs."""
        return training_coefficients(self.estimator, self.train)

    def _set_coefficients(self) -> None:
        """``coef`` (n,) or (n, K) from :meth:`_coefficients`, and what the round state takes."""
        self.coef = self._coefficients()
        # Gamma is centred once here, not every round (the value estimate is unchanged).
        self._state_coef, self._state_options = self.coef, {}
        if self.coef.ndim == 2 and self.objective.supports_action_coefficients:
            centred = centre_rows(self.coef, self.train.candidates)
            self._state_coef, self._state_options = centred, {"centred": True}

    def restore(self, checkpoint: Mapping[str, Any]) -> None:
        """Continue from ``checkpoint``: its progress, ensemble, best round, the start's
        choices and the held-out choice's state
        (:func:`opboost.core.fit.checkpoint.restored`)."""
        if self.holdout is not None and not self.holdout[1].refit:
            raise InvalidParameterError(
                "Booster.fit: resuming from a checkpoint is not supported with "
                "validation_fraction and refit=False (the best round's ensemble is kept, not "
                "checkpointed); use refit=True (the default) or a new checkpoint directory."
            )
        back = restored(
            checkpoint,
            fingerprint=self.fingerprint,
            learner=self.learner,
            has_eval=self.eval_data is not None,
        )
        progress = back.progress
        self.seed, self.round = progress.seed, progress.round
        self.scores, self.eval_scores = progress.scores, progress.eval_scores
        self.history, self.stop_reason = progress.history, progress.stop_reason
        self.ensemble_start, self.best = back.ensemble, back.best
        self.reward_start, self._restored_selection = back.reward_start, back.selection

    def begin(self) -> None:
        """Prepare the learner and F_0 (:meth:`start`), compute the first round state, and
        with held-out logs score round 0 there."""
        self.start()
        self.state = None if self.start_only else self._round_state()
        if self.holdout is not None:
            self.selection = RoundSelection(self, *self.holdout, self._restored_selection)

    def start(self) -> None:
        """Prepare the learner: continue a restored ensemble, or fit the warm start
        (:func:`opboost.core.fit.warm_start.fit_warm_start`) and take its F_0."""
        init = self.scores if self.round else None
        self.learner.prepare(
            self.data.contexts, self.data.n_actions, random_state=self.seed, init_scores=init
        )
        if self.ensemble_start is not None:
            self.learner.warm_start(self.ensemble_start)
        elif self.settings.warm_start is not None:
            start = fit_warm_start(
                self.settings,
                self.components,
                self.data,
                self.train,
                self.eval_data,
                scores=self.scores,
                eval_scores=self.eval_scores,
                add_round=self.add_round,
                start_only=self.start_only,
            )
            self.scores, self.eval_scores = start.scores, start.eval_scores
            self.reward_start = start.reward_start

    def _round_state(self) -> Any:
        return self.objective.round_state(
            self.scores, self.train, self._state_coef, **self._state_options
        )

    # --- the engine protocol ----------------------------------------------------------------

    def gradient_norm(self) -> float:
        return self.objective.gradient_norm_at(self.state)

    def fit_direction(self) -> Fitted:
        problem = self.objective.problem_at(self.state, self.learner.reduction)
        values = self._fit_round(problem)
        return Fitted(values, max(float(values.max()), -float(values.min())))

    def _fit_round(self, problem: BaseProblem) -> np.ndarray:
        """f_t on the training rows, (n, K): the learner's fit of ``problem``."""
        return check_f(self.learner.fit_round(problem), self.state.probs.shape, self.learner)

    def step_denominator(self, direction: Fitted) -> float:
        return self.objective.step_denominator_at(self.state, direction.values)

    def step(self, direction: Fitted, factor: float, l2: float) -> float:
        scaled = direction.values * factor if factor != 1.0 else direction.values
        if l2:
            return self.objective.step_at(self.state, scaled, l2=l2)
        return self.objective.step_at(self.state, scaled)  # third-party steps may lack l2

    def discard(self, direction: Fitted) -> None:
        self.learner.commit_round(0.0)

    def commit(self, direction: Fitted, weight: float, **metrics: float) -> None:
        """F <- F + weight f; recompute the round state once; record the metrics."""
        self.learner.commit_round(weight)
        add_scaled(self.scores, weight, direction.values)  # no (n, K) temporary
        self.round += 1
        self.state = None  # the old policy's arrays go before the new ones are made
        self.state = self._round_state()
        self.train_metrics = {
            **metrics,
            "train_objective": self.objective.risk_at(self.state),
            "train_value": self._train_value(),
        }
        self.eval_metrics = {}
        if self.eval_data is not None:
            inputs = self.inputs_of(self.eval_data)
            self.eval_scores = self.add_round(self.eval_scores, inputs, weight)
            self.eval_metrics = policy_values(
                self.eval_data, self.eval_scores, prefix="eval_", tie_order=self.tie_order
            )
        if self.selection is not None:
            held_out, stop = self.selection.track(self, weight)
            self.eval_metrics.update(held_out)
            self.stop_reason = self.stop_reason or stop
        for key, value in {**self.train_metrics, **self.eval_metrics}.items():
            self.history.setdefault(key, []).append(float(value))

    def snapshot(self) -> dict[str, Any]:
        """What a checkpoint stores, as of the last round
        (:func:`opboost.core.fit.checkpoint.snapshot`)."""
        progress = Progress(
            seed=self.seed,
            round=self.round,
            scores=self.scores,
            eval_scores=self.eval_scores,
            history=self.history,
            stop_reason=self.stop_reason,
        )
        policy = self.policy_of(self.learner.ensemble(), self.metadata(self.round))
        best = None
        if self.best is not None and self.best[0] < self.round:
            best = (self.best[0], self.policy_of(self.best[1], self.metadata(self.best[0])))
        selection = None if self.selection is None else self.selection.state()
        return snapshot(
            progress,
            self.fingerprint,
            policy,
            best,
            reward_start=self.reward_start,
            selection=selection,
        )

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of the data and the settings (:func:`opboost.core.fit.checkpoint.fingerprint`)."""
        return fingerprint(self.data, self.eval_data, self.components, self.settings, self.holdout)

    # --- helpers ----------------------------------------------------------------------------

    def add_round(self, current: np.ndarray, X: Any, weight: float) -> np.ndarray:
        """Scores on other rows X after the last committed round: current + weight f_t(X)."""
        f_values = self.learner.predict_round(X)
        if f_values is not None:
            current += weight * f_values
            return current
        return self.ensemble_scores(self.learner.ensemble(), X)

    def view_of(self, data: LoggedBandit) -> LoggedBandit:
        """Other logs (held out) as this fit sees its training logs: as they are here."""
        return data

    def inputs_of(self, data: LoggedBandit) -> Any:
        """What the learner and ensemble predict for logs seen through :meth:`view_of`: the
        contexts here."""
        return data.contexts

    def ensemble_scores(self, ensemble: Any, X: Any) -> np.ndarray:
        """Scores of ``ensemble`` on :meth:`inputs_of` some logs, in this fit's layout."""
        return ensemble.decision_function(X)

    def _train_value(self) -> float:
        """The estimator's value of the current softmax policy on the training logs; with
        per-action coefficients (1/n) sum_i <pi_i, Gamma_i>, without refitting a model."""
        if self.coef.ndim == 2:
            value = float(np.einsum("ij,ij->", self.state.probs, self.coef)) / len(self.data)
            return value - float(self.settings.reward_shift)  # Gamma is of shifted rewards
        return self.estimator.estimate_value(self.data, self.state.probs)

    def keep_best(self) -> None:
        """Remember the ensemble as of this round (a callback marked it the best)."""
        self.best = (self.round, self.learner.ensemble())

    def metadata(self, n_rounds: int) -> dict[str, Any]:
        learner = self.learner
        meta = policy_metadata(
            self.settings,
            self.objective,
            self.estimator,
            (learner.name, learner.get_params(deep=False)),
            n_rounds=n_rounds,
            n_actions=self.data.n_actions,
            n_features=self.data.n_features,
            stop_reason=self.stop_reason,
        )
        if self.reward_start is not None:
            meta["reward_start"] = self.reward_start
        record_tie_order(meta, self.tie_order)
        return meta

    #: Whether the actions are fixed ids (False in slot coordinates, where slot j is another
    #: item in every row): constant-action policies and reward models over actions need them.
    fixed_actions = True

    def policy_of(self, ensemble: Any, metadata: dict[str, Any]) -> Policy:
        """The Policy of ``ensemble`` fitted here, with ``metadata``."""
        return Policy(ensemble, self.data.n_actions, metadata)

    def policy(self) -> Policy:
        """The policy of every committed round, or of the rounds up to the marked best one."""
        if self.best is not None and self.best[0] < self.round:
            meta = dict(self.metadata(self.best[0]), best_round=self.best[0])
            return self.policy_of(self.best[1], meta)
        return self.policy_of(self.learner.ensemble(), self.metadata(self.round))

    def fitted_attributes(self) -> dict[str, Any]:
        """Extra fitted attributes for the Booster: ``best_round_`` when a best was marked,
        ``reward_start_`` when the learner started from its own reward model."""
        out: dict[str, Any] = {} if self.best is None else {"best_round_": self.best[0]}
        if self.reward_start is not None:
            out["reward_start_"] = self.reward_start
        return out
