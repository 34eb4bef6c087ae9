"""Off-policy estimators: training coefficients and policy value estimates."""

from opboost.estimators.base import Estimator, Interval

__all__ = ["Estimator", "Interval"]
