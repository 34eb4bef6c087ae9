"""Label-free choice among policy learners: fit candidates on part of the logs, score each on
the held-out part with doubly robust estimates, keep the best and refit it on all the logs.

:class:`PolicyChoice` (kind "policy_learner", name "policy_choice") is the one call a user
makes when they do not know in advance which learner suits their logs: boosted policies with
IPS or DR coefficients, a LightGBM reward model acting greedily, or the best constant action.
Every candidate sees the same training part; the held-out part scores the greedy (argmax)
policy of each, row by row, with the DR estimator on the held-out logs
(:meth:`opboost.api.estimator.Estimator.on_logs`: its reward model cross-fitted on the
held-out rows once).

The rule is a sequence of paired challenges. The first candidate (the best constant action,
by default) is the incumbent; each later candidate replaces it only when its paired advantage
(the mean of the row-by-row DR differences) has a one-sided lower confidence bound above 0
(``confidence``, 0.9). Differences of two policies on the same rows vary far less than either
value, so the rule switches when the logs show a real gain and otherwise keeps the earlier,
simpler candidate; with the constant action first it is also the safety test (a learned policy
ships only when it beats the constant action). Measured against picking the highest estimate:
less regret on 8 of 11 data sets, 0.075 against 0.133 summed over them
(docs/benchmarks/results.md). The chosen candidate is refitted on all the logs; every
candidate's scores are kept in ``scores_`` and in the saved policy's metadata
(``metadata["choice"]``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone

from opboost.api.constraints import InstanceOf, Interval, Rule, Satisfies
from opboost.api.data.logged import LoggedBandit, check_data
from opboost.api.data.tabular_frames import action_ids_of, attach_feature_names, attach_schema
from opboost.api.estimator import normal_interval
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.memory_limit import check_memory, check_stacked_fit
from opboost.api.policy_learner import PolicyLearner
from opboost.api.serving.exploration import served_tie_order
from opboost.api.serving.masks import greedy, mask_scores, serving_mask
from opboost.api.validation import check_fitted, check_random_state
from opboost.core.booster_checks import split_holdout
from opboost.core.booster_inputs import check_X, feature_names_of, record_features

__all__ = ["CANDIDATES", "DEFAULT_CANDIDATES", "PolicyChoice"]

#: The name of the best-constant-action candidate (chosen on the logs by SNIPS).
CONSTANT = "constant"
#: Built-in candidates by name: Booster parameters, or a policy learner's registry name.
CANDIDATES: dict[str, Any] = {
    "bopl_s_ips": {"objective": "bopl_s", "estimator": "ips", "warm_start": "none"},
    "bopl_s_dr": {"objective": "bopl_s", "estimator": "dr", "warm_start": "none"},
    "bopl_s_rm": {"objective": "bopl_s", "estimator": "ips", "warm_start": "reward_model"},
    "bopl_s_dr_rm": {"objective": "bopl_s", "estimator": "dr", "warm_start": "reward_model"},
    "reward_regression": "reward_regression",
    "dr_reduction": "dr_reduction",
    CONSTANT: CONSTANT,
}
#: Fewest held-out rows: the DR reward model is cross-fitted on two folds of at least 2 rows.
MIN_HOLDOUT = 4
#: What ``PolicyChoice()`` compares, in challenge order.
DEFAULT_CANDIDATES: tuple[str, ...] = (CONSTANT, "bopl_s_ips", "bopl_s_dr", "reward_regression")


def _is_candidates(spec: Any) -> bool:
    """A non-empty mapping, or a non-empty sequence of names (not one string)."""
    if isinstance(spec, Mapping):
        return len(spec) > 0
    return (
        isinstance(spec, Sequence)
        and not isinstance(spec, str)
        and len(spec) > 0
        and all(isinstance(name, str) for name in spec)
    )


def _unknown_candidates(spec: Any) -> str | None:
    if spec is None or isinstance(spec, Mapping):
        return None
    unknown = [name for name in spec if name not in CANDIDATES]
    if not unknown:
        return None
    return (
        f": unknown candidate(s) {unknown}; the built-in names are {sorted(CANDIDATES)}, or "
        f"pass a dict name -> learner"
    )


def _booster_params_problem(params: Any) -> str | None:
    """The Booster's own check of ``booster_params`` (names and values)."""
    from opboost.core.booster import Booster

    try:
        Booster.check_params(params or {})
    except InvalidParameterError as exc:
        return f"sets a Booster parameter badly: {exc}"
    return None


