"""Base learners: the contract (BaseProblem, Ensemble, BaseLearner) and built-in learners.

Concrete learners live in their own modules (``opboost.algorithms.learners.sklearn``,
``opboost.algorithms.learners.lightgbm_tree``) and are found through the registry; importing this
package imports neither scikit-learn's trees nor lightgbm.
"""

from opboost.api.learner import BaseLearner, BaseProblem, Ensemble

__all__ = ["BaseLearner", "BaseProblem", "Ensemble"]
