"""Component contract checks: construction, parameters, cloning, determinism, shapes, save/load.

Per kind: estimators (values, interval, coefficients), base learners (one round, save/load),
online bandit learners (protocol over a short stream, seeded determinism, copies), policy
learners (fit and predict; candidate sets honoured) and data sets (bundled ones load).
:func:`all_checks` picks the ones that apply to a class.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from opboost.api.component import KINDS, Component, clone

__all__ = ["all_checks", "parametrize_with_checks"]

Check = Callable[[type[Component]], None]


def _instance(cls: type[Component], **overrides: Any) -> Component:
    return cls(**{**cls._unit_test_params(), **overrides})


def _small_logged(n: int = 60, d: int = 4, k: int = 3, seed: int = 0):
    from opboost.api.data.logged import LoggedBandit

    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    actions = (rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1).clip(0, k - 1)
    return LoggedBandit(
        contexts=rng.normal(size=(n, d)),
        actions=actions,
        propensities=probs[np.arange(n), actions],
        rewards=rng.random(n),
        n_actions=k,
        logging_probs=probs,
    )


# --- every kind ----------------------------------------------------------------------------


def check_name_and_kind(cls: type[Component]) -> None:
    """``name`` is snake_case and ``kind`` is a known plugin kind."""
    assert re.match(r"^[a-z][a-z0-9_]*$", cls.name or ""), f"{cls.__name__}.name={cls.name!r}"
    assert cls.kind in KINDS, f"{cls.__name__}.kind={cls.kind!r} not in {KINDS}"


def check_init_stores_params(cls: type[Component]) -> None:
    """``__init__`` stores each parameter unchanged under its own name (no validation there)."""
    params = cls._unit_test_params()
    obj = cls(**params)
    got = obj.get_params(deep=False)
    for key, value in params.items():
        assert got[key] is value, f"{cls.__name__}.__init__ altered parameter {key!r}"
    sentinel = object()
    for key in got:
        try:
            stored = cls(**{**params, key: sentinel}).get_params(deep=False)[key]
        except Exception as exc:  # validation or work in __init__
            raise AssertionError(
                f"{cls.__name__}.__init__ must only store parameters; setting {key!r} to an "
                f"arbitrary object raised {type(exc).__name__}: {exc}"
            ) from exc
        assert stored is sentinel, f"{cls.__name__}.__init__ altered parameter {key!r}"


def check_params_round_trip(cls: type[Component]) -> None:
    """``cls(**obj.get_params())`` rebuilds an object with the same parameters."""
    obj = _instance(cls)
    rebuilt = cls(**obj.get_params(deep=False))
    assert rebuilt.get_params(deep=False) == obj.get_params(deep=False)


def _same_params(a: Any, b: Any) -> bool:
    """Equal parameters, comparing nested estimators by their own parameters (clone copies them)."""
    if hasattr(a, "get_params") and hasattr(b, "get_params"):
        return type(a) is type(b) and _same_params(
            a.get_params(deep=False), b.get_params(deep=False)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_params(a[k], b[k]) for k in a)
    return a == b


def check_clone(cls: type[Component]) -> None:
    """``clone`` gives a distinct unfitted object with equal parameters and a repr."""
    obj = _instance(cls)
    copy = clone(obj)
    assert copy is not obj
    assert _same_params(copy, obj)
    assert type(copy).__name__ in repr(copy)


# --- estimators ----------------------------------------------------------------------------


def check_estimator_values(cls: type[Component]) -> None:
    """round_values has shape (n,), estimate_value is its mean, deterministic, inside the CI."""
    data = _small_logged()
    probs = np.full((len(data), data.n_actions), 1.0 / data.n_actions)
    kwargs = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    est = _instance(cls, **kwargs)
    values = est.round_values(data, probs)
    assert np.shape(values) == (len(data),)
    value = est.estimate_value(data, probs)
    assert np.isfinite(value)
    assert value == _instance(cls, **kwargs).estimate_value(data, probs), "not deterministic"
    interval = est.estimate_interval(data, probs)
    assert interval.low <= interval.value <= interval.high


def check_estimator_policy_forms(cls: type[Component]) -> None:
    """The evaluated policy may be an (n,) integer array of actions (what ``predict``
    returns) or an (n, K) matrix of probabilities: both forms of a deterministic policy give
    the same round values, and so do (n, K) probabilities as they are."""
    data = _small_logged()
    kwargs = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    actions = np.random.default_rng(1).integers(0, data.n_actions, len(data))
    one_hot = np.eye(data.n_actions)[actions]
    forms = {}
    for name, policy in (("(n,) actions", actions), ("(n, K) one-hot rows", one_hot)):
        try:
            forms[name] = np.asarray(_instance(cls, **kwargs).round_values(data, policy))
        except Exception as exc:
            raise AssertionError(
                f"{cls.__name__}.round_values failed on the policy given as {name} "
                f"({type(exc).__name__}: {exc}); read action_probs with "
                f"opboost.api.estimator.check_action_probs, which takes (n,) actions, (n, K) "
                f"probabilities and obp's (n, K, L)."
            ) from exc
    np.testing.assert_allclose(
        forms["(n,) actions"],
        forms["(n, K) one-hot rows"],
        err_msg=f"{cls.__name__}: (n,) actions and their one-hot rows give other values",
    )


def check_estimator_coefficients(cls: type[Component]) -> None:
    """Training estimators give finite coefficients: per row (n,) with the sign of the reward,
    or per action (n, K) whose value (1/n) sum_i <pi_i, Gamma_i> is the estimator's own
    estimate of the same policy."""
    if not getattr(cls, "supports_training", False):
        return
    data = _small_logged()
    est = _instance(cls)
    coef = est.coefficients(data)
    assert np.all(np.isfinite(coef))
    if np.ndim(coef) == 2:
        assert np.shape(coef) == (len(data), data.n_actions)
        probs = np.random.default_rng(2).dirichlet(np.ones(data.n_actions), size=len(data))
        value = float(np.mean(np.einsum("ij,ij->i", probs, coef)))
        assert np.isclose(value, est.estimate_value(data, probs)), "Gamma disagrees with value"
        return
    assert np.shape(coef) == (len(data),)
    assert np.all(np.sign(coef) == np.sign(data.rewards))


# --- base learners -------------------------------------------------------------------------


def check_base_learner_round_and_save(cls: type[Component]) -> None:
    """One round returns (n, K) f; the ensemble predicts alpha*f and survives dumps/loads."""
    from opboost.api.learner import BaseProblem

    data = _small_logged(n=80)
    rng = np.random.default_rng(1)
    n, k = len(data), data.n_actions
    if cls.reduction == "classification":
        targets = np.where(rng.random((n, k)) < 0.5, -1.0, 1.0)
    else:
        targets = rng.normal(size=(n, k))
    problem = BaseProblem(cls.reduction, targets, rng.random((n, k)))
    kwargs = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    learner = _instance(cls, **kwargs)
    learner.prepare(data.contexts, k, random_state=0)
    f = learner.fit_round(problem)
    assert np.shape(f) == (n, k)
    learner.commit_round(0.5)
    ensemble = learner.ensemble()
    scores = ensemble.decision_function(data.contexts)
    np.testing.assert_allclose(scores, 0.5 * f, rtol=1e-5, atol=1e-6)
    loaded = type(ensemble).loads(ensemble.dumps())
    np.testing.assert_array_equal(loaded.decision_function(data.contexts), scores)
    try:
        stages = list(ensemble.staged_decision_function(data.contexts))
    except NotImplementedError:  # staged scores are optional
        return
    assert len(stages) == ensemble.n_rounds == 1
    np.testing.assert_allclose(stages[-1], scores, rtol=1e-10, atol=1e-12)


# --- online bandit learners -----------------------------------------------------------------


def _bandit_stream(n: int = 30, d: int = 4, k: int = 3, seed: int = 0):
    """A seeded stream: contexts (n, d) and labels (n,) in {0..k-1} (reward 1 for the label)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = np.argmax(X[:, :k] + 0.3 * rng.normal(size=(n, k)), axis=1)
    return X, labels


