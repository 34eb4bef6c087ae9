"""The offline boosting loop (London et al. 2023, Algorithms 1-4).

Each round the objective turns the ensemble scores F and the estimator's coefficients c into
a base-learning problem, the base learner fits f_t, the objective gives the closed-form step
alpha_t and F <- F + alpha_t f_t. The booster knows only the plugin interfaces: the maths is
in ``opboost.objectives``, the models in ``opboost.learners``, the extensions in
``opboost.callbacks``.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from opboost._validation import check_fitted, check_random_state, check_scalar
from opboost.callbacks import Callback, RoundEnv, _HistoryView
from opboost.data import LoggedBandit
from opboost.exceptions import InvalidParameterError
from opboost.objectives.base import softmax
from opboost.policy import Policy, _json_safe

__all__ = ["TOLERANCE", "Booster"]

#: Early stop when |alpha|, the gradient norm or max|f| falls below this (paper, appendix G).
TOLERANCE = 1e-10
_KINDS = {"objective": "objective", "estimator": "estimator", "base_learner": "base_learner"}


class Booster(BaseEstimator):
    """Boosted off-policy learning of a softmax ensemble policy from logged bandit feedback.

    Parameters
    ----------
    objective : "bopl_s" (default), "bopl", or an Objective instance.
    estimator : training coefficients c_i; "ips" (default), "truncated_ips" or an instance.
    base_learner : "lightgbm_tree" (default), "sklearn_tree", ... or a BaseLearner instance.
    n_rounds : T >= 1, the maximum number of boosting rounds.
    reward_shift : delta added to every reward before the coefficients (r <- r + delta).
    base_learner_params, estimator_params, objective_params : parameters for components
        given by name (or set on a clone of an instance).
    scale : Z > 0 rescales each f_t so (1/n) sum |c_i| sigma_i ||f_t(x_i)||^2 = Z before the
        step (Theorem 1; appendix D.1); None keeps the learner's scale. F is unchanged.
    random_state : seed (int, Generator or None) for the base learner.

    Fitted attributes: ``policy_`` (:class:`opboost.policy.Policy`), ``n_rounds_``,
    ``history_`` (dict of (n_rounds_,) arrays), ``stop_reason_``.
    """

    def __init__(
        self,
        *,
        objective: Any = "bopl_s",
        estimator: Any = "ips",
        base_learner: Any = "lightgbm_tree",
        n_rounds: int = 100,
        reward_shift: float = 0.0,
        base_learner_params: Mapping | None = None,
        estimator_params: Mapping | None = None,
        objective_params: Mapping | None = None,
        scale: float | None = None,
        random_state: Any = None,
    ) -> None:
        self.objective = objective
        self.estimator = estimator
        self.base_learner = base_learner
        self.n_rounds = n_rounds
        self.reward_shift = reward_shift
        self.base_learner_params = base_learner_params
        self.estimator_params = estimator_params
        self.objective_params = objective_params
        self.scale = scale
        self.random_state = random_state

    # --- validation and composition -------------------------------------------------------

    def _check_params(self) -> None:
        check_scalar(
            self.n_rounds,
            "n_rounds",
            "Booster",
            kind=numbers.Integral,
            low=1,
            fix="use a positive number of boosting rounds such as 100",
        )
        check_scalar(
            self.reward_shift,
            "reward_shift",
            "Booster",
            fix="use a finite shift such as -0.5 (0.0 disables translation)",
        )
        if not math.isfinite(self.reward_shift):
            raise InvalidParameterError(
                f"The 'reward_shift' parameter of Booster must be finite. Got "
                f"{self.reward_shift!r} instead; use e.g. -0.5 (0.0 disables translation)."
            )
        check_scalar(
            self.scale,
            "scale",
            "Booster",
            low=0.0,
            low_inclusive=False,
            allow_none=True,
            fix="use None to keep the base learner's scale",
        )
        for name in ("objective_params", "estimator_params", "base_learner_params"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise InvalidParameterError(
                    f"The {name!r} parameter of Booster must be a dict or None. Got "
                    f"{value!r} instead."
                )

    def _resolve(self, param: str) -> Any:
        from opboost.registry import get_registry

        spec, kind = getattr(self, param), _KINDS[param]
        params = dict(getattr(self, f"{param}_params") or {})
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
                f"The {param!r} parameter of Booster must be a registered {kind} name or a "
                f"{kind} instance. Got {spec!r} (kind {getattr(spec, 'kind', None)!r}) instead."
            )
        component = clone(spec)
        return component.set_params(**params) if params else component

    def _components(self):
        objective = self._resolve("objective")
        estimator = self._resolve("estimator")
        learner = self._resolve("base_learner")
        if not getattr(estimator, "supports_training", False):
            raise InvalidParameterError(
                f"The 'estimator' parameter of Booster: {estimator.name!r} gives no training "
                f"coefficients, so it cannot drive boosting; use estimator='ips' or "
                f"'truncated_ips' for training and {estimator.name!r} to evaluate."
            )
        if learner.reduction not in objective.reductions:
            raise InvalidParameterError(
                f"The base learner {learner.name!r} solves the {learner.reduction} reduction, "
                f"which objective {objective.name!r} does not support; use a regression base "
                f"learner such as 'lightgbm_tree'."
            )
        return objective, estimator, learner

    # --- fitting --------------------------------------------------------------------------

    def fit(
        self,
        data: LoggedBandit,
        *,
        eval_data: LoggedBandit | None = None,
        callbacks: Sequence[Callback] = (),
    ) -> Booster:
        """Boost for up to ``n_rounds`` rounds on ``data``; returns self.

        ``eval_data`` adds per-round eval metrics (IPS and SNIPS of the softmax and argmax
        policies) to ``history_``. ``callbacks`` are :class:`opboost.callbacks.Callback`
        objects, run in ``order``; a :class:`~opboost.callbacks.Checkpoint` with
        ``resume=True`` resumes from its directory's last checkpoint.
        """
        _check_data(data, "data")
        if eval_data is not None:
            _check_data(eval_data, "eval_data")
            if (eval_data.n_actions, eval_data.n_features) != (data.n_actions, data.n_features):
                raise InvalidParameterError(
                    f"Booster.fit: eval_data has {eval_data.n_actions} actions and "
                    f"{eval_data.n_features} features but data has {data.n_actions} and "
                    f"{data.n_features}; evaluate on rows of the same problem."
                )
        self._check_params()
        callbacks = _check_callbacks(callbacks)
        objective, estimator, learner = self._components()
        fit = _Fit(self, data, eval_data, objective, estimator, learner)
        for cb in callbacks:
            restored = getattr(cb, "load_checkpoint", lambda: None)()
            if restored is not None:
                fit.restore(restored)
                break
        fit.begin()
        for cb in callbacks:
            cb.on_fit_start(fit.env(alpha=float("nan")))
        while fit.stop_reason is None:
            if fit.round >= self.n_rounds:
                fit.stop_reason = "n_rounds reached"
                break
            alpha = self._run_round(fit)
            if alpha is None:
                break
            env = fit.env(alpha=alpha)
            for cb in callbacks:
                cb.on_round_end(env)
            if env._stop and fit.stop_reason is None:
                fit.stop_reason = env._stop[0]
        self.policy_ = fit.policy()
        self.n_rounds_ = fit.round
        self.history_ = {k: np.asarray(v, dtype=np.float64) for k, v in fit.history.items()}
        self.stop_reason_ = fit.stop_reason
        end = fit.env(alpha=self.history_["alpha"][-1] if self.n_rounds_ else float("nan"))
        for cb in callbacks:
            cb.on_fit_end(end)
        return self

    def _run_round(self, fit: _Fit) -> float | None:
        """One boosting round; returns alpha, or None after recording why it stopped."""
        objective, state, t = fit.objective, fit.state, fit.round + 1
        gradient = objective.gradient_at(state)
        grad_norm = math.sqrt(float(np.einsum("ij,ij->", gradient, gradient)))
        if grad_norm < TOLERANCE:
            fit.stop_reason = f"gradient norm < {TOLERANCE:g} at round {t}"
            return None
        f_values = fit.learner.fit_round(objective.problem_at(state, fit.learner.reduction))
        f_values = _check_f(f_values, state.g.shape, fit.learner)
        if float(np.max(np.abs(f_values))) < TOLERANCE:
            fit.learner.commit_round(0.0)
            fit.stop_reason = f"max|f| < {TOLERANCE:g} at round {t}"
            return None
        factor = 1.0
        if self.scale is not None:
            current = objective.step_denominator_at(state, f_values) / state.n
            factor = math.sqrt(self.scale / current) if current > 0 else 1.0
        alpha = objective.step_at(state, f_values * factor if factor != 1.0 else f_values)
        if not abs(alpha) >= TOLERANCE:
            fit.learner.commit_round(0.0)
            fit.stop_reason = f"|alpha| < {TOLERANCE:g} at round {t}"
            return None
        weight = alpha * factor
        fit.learner.commit_round(weight)
        fit.advance(weight, f_values, alpha=alpha, gradient_norm=grad_norm)
        return alpha

    # --- prediction -----------------------------------------------------------------------

    def decision_function(self, X: Any) -> np.ndarray:
        """Ensemble scores F(X), shape (m, K)."""
        check_fitted(self, "policy_")
        return self.policy_.decision_function(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax policy, shape (m, K)."""
        check_fitted(self, "policy_")
        return self.policy_.predict_proba(X)

    def predict(self, X: Any) -> np.ndarray:
        """Argmax action per row, shape (m,)."""
        check_fitted(self, "policy_")
        return self.policy_.predict(X)

    def save(self, path: Any) -> Any:
        """Save the fitted policy (see :meth:`opboost.policy.Policy.save`)."""
        check_fitted(self, "policy_")
        return self.policy_.save(path)


