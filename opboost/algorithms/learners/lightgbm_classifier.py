"""``lightgbm_tree_classifier``: one LightGBM classification tree per round.

The classification reduction (London et al., Algorithm 4) asks for f in {-1, +1} that
minimises the weighted 0-1 error of +-1 labels. A regression tree grown by weighted least
squares on the +-1 labels IS a weighted Gini classification tree: for binary labels the
weighted variance of a node is twice its weighted Gini impurity, so both criteria choose the
same splits, and a leaf's weighted mean label is positive exactly when +1 holds the weighted
majority there, which is the leaf's 0-1-optimal label. The learner therefore grows
``lightgbm_tree``'s tree on the labels and replaces every leaf value v by sign(v): the
fitted ensemble is again a plain LightGBM model, at LightGBM's speed (scikit-learn's
classification trees take minutes per round on the paper's stacked rows).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem

__all__ = ["LightGBMTreeClassifier"]

#: Leaves whose weighted mean label is at most this are -1. A strict tie (0) has no
#: majority; the margin keeps a leaf and the rows it holds on the same side even after the
#: training scores' rounding (|score| <= rounds, so their error is far below this).
_TIE = 1e-9


def _label(values: np.ndarray) -> np.ndarray:
    """+1 where the weighted mean label exceeds the tie margin, else -1."""
    return np.where(values > _TIE, 1.0, -1.0)


class LightGBMTreeClassifier(LightGBMTree):
    """A LightGBM Gini classification tree per round (classification reduction).

    Parameters are those of ``lightgbm_tree`` (num_leaves, max_depth, min_data_in_leaf,
    action_design, ...). Each round's tree is grown on the +-1 labels by weighted least
    squares (the same splits as weighted Gini) and each leaf outputs the sign of its
    weighted mean label, so f(x, a) is in {-1, +1}; the committed leaves are alpha * sign.
    """

    name: ClassVar[str] = "lightgbm_tree_classifier"
    reduction: ClassVar[str] = "classification"

    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        """Grow the next tree on the labels; return its +-1 outputs on the training rows (n, K)."""
        owner = type(self).__name__
        if problem.reduction != "classification":
            raise InvalidParameterError(
                f"{owner} solves the 'classification' reduction; got {problem.reduction!r}. "
                f"Use base_learner='lightgbm_tree' for that objective."
            )
        labels = np.asarray(problem.targets)
        if not np.all(np.abs(labels) == 1.0):
            raise InvalidParameterError(
                f"{owner}.fit_round: classification targets must be +-1 labels; "
                f"got values {np.unique(labels)[:5].tolist()}."
            )
        means = super().fit_round(BaseProblem("regression", labels, problem.weights))
        if not self._pending:  # no split possible, or every weight 0: nothing was added
            return means
        return _label(means)

    def _committed_leaves(self, values: np.ndarray, alpha: float) -> np.ndarray:
        return alpha * _label(values)
