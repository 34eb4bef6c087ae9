"""The base class every plugin component derives from.

A component is a scikit-learn style object: ``__init__`` takes keyword-only parameters and
only stores them, ``get_params``/``set_params``/``clone`` introspect that signature, and
validation runs at first use. Each concrete class declares its registry ``name`` (snake_case,
unique per kind) and ``kind``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sklearn.base import BaseEstimator, clone

__all__ = ["KINDS", "Component", "clone"]

#: Plugin kinds, in the order ``opboost plugins`` lists them.
KINDS: tuple[str, ...] = (
    "objective",
    "estimator",
    "base_learner",
    "online_learner",
    "policy_learner",
    "dataset",
    "callback",
)


class Component(BaseEstimator):
    """Base of every plugin component (objectives, estimators, learners, data sets, ...)."""

    #: Registry name, snake_case, unique within ``kind``.
    name: ClassVar[str] = ""
    #: One of :data:`KINDS`.
    kind: ClassVar[str] = ""

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        """Parameters that make a small, fast instance for the contract checks."""
        return {}