def _online_instance(cls: type[Component]) -> Any:
    kwargs = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    return _instance(cls, **kwargs)


def _run_stream(learner: Any, X: np.ndarray, labels: np.ndarray) -> list[int]:
    """predict_one / learn_one over the stream, checking each distribution and action."""
    k = int(learner.n_actions)
    name = type(learner).__name__
    actions = []
    for x, label in zip(X, labels, strict=True):
        probs = np.asarray(learner.action_probs_one(x))
        assert probs.shape == (k,), f"{name}.action_probs_one returned shape {probs.shape}"
        assert np.all(probs >= 0) and abs(probs.sum() - 1.0) < 1e-6, (
            f"{name}.action_probs_one is not a distribution: {probs}"
        )
        action = learner.predict_one(x)
        assert isinstance(action, int | np.integer) and 0 <= action < k, (
            f"{name}.predict_one returned {action!r}; expected an int in [0, {k})"
        )
        assert probs[action] > 0, f"{name}.predict_one chose action {action} of probability 0"
        learner.learn_one(x, int(action), float(action == label))
        actions.append(int(action))
    return actions


def check_online_learner_protocol(cls: type[Component]) -> None:
    """Bandit learners: valid (K,) distributions and actions; learn_one takes the feedback."""
    if getattr(cls, "feedback", "") != "bandit":
        return
    learner = _online_instance(cls)
    assert "n_actions" in learner.get_params(), f"{cls.__name__} has no n_actions parameter"
    X, labels = _bandit_stream(k=int(learner.n_actions))
    _run_stream(learner, X, labels)
    batch = np.asarray(learner.action_probs_many(X[:5]))
    assert batch.shape == (5, learner.n_actions), f"action_probs_many gave {batch.shape}"


