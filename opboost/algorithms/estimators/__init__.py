"""Off-policy estimators: training coefficients and policy value estimates."""

from opboost.api.estimator import ConfidenceInterval, Estimator

__all__ = ["ConfidenceInterval", "Estimator"]
