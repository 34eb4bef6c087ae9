"""Off-policy estimators: training coefficients and policy value estimates."""

from opboost.api.estimator import Estimator, Interval

__all__ = ["Estimator", "Interval"]
