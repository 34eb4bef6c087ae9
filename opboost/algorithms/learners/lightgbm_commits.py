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

import lightgbm as lgb
import numpy as np

from opboost.lgbm.layout import (
    fetch_scores,
    score_change,
    set_round_leaves,
    stored_leaves,
    update_one_iter,
)
from opboost.lgbm.sampling import booster_without_sampling, splits_on_actions

__all__ = ["FEATURE_REDRAWS", "CommittedRounds"]

#: Times a round's stacked tree is grown again while LightGBM's draw of columns
#: (``feature_fraction`` < 1) leaves it no split on an action column.
FEATURE_REDRAWS = 20


class CommittedRounds:
    """Mixin of ``LightGBMTree``: ``_unscaled`` lists the committed rounds (first tree,
    alpha) whose leaves still hold the fitted values, in tree order; ``_scores`` are
    LightGBM's cached training scores when last read (a round's tree is their change)."""

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

    def _fetch_scores(self, out: np.ndarray) -> None:
        """Copy LightGBM's cached training scores (n*K, its layout) into ``out``."""
        fetch_scores(self.booster_, out)

    def _fetch_change(self, f: np.ndarray) -> None:
        """``f`` (n, K) <- the new trees' outputs on the training rows (the change of
        LightGBM's cached scores); the new scores are kept for the next round."""
        if self._per_iter == 1:  # example-major: f's own layout
            score_change(self.booster_, self._scores.reshape(f.shape), f)
            return
        n, K = f.shape  # class-major (K, n): fetched into the second buffer
        self._fetch_scores(self._next)
        np.subtract(self._next.reshape(K, n).T, self._scores.reshape(K, n).T, out=f)
        self._scores, self._next = self._next, self._scores

    def _discard_pending(self) -> None:
        """Remove the uncommitted round's trees and restore the cached scores."""
        self.booster_.rollback_one_iter()
        self._fetch_scores(self._scores)
        self._pending = 0

    def _sampled_without_actions(self) -> bool:
        """Whether the round's tree was grown on sampled rows and splits on no action column
        (it would change no policy once its leaves are every row's:
        :func:`opboost.lgbm.sampling.splits_on_actions`)."""
        if self.row_sampling_ != "goss" or self._per_iter != 1:
            return False
        return not splits_on_actions(self.booster_, self.n_features_)

    def _grow_with_actions(self, grad: np.ndarray, hess: np.ndarray) -> None:
        """Grow the round's stacked tree again, at most :data:`FEATURE_REDRAWS` times, while it
        splits on no action column and ``feature_fraction`` < 1 drew its columns: such a tree
        changes no policy (:func:`opboost.lgbm.sampling.splits_on_actions`), so its round
        would get alpha 0 and end the fit (feature_fraction=0.5 stopped one at round 1),
        and LightGBM draws other columns for the next tree."""
        if self._per_iter != 1 or self.feature_fraction >= 1.0:
            return
        for _ in range(FEATURE_REDRAWS):
            if not self._pending or splits_on_actions(self.booster_, self.n_features_):
                return
            self._discard_pending()
            self._pending = update_one_iter(self.booster_, grad, hess)

    def _stop_sampling(self) -> lgb.Booster:
        """Drop the round's tree and grow this round and the rest of the fit on every row
        (``row_sampling_`` becomes "none"); the new Booster."""
        self._discard_pending()
        self.booster_ = booster_without_sampling(self.booster_)
        self.row_sampling_ = "none"
        self._fetch_scores(self._scores)
        return self.booster_
