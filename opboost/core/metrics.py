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
from opboost.api.serving.exploration import served_tie_order

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
    plays a logged action). Logged action ids are matched by id to the catalogue of the
    policy's fit (``actions=``): any order of the ids, and logs in which some action was
    never logged, score the same policy. See
    [`off_policy_scorer`][opboost.core.metrics.off_policy_scorer]."""

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

        ids = _catalogue(estimator)
        if isinstance(X, LoggedBandit) and ids is not None:
            X = _in_catalogue(X, ids)
        serving = _serving(estimator, X)
        scores = np.asarray(estimator.decision_function(_contexts(X), **serving), dtype=float)
        if scores.ndim != 2:
            raise InvalidParameterError(
                f"off_policy_scorer: {type(estimator).__name__}.decision_function returned "
                f"shape {scores.shape}; expected (n, n_actions)."
            )
        if isinstance(X, LoggedBandit):
            data = X
        elif ids is None or _indices(y, ids, len(scores)):
            data = as_logged_bandit(X, y, scores.shape[1], owner="off_policy_scorer")
        else:  # the logged ids mapped to the policy's action indices by id
            data = as_logged_bandit(X, y, None, owner="off_policy_scorer", actions=ids)
        if data.n_actions != scores.shape[1]:
            raise InvalidParameterError(
                f"off_policy_scorer: the logs have {data.n_actions} actions but the policy "
                f"scores {scores.shape[1]}."
            )
        seed = getattr(estimator, "random_state", None)
        seed = seed if isinstance(seed, int | np.integer) else 0
        scorer = logs_scorer(data, self.estimator_name, seed)
        tie_order = served_tie_order(estimator, scores.shape[1])  # as its predict breaks ties
        return float(scorer.interval(action_probs(scores, self.policy, tie_order)).value)


def off_policy_scorer(estimator_name: str = "snips", policy: str = "argmax") -> OffPolicyScorer:
    """A scikit-learn scorer ``scorer(estimator, X, y) -> float`` (higher is better): the
    off-policy estimate ``estimator_name`` ("snips", "ips", "dr", "dm" or any registered
    estimator) of the value of the fitted estimator's ``policy`` ("argmax", what ``predict``
    plays, or "softmax") on held-out logs (X, y), with ``y`` as in ``Booster.fit(X, y)``.
    Usable as ``scoring=`` of ``GridSearchCV``, ``RandomizedSearchCV`` and ``cross_val_score``
    and with a ``Pipeline`` ending in a Booster. "dr"/"dm" fit their reward model on the
    held-out rows (cross-fitted), seeded by the estimator's integer ``random_state``."""
    return OffPolicyScorer(estimator_name, policy)


def _catalogue(estimator: Any) -> tuple[Any, ...] | None:
    """The action ids of the fitted policy of ``estimator`` (a Booster, a Pipeline ending in
    one, a PolicyChoice or a Policy), or None when it was fitted without ids."""
    from opboost.api.data.tabular_frames import catalogue_of

    final = estimator[-1] if hasattr(estimator, "steps") else estimator
    metadata = getattr(getattr(final, "policy_", final), "metadata", None)
    return catalogue_of(metadata) if isinstance(metadata, dict) else None


def _indices(y: Any, ids: tuple[Any, ...], n_rows: int) -> bool:
    """Whether the logged actions of ``y`` are action indices, not ids: numbers, against a
    catalogue of ids that are not all numbers (``to_xy`` of logs with string ids)."""
    from numbers import Real

    from opboost.core.booster_inputs import split_y

    actions = split_y(y, n_rows, "off_policy_scorer")[0]
    return actions.dtype.kind in "iuf" and not all(isinstance(i, Real) for i in ids)


def _in_catalogue(data: LoggedBandit, ids: tuple[Any, ...]) -> LoggedBandit:
    """``data`` with its actions (and per-action columns) re-indexed by id into the policy's
    catalogue ``ids``: logs built with another order of the ids, or with fewer of them (a
    fold that never logged an action), score the same policy."""
    import dataclasses

    import scipy.sparse as sp

    from opboost.api.data.tabular import TabularSchema

    own = None if data.schema is None else data.schema.action_ids
    if own is None or tuple(own) == tuple(ids):
        return data
    index = {i: a for a, i in enumerate(ids)}
    unknown = [i for i in own if i not in index]
    if unknown:
        raise InvalidParameterError(
            f"off_policy_scorer: the logs' action id(s) {unknown[:5]} are not in the policy's "
            f"catalogue of {len(ids)} ids; score on logs of the actions it was fitted on."
        )
    to_policy = np.array([index[i] for i in own], dtype=np.int64)  # logs' index -> policy's
    n, k = len(data), len(ids)
    probs, mask, features = data.logging_probs, data.candidates, data.action_features
    if probs is not None:
        probs = np.zeros((n, k))
        probs[:, to_policy] = data.logging_probs
    if mask is not None:
        csr = sp.csr_matrix(mask)
        mask = sp.csr_matrix((csr.data, to_policy[csr.indices], csr.indptr), shape=(n, k))
        mask = mask if sp.issparse(data.candidates) else mask.toarray()
    if features is not None:
        if len(own) != k:
            raise InvalidParameterError(
                f"off_policy_scorer: the logs' action_features describe {len(own)} of the "
                f"policy's {k} actions; give features for every action of its catalogue."
            )
        features = np.asarray(features)[np.argsort(to_policy)]
    schema = TabularSchema(data.schema.columns, data.schema.categories, tuple(ids))
    return dataclasses.replace(
        data,
        actions=to_policy[data.actions],
        n_actions=k,
        logging_probs=probs,
        candidates=mask,
        action_features=features,
        schema=schema,
    )


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