def check_online_learner_seeded(cls: type[Component]) -> None:
    """Bandit learners: two learners with the same random_state act identically on a stream."""
    if getattr(cls, "feedback", "") != "bandit":
        return
    first, second = _online_instance(cls), _online_instance(cls)
    X, labels = _bandit_stream(k=int(first.n_actions))
    assert _run_stream(first, X, labels) == _run_stream(second, X, labels), (
        f"{cls.__name__} is not deterministic for a fixed random_state"
    )


def check_online_learner_copy(cls: type[Component]) -> None:
    """Bandit learners: a deep copy mid-stream (studies score one) gives the same distributions."""
    import copy

    if getattr(cls, "feedback", "") != "bandit":
        return
    learner = _online_instance(cls)
    X, labels = _bandit_stream(k=int(learner.n_actions))
    _run_stream(learner, X[:15], labels[:15])
    snapshot = copy.deepcopy(learner)
    np.testing.assert_allclose(
        snapshot.action_probs_many(X[15:]), learner.action_probs_many(X[15:]), atol=1e-12
    )


# --- policy learners -----------------------------------------------------------------------


def check_policy_learner_fit_predict(cls: type[Component]) -> None:
    """fit returns self; predict (m,) actions in range; predict_proba one distribution a row;
    a fixed seed gives the same actions."""
    data = _small_logged(n=80)
    kwargs = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    learner = _instance(cls, **kwargs)
    assert learner.fit(data) is learner, "fit must return self"
    actions = learner.predict(data.contexts)
    assert np.shape(actions) == (len(data),)
    assert np.all((actions >= 0) & (actions < data.n_actions))
    probs = learner.predict_proba(data.contexts)
    assert np.shape(probs) == (len(data), data.n_actions)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    again = _instance(cls, **kwargs).fit(data).predict(data.contexts)
    np.testing.assert_array_equal(actions, again)


