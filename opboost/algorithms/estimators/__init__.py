"""Off-policy estimators: training coefficients and policy value estimates."""

from opboost.api.estimator import ConfidenceInterval, Estimator
from opboost.api.estimator import Interval as Interval  # the old name of ConfidenceInterval

__all__ = ["ConfidenceInterval", "Estimator"]