class PolicyChoice(PolicyLearner):
    """Choose among policy learners on held-out logs, without labels; refit the best.

    Parameters
    ----------
    candidates
        None (``DEFAULT_CANDIDATES``), a sequence of built-in names
        (``CANDIDATES``), or a mapping name -> unfitted learner (an ``opboost.Booster``,
        a policy learner, or "constant"), in challenge order: the first is the incumbent.
        Learners are cloned; a ``random_state`` parameter is set to the choice's seed.
    validation_fraction
        fraction in (0, 1) of the logs held out for scoring (seeded).
    confidence
        in (0.5, 1), the one-sided confidence a challenger's paired advantage over
        the incumbent needs to replace it (default 0.9).
    refit
        True (default) refits the chosen candidate on all the logs; False keeps the fit
        on the training part.
    booster_params
        extra parameters for every Booster candidate built from a name (e.g.
        ``{"n_rounds": 50, "base_learner_params": {"num_threads": 1}}``).
    random_state
        seed of the split, the candidates and the DR reward model.

    Attributes
    ----------
    policy_
        the chosen, refitted policy: an ``opboost.api.policy.Policy`` or ``ConstantPolicy``
        when the candidate can export one, else the fitted learner.
    chosen_
        the chosen candidate's name.
    scores_
        name -> dict of value, low, high, fit_seconds.
    challenges_
        challenger -> dict of incumbent, paired advantage, its lower bound and
        whether it won.
    n_actions_
        K.
    """

    name: ClassVar[str] = "policy_choice"
    _parameter_constraints: ClassVar[dict] = {
        "candidates": [
            None,
            Satisfies(
                _is_candidates,
                f"a non-empty list of names from {sorted(CANDIDATES)} or a dict name -> learner",
            ),
            Rule(lambda p: _unknown_candidates(p["candidates"])),
        ],
        "validation_fraction": [
            Interval(Real, 0.0, 1.0, closed="neither", fix="use a fraction such as 0.2")
        ],
        "confidence": [
            Interval(Real, 0.5, 1.0, closed="neither", fix="use a one-sided confidence such as 0.9")
        ],
        "refit": ["boolean"],
        "booster_params": [
            InstanceOf(Mapping, "a dict"),
            None,
            Rule(lambda p: _booster_params_problem(p["booster_params"])),
        ],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        candidates: Sequence[str] | Mapping[str, Any] | None = None,
        validation_fraction: float = 0.2,
        confidence: float = 0.9,
        refit: bool = True,
        booster_params: Mapping[str, Any] | None = None,
        random_state: Any = None,
    ) -> None:
        self.candidates = candidates
        self.validation_fraction = validation_fraction
        self.confidence = confidence
        self.refit = refit
        self.booster_params = booster_params
        self.random_state = random_state

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        fast = {"n_rounds": 3, "base_learner_params": {"num_threads": 1}}
        return {"candidates": [CONSTANT, "bopl_s_ips"], "booster_params": fast}

    # --- composition -----------------------------------------------------------------------

    def _learners(self) -> dict[str, Any]:
        """Unfitted learners by name ("constant" stays a string)."""
        spec = DEFAULT_CANDIDATES if self.candidates is None else self.candidates
        if isinstance(spec, Mapping):
            return {str(k): v if isinstance(v, str) else clone(v) for k, v in spec.items()}
        return {name: self._builtin(name) for name in spec}

    def _builtin(self, name: str) -> Any:
        from opboost.core.booster import Booster
        from opboost.core.registry import make

        entry = CANDIDATES[name]
        if isinstance(entry, Mapping):
            return Booster(**{**entry, **dict(self.booster_params or {})})
        return entry if entry == CONSTANT else make("policy_learner", entry)

    # --- fitting ---------------------------------------------------------------------------

    def fit(
        self, data: LoggedBandit, *, feature_names: Sequence[str] | None = None
    ) -> PolicyChoice:
        """Fit every candidate on the training part, score it on the held-out part, refit the
        chosen one on all of ``data``; returns self. Sets ``n_features_in_``, and
        ``feature_names_in_`` from ``feature_names`` (or ``data.feature_names`` if the logs
        carry names): prediction then matches DataFrame columns by name."""
        from opboost.core.selection import action_probs, logs_scorer

        check_data(data, "data")
        if data.action_features is not None:
            # its candidates are scored, compared and served as fixed action indices
            raise InvalidParameterError(
                "PolicyChoice.fit: these logs give the items features (action_features), but "
                "PolicyChoice chooses among policies of fixed actions and serves no "
                "action_features=; fit Booster() on them, whose default is a cross-fitted reward "
                "model of the (context, item) pairs (docs/catalogue.md), or drop the item "
                "features to choose among fixed actions."
            )
        record_features(self, data.n_features, feature_names_of(data, feature_names))
        self.validate_params()
        learners = self._learners()
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        train, holdout = split_holdout(data, self.validation_fraction, seed)
        _check_memory(learners, data, len(holdout))
        if len(holdout) < MIN_HOLDOUT:
            raise InvalidParameterError(
                f"PolicyChoice.fit: validation_fraction={self.validation_fraction} holds out "
                f"{len(holdout)} of {len(data)} rows, but the doubly robust scores need at "
                f"least {MIN_HOLDOUT} (their reward model is cross-fitted on two folds). Use "
                f"more logs or a larger validation_fraction."
            )
        scorer = logs_scorer(holdout, "dr", seed)
        scores, fitted, values = {}, {}, {}
        for name, learner in learners.items():
            start = time.perf_counter()
            model = _fit(learner, train, seed)
            seconds = time.perf_counter() - start
            served = _scores(model, holdout.contexts, data.n_actions)
            if holdout.candidates is not None:  # as served: the best candidate of each row
                served = mask_scores(served, serving_mask(holdout.candidates, served.shape, ""))
            probs = action_probs(served, "argmax", served_tie_order(model, data.n_actions))
            values[name] = scorer.row_values(probs)
            interval = normal_interval(values[name], 0.95)
            scores[name] = {
                "value": interval.value,
                "low": interval.low,
                "high": interval.high,
                "fit_seconds": seconds,
            }
            fitted[name] = model
        chosen, challenges = None, {}
        for name in learners:
            if chosen is None:
                chosen = name
                continue
            # one-sided lower bound at ``confidence`` = two-sided interval at 2 confidence - 1
            paired = normal_interval(values[name] - values[chosen], 2 * self.confidence - 1)
            won = bool(paired.low > 0)
            challenges[name] = {
                "incumbent": chosen,
                "advantage": paired.value,
                "low": paired.low,
                "won": won,
            }
            if won:
                chosen = name
        model = _fit(learners[chosen], data, seed) if self.refit else fitted[chosen]
        self.chosen_, self.scores_, self.n_actions_ = chosen, scores, data.n_actions
        self.challenges_ = challenges
        self.policy_ = _as_policy(model, data.n_actions)
        record = {
            "chosen": chosen,
            "selection": "dr",
            "validation_fraction": self.validation_fraction,
            "n_holdout": len(holdout),
            "refit": bool(self.refit),
            "confidence": self.confidence,
            "scores": scores,
            "challenges": challenges,
        }
        metadata = getattr(self.policy_, "metadata", None)
        if isinstance(metadata, dict):
            metadata["choice"] = record
            attach_schema(self.policy_, data.schema)  # any candidate: encodings and action ids
            attach_feature_names(self.policy_, getattr(self, "feature_names_in_", None))
        return self

    # --- prediction ------------------------------------------------------------------------

    def decision_function(self, X: Any, *, candidates: Any = None) -> np.ndarray:
        """Scores of the chosen policy, shape (m, K); -inf outside ``candidates`` (an (m, K)
        boolean mask, dense or sparse) when given."""
        check_fitted(self, "policy_")
        scores = _scores(self.policy_, check_X(self, X, "decision_function"), self.n_actions_)
        if candidates is None:
            return scores
        owner = "PolicyChoice.decision_function"
        return mask_scores(scores, serving_mask(candidates, scores.shape, owner))

    def predict(self, X: Any, *, candidates: Any = None, return_ids: bool = False) -> np.ndarray:
        """The chosen policy's actions, shape (m,): with ``candidates``, each row's
        best-scoring candidate (a constant policy's action where it is one); ``return_ids``:
        the action ids of the logs' catalogue (``LoggedBandit.from_dataframe(...,
        actions=...)``) instead of indices."""
        check_fitted(self, "policy_")
        if candidates is not None:
            scores = self.decision_function(X, candidates=candidates)
            actions = greedy(scores, served_tie_order(self, scores.shape[1]))
        else:
            actions = np.asarray(self.policy_.predict(check_X(self, X, "predict")))
        if not return_ids:
            return actions
        metadata = getattr(self.policy_, "metadata", None)
        if not isinstance(metadata, dict):
            raise InvalidParameterError(
                f"PolicyChoice.predict: the chosen {type(self.policy_).__name__} records no "
                f"action ids (no metadata); call predict without return_ids."
            )
        return action_ids_of(metadata, actions)

    def save(self, path: Any) -> Any:
        """Save the chosen policy (with every candidate's scores in its metadata)."""
        check_fitted(self, "policy_")
        save = getattr(self.policy_, "save", None)
        if save is None:
            raise InvalidParameterError(
                f"PolicyChoice chose {self.chosen_!r}, a {type(self.policy_).__name__} that "
                f"cannot export a saveable policy; give it a to_policy() method or choose "
                f"among savable candidates."
            )
        return save(path)


