"""Off-policy scorers for scikit-learn's model-selection tools.

[`off_policy_scorer`][opboost.core.metrics.off_policy_scorer] returns a callable ``scorer(estimator,
X, y)`` that estimates, on held-out logged feedback, the value of the policy a fitted estimator
plays. It is what ``GridSearchCV(..., scoring=off_policy_scorer("snips"))`` or ``cross_val_score``
expects: the contexts ``X`` and the feedback ``y`` (an (n, 3) array [action, propensity, reward] or
a DataFrame / record array with those columns, the same ``y`` as ``Booster.fit(X, y)``) are the
rows the splitter held out, so every candidate is scored without labels. Higher is better.

    from sklearn.model_selection import GridSearchCV
    from opboost import Booster
    from opboost.core.metrics import off_policy_scorer, to_xy

    X, y = to_xy(logged)  # contexts and [action, propensity, reward]
    search = GridSearchCV(Booster(), {"n_rounds": [10, 100]},
                          scoring=off_policy_scorer("snips"), cv=3).fit(X, y)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError

__all__ = ["OffPolicyScorer", "off_policy_scorer", "to_xy"]


def to_xy(data: LoggedBandit) -> tuple[Any, np.ndarray]:
    """(contexts, y) of a LoggedBandit for the (X, y) route: y is the (n, 3) float array
    [action, propensity, reward]."""
    y = np.column_stack([data.actions, data.propensities, data.rewards]).astype(np.float64)
    return data.contexts, y


class OffPolicyScorer:
    """``scorer(estimator, X, y)``: the ``estimator_name`` estimate of the fitted
    ``estimator``'s ``policy`` ("argmax": its ``predict``; "softmax": its ``predict_proba``,
    the softmax of the decision scores) on the logs (X, y). ``X`` may also be a LoggedBandit
    (then ``y`` is None). NaN when the estimate is undefined (SNIPS when the policy never
    plays a logged action). See [`off_policy_scorer`][opboost.core.metrics.off_policy_scorer]."""

    def __init__(self, estimator_name: str = "snips", policy: str = "argmax") -> None:
        from opboost.api.validation import check_choice
        from opboost.core.registry import get_registry
        from opboost.core.selection import SELECTION_POLICIES

        known = get_registry().names("estimator")
        if estimator_name not in known:
            raise InvalidParameterError(
                f"off_policy_scorer: estimator_name must be a registered estimator name, one "
                f"of {', '.join(sorted(known))}. Got {estimator_name!r} instead."
            )
        check_choice(policy, "policy", "off_policy_scorer", SELECTION_POLICIES)
        self.estimator_name = estimator_name
        self.policy = policy

    def __repr__(self) -> str:
        return f"off_policy_scorer({self.estimator_name!r}, policy={self.policy!r})"

    def __call__(self, estimator: Any, X: Any, y: Any = None) -> float:
        from opboost.core.booster_inputs import as_logged_bandit
        from opboost.core.selection import action_probs, logs_scorer

        serving = _serving(estimator, X)
        scores = np.asarray(estimator.decision_function(_contexts(X), **serving), dtype=float)
        if scores.ndim != 2:
            raise InvalidParameterError(
                f"off_policy_scorer: {type(estimator).__name__}.decision_function returned "
                f"shape {scores.shape}; expected (n, n_actions)."
            )
        if isinstance(X, LoggedBandit):
            data = X
        else:
            data = as_logged_bandit(X, y, scores.shape[1], owner="off_policy_scorer")
        if data.n_actions != scores.shape[1]:
            raise InvalidParameterError(
                f"off_policy_scorer: the logs have {data.n_actions} actions but the policy "
                f"scores {scores.shape[1]}."
            )
        seed = getattr(estimator, "random_state", None)
        seed = seed if isinstance(seed, int | np.integer) else 0
        scorer = logs_scorer(data, self.estimator_name, seed)
        return float(scorer.interval(action_probs(scores, self.policy)).value)


def off_policy_scorer(estimator_name: str = "snips", policy: str = "argmax") -> OffPolicyScorer:
    """A scikit-learn scorer ``scorer(estimator, X, y) -> float`` (higher is better): the
    off-policy estimate ``estimator_name`` ("snips", "ips", "dr", "dm" or any registered
    estimator) of the value of the fitted estimator's ``policy`` ("argmax", what ``predict``
    plays, or "softmax") on held-out logs (X, y), with ``y`` as in ``Booster.fit(X, y)``.
    Usable as ``scoring=`` of ``GridSearchCV``, ``RandomizedSearchCV`` and ``cross_val_score``
    and with a ``Pipeline`` ending in a Booster. "dr"/"dm" fit their reward model on the
    held-out rows (cross-fitted), seeded by the estimator's integer ``random_state``."""
    return OffPolicyScorer(estimator_name, policy)


def _serving(estimator: Any, X: Any) -> dict[str, Any]:
    """Logs' candidates (and item features, for a policy fitted on them) to score with."""
    if not isinstance(X, LoggedBandit):
        return {}
    out: dict[str, Any] = {}
    if X.candidates is not None:
        out["candidates"] = X.candidates
    schema = getattr(getattr(estimator, "policy_", None), "action_schema", None)
    if X.action_features is not None and schema is not None and schema.kind == "features":
        out["action_features"] = X.action_features
    return out


def _contexts(X: Any) -> Any:
    return X.contexts if isinstance(X, LoggedBandit) else X
