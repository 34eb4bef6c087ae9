"""``lightgbm_tree``'s committed rounds: alpha recorded per round, the leaves scaled when the
model is read.

A round's tree keeps the leaf values LightGBM fitted until :meth:`CommittedRounds.ensemble`
(or a prediction on candidate pairs) reads the model; then every committed round not yet
scaled gets alpha times its leaves at once, from one model text (``set_round_leaves``). Doing
that every round (a model text of the round's tree and a call per leaf) cost more than
LightGBM's tree on small logs (issue 36). LightGBM's cached training scores are untouched
either way, so each round's change of them is exactly the new tree.
"""

from __future__ import annotations

import numpy as np

from opboost.api.lgbm.layout import set_round_leaves, stored_leaves

__all__ = ["CommittedRounds"]


class CommittedRounds:
    """Mixin of ``LightGBMTree``: ``_unscaled`` lists the committed rounds (first tree,
    alpha) whose leaves still hold the fitted values, in tree order."""

    def _commit_leaves(self, first_tree: int, alpha: float) -> None:
        """Record the committed round whose trees start at ``first_tree``."""
        self._unscaled.append((first_tree, alpha))

    def _committed_leaves(self, values: np.ndarray, alpha: float) -> np.ndarray:
        """The committed outputs of leaves the round's tree fitted as ``values``."""
        return alpha * values

    def _scale_committed(self) -> None:
        """Set the leaves of the committed rounds not yet scaled to their committed outputs."""
        if self._unscaled:
            set_round_leaves(self.booster_, self._unscaled, self._per_iter, self._committed_leaves)
            self._unscaled = []

    def _last_round_outputs(self, out: np.ndarray) -> np.ndarray:
        """The last committed round's outputs (LightGBM's predict of its trees, ``out``)
        divided by its alpha, bit for bit as if its leaves had been scaled already."""
        if self._unscaled:  # its leaves hold the fitted values: as LightGBM would store them
            out = stored_leaves(self._committed_leaves(out, self._last_alpha))
        return out / self._last_alpha