class _Fit:
    """The state of one fit: scores, coefficients, history; what a checkpoint stores."""

    def __init__(self, booster, data, eval_data, objective, estimator, learner):
        self.booster, self.data, self.eval_data = booster, data, eval_data
        self.objective, self.estimator, self.learner = objective, estimator, learner
        shift = float(booster.reward_shift)
        self.train = data if shift == 0.0 else data.with_rewards(data.rewards + shift)
        coef = np.asarray(estimator.coefficients(self.train), dtype=np.float64)
        if coef.shape != (len(data),) or not np.all(np.isfinite(coef)):
            raise InvalidParameterError(
                f"Estimator {estimator.name!r} returned invalid training coefficients (shape "
                f"{coef.shape}, finite {bool(np.all(np.isfinite(coef)))}); expected "
                f"({len(data)},) finite values."
            )
        self.coef = coef
        self.seed = int(check_random_state(booster.random_state).integers(2**31 - 1))
        self.scores = np.zeros((len(data), data.n_actions))
        self.eval_scores = None if eval_data is None else np.zeros((len(eval_data), data.n_actions))
        self.round, self.stop_reason, self.ensemble_start = 0, None, None
        self.history: dict[str, list[float]] = {}
        self.fingerprint = self._fingerprint()

    def _fingerprint(self) -> str:
        """Hash of the data and every setting that changes the trajectory (not n_rounds)."""
        h = hashlib.sha256()
        for d in (self.data, self.eval_data):
            if d is None:
                h.update(b"none")
                continue
            x = d.contexts
            for arr in (x.data, x.indices, x.indptr) if d.is_sparse else (x,):
                h.update(np.ascontiguousarray(arr).tobytes())
            for arr in (d.actions, d.propensities, d.rewards):
                h.update(np.ascontiguousarray(arr).tobytes())
        b = self.booster
        spec = {
            p: (type(c).__name__, c.get_params(deep=False))
            for p, c in (
                ("objective", self.objective),
                ("estimator", self.estimator),
                ("base_learner", self.learner),
            )
        }
        spec.update(reward_shift=b.reward_shift, scale=b.scale)
        h.update(json.dumps(_json_safe(spec), sort_keys=True).encode())
        return h.hexdigest()

    def restore(self, ckpt: Mapping[str, Any]) -> None:
        """Continue from a checkpoint written by :class:`opboost.callbacks.Checkpoint`."""
        if ckpt["fingerprint"] != self.fingerprint:
            raise InvalidParameterError(
                f"The checkpoint in {ckpt['directory']} was written by a fit with other data "
                f"or settings; delete that directory or checkpoint to a new one."
            )
        if not hasattr(self.learner, "warm_start"):
            raise InvalidParameterError(
                f"The base learner {self.learner.name!r} cannot resume from a checkpoint (it "
                f"has no warm_start method); delete {ckpt['directory']} to start afresh."
            )
        self.seed, self.round = int(ckpt["seed"]), int(ckpt["round"])
        self.scores = np.array(ckpt["scores"], dtype=np.float64)
        if self.eval_data is not None:
            self.eval_scores = np.array(ckpt["eval_scores"], dtype=np.float64)
        self.history = {k: list(v) for k, v in ckpt["history"].items()}
        stop = ckpt.get("stop_reason")
        self.stop_reason = stop if stop and stop != "n_rounds reached" else None
        self.ensemble_start = ckpt["ensemble"]

    def begin(self) -> None:
        init = self.scores if self.round else None
        self.learner.prepare(
            self.data.contexts, self.data.n_actions, random_state=self.seed, init_scores=init
        )
        if self.ensemble_start is not None:
            self.learner.warm_start(self.ensemble_start)
        self.state = self.objective.round_state(self.scores, self.train, self.coef)

    def advance(self, weight: float, f_values: np.ndarray, **metrics: float) -> None:
        """F <- F + weight f; recompute the round state once; record the metrics."""
        self.scores += weight * f_values
        self.round += 1
        self.state = self.objective.round_state(self.scores, self.train, self.coef)
        self.train_metrics = {
            **metrics,
            "train_objective": self.objective.risk_at(self.state),
            "train_value": self.estimator.estimate_value(self.data, self.state.probs),
        }
        self.eval_metrics = {} if self.eval_data is None else self._evaluate(weight)
        for key, value in {**self.train_metrics, **self.eval_metrics}.items():
            self.history.setdefault(key, []).append(float(value))

    def _evaluate(self, weight: float) -> dict[str, float]:
        predict_round = getattr(self.learner, "predict_round", None)
        X = self.eval_data.contexts
        if predict_round is not None:
            self.eval_scores += weight * predict_round(X)
        else:
            self.eval_scores = self.learner.ensemble().decision_function(X)
        return policy_values(self.eval_data, self.eval_scores, prefix="eval_")

    def env(self, *, alpha: float) -> RoundEnv:
        return RoundEnv(
            booster=self.booster,
            round=self.round,
            n_rounds=self.booster.n_rounds,
            alpha=float(alpha),
            train_metrics=dict(getattr(self, "train_metrics", {})),
            eval_metrics=dict(getattr(self, "eval_metrics", {})),
            history=_HistoryView(self.history),
            snapshot=self.snapshot,
        )

    def policy(self) -> Policy:
        learner, b = self.learner, self.booster
        meta = {
            "objective": self.objective.name,
            "estimator": self.estimator.name,
            "base_learner": learner.name,
            "base_learner_params": learner.get_params(deep=False),
            "opboost_version": _version(),
            "n_rounds": self.round,
            "n_actions": self.data.n_actions,
            "n_features": self.data.n_features,
            "reward_shift": b.reward_shift,
            "scale": b.scale,
            "stop_reason": self.stop_reason,
        }
        return Policy(learner.ensemble(), self.data.n_actions, meta)

    def snapshot(self) -> dict[str, Any]:
        """Everything :class:`~opboost.callbacks.Checkpoint` writes, as of the last round."""
        return {
            "round": self.round,
            "seed": self.seed,
            "fingerprint": self.fingerprint,
            "stop_reason": self.stop_reason,
            "history": self.history,
            "policy": self.policy(),
            "scores": self.scores,
            "eval_scores": self.eval_scores,
        }