def _check_memory(learners: Mapping[str, Any], data: LoggedBandit, n_holdout: int) -> None:
    """Refuse up front what cannot fit in memory: a Booster's refit on all the logs
    (:func:`~opboost.api.numerics.memory_limit.check_stacked_fit`), a candidate's own
    ``check_fit_memory(data, owner)``, and the held-out scores (the doubly robust reward
    model's, one candidate's and its greedy probabilities: three (n_holdout, K) float64)."""
    from opboost.core.booster import Booster

    owner = "PolicyChoice.fit"
    if any(isinstance(learner, Booster) for learner in learners.values()):
        check_stacked_fit(data, owner)
    for learner in learners.values():
        check = getattr(learner, "check_fit_memory", None)
        if callable(check):
            check(data, owner)
    k = data.n_actions
    what = f"the held-out scores, 3 x {n_holdout:,} rows x {k:,} actions (float64)"
    fix = "Use fewer actions, or a smaller validation_fraction."
    check_memory(3 * 8 * n_holdout * k, owner, what, fix)


def _fit(learner: Any, data: LoggedBandit, seed: int) -> Any:
    """A fitted copy of ``learner`` (the best constant action for "constant")."""
    from opboost.api.policy import ConstantPolicy
    from opboost.api.serving.tie_order import constant_action_values

    if isinstance(learner, str):
        action = int(np.nanargmax(constant_action_values(data)))
        return ConstantPolicy(action, data.n_actions)
    model = clone(learner)
    if "random_state" in model.get_params(deep=False):
        model.set_params(random_state=seed)
    return model.fit(data)


def _scores(model: Any, X: Any, n_actions: int) -> np.ndarray:
    scores = np.asarray(model.decision_function(X), dtype=np.float64)
    if scores.shape != (X.shape[0], n_actions):
        raise InvalidParameterError(
            f"PolicyChoice: candidate {type(model).__name__} returned scores of shape "
            f"{scores.shape}; expected {(X.shape[0], n_actions)}."
        )
    return scores


def _as_policy(model: Any, n_actions: int) -> Any:
    """The saveable policy of a fitted candidate: a Booster's ``policy_``, a learner's
    ``to_policy()``, a ConstantPolicy as it is; else the fitted learner itself."""
    policy = getattr(model, "policy_", None)
    if policy is not None:
        return policy
    to_policy = getattr(model, "to_policy", None)
    return to_policy() if to_policy is not None else model