def _candidate_logged(n: int = 80, d: int = 3, k: int = 3, seed: int = 0):
    """Logs where action 0 pays most but is a candidate only in the first half of the rows;
    the logger plays uniformly among each row's candidates."""
    from opboost.api.data.logged import LoggedBandit

    rng = np.random.default_rng(seed)
    mask = np.ones((n, k), dtype=bool)
    mask[n // 2 :, 0] = False
    probs = mask / mask.sum(axis=1, keepdims=True)
    actions = (rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1).clip(0, k - 1)
    rewards = np.where(actions == 0, 1.0, 0.2 * rng.random(n))
    return LoggedBandit(
        contexts=rng.normal(size=(n, d)),
        actions=actions,
        propensities=probs[np.arange(n), actions],
        rewards=rewards,
        n_actions=k,
        logging_probs=probs,
        candidates=mask,
    )


def check_policy_learner_candidates(cls: type[Component]) -> None:
    """A learner fits on logs with candidate sets, and ``predict`` and ``predict_proba`` with
    ``candidates=`` (dense or sparse) serve only candidates: here action 0, the best action
    where it is one, is no candidate in half the rows."""
    import scipy.sparse as sp

    data = _candidate_logged()
    kwargs = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    learner = _instance(cls, **kwargs).fit(data)
    name = cls.__name__
    for mask in (np.asarray(data.candidates), sp.csr_matrix(data.candidates)):
        actions = np.asarray(learner.predict(data.contexts, candidates=mask))
        outside = ~np.asarray(data.candidates)[np.arange(len(data)), actions]
        assert not outside.any(), (
            f"{name}.predict(X, candidates=...) served a non-candidate in {outside.sum()} of "
            f"{len(data)} rows"
        )
        probs = np.asarray(learner.predict_proba(data.contexts, candidates=mask))
        assert probs.shape == (len(data), data.n_actions)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0)
        assert not (probs[~np.asarray(data.candidates)] > 0).any(), (
            f"{name}.predict_proba(X, candidates=...) puts mass on non-candidates"
        )


# --- data sets -----------------------------------------------------------------------------


def check_bundled_dataset_loads(cls: type[Component]) -> None:
    """A bundled data set loads with consistent shapes; real ones are tested on tiny files."""
    if not getattr(cls, "bundled", False):
        return
    data = _instance(cls).load()
    assert data.X.shape[0] == len(data.y) if np.ndim(data.y) == 1 else data.y.shape[0]


_BY_KIND: dict[str, tuple[Check, ...]] = {
    "estimator": (
        check_estimator_values,
        check_estimator_policy_forms,
        check_estimator_coefficients,
    ),
    "base_learner": (check_base_learner_round_and_save,),
    "online_learner": (
        check_online_learner_protocol,
        check_online_learner_seeded,
        check_online_learner_copy,
    ),
    "policy_learner": (check_policy_learner_fit_predict, check_policy_learner_candidates),
    "dataset": (check_bundled_dataset_loads,),
}
_COMMON: tuple[Check, ...] = (
    check_name_and_kind,
    check_init_stores_params,
    check_params_round_trip,
    check_clone,
)


def all_checks(cls: type[Component]) -> list[Check]:
    """The checks that apply to ``cls``, minus those it declares in ``_unit_test_skips``."""
    skips = getattr(cls, "_unit_test_skips", {})
    checks = [*_COMMON, *_BY_KIND.get(cls.kind, ())]
    return [c for c in checks if c.__name__ not in skips]


def parametrize_with_checks(classes: Iterable[type[Component]]):
    """A ``pytest.mark.parametrize`` over (component_class, check) for every applicable check."""
    import pytest

    params = [
        pytest.param(cls, check, id=f"{cls.kind}:{cls.name}-{check.__name__}")
        for cls in classes
        for check in all_checks(cls)
    ]
    return pytest.mark.parametrize(("component_class", "check"), params)