def policy_values(data: LoggedBandit, scores: np.ndarray, *, prefix: str) -> dict[str, float]:
    """IPS and SNIPS values of the softmax and argmax policies of ``scores`` (n, K)."""
    rows = np.arange(len(data))
    ratio_soft = softmax(scores)[rows, data.actions] / data.propensities
    ratio_max = (np.argmax(scores, axis=1) == data.actions) / data.propensities
    out = {}
    for kind, ratio in (("softmax", ratio_soft), ("argmax", ratio_max)):
        total = float(np.sum(ratio))
        out[f"{prefix}ips_{kind}"] = float(np.dot(ratio, data.rewards)) / len(data)
        out[f"{prefix}snips_{kind}"] = float(np.dot(ratio, data.rewards)) / total if total else 0.0
    return out


def _check_data(data: Any, name: str) -> None:
    if not isinstance(data, LoggedBandit):
        raise InvalidParameterError(
            f"Booster.fit: {name} must be an opboost.LoggedBandit. Got {type(data).__name__}; "
            f"build one with LoggedBandit(contexts=..., actions=..., propensities=..., "
            f"rewards=..., n_actions=...)."
        )


def _check_callbacks(callbacks: Any) -> list[Callback]:
    callbacks = list(callbacks)
    for cb in callbacks:
        if not all(
            callable(getattr(cb, m, None)) for m in ("on_fit_start", "on_round_end", "on_fit_end")
        ):
            raise InvalidParameterError(
                f"Booster.fit: callbacks must be opboost.callbacks.Callback objects. Got "
                f"{cb!r}; subclass Callback and override on_round_end."
            )
    return sorted(callbacks, key=lambda cb: getattr(cb, "order", 50))


def _check_f(f_values: Any, shape: tuple[int, int], learner: Any) -> np.ndarray:
    f_values = np.asarray(f_values, dtype=np.float64)
    if f_values.shape != shape or not np.all(np.isfinite(f_values)):
        raise InvalidParameterError(
            f"Base learner {learner.name!r} returned predictions of shape {f_values.shape} "
            f"(finite: {bool(np.all(np.isfinite(f_values)))}); fit_round must return finite "
            f"values of shape {shape}."
        )
    return f_values


def _version() -> str:
    from opboost import __version__

    return __version__
