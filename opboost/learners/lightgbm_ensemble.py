"""The LightGBM-text ensemble: F(x) = sum_t alpha_t f_t(x) as one ordinary LightGBM model.

Serialised as one JSON header line (n_actions, action design, n_features, n_rounds and the
SHA-256 of the model text) followed by LightGBM's model text (format "lightgbm_text_v1");
leaf values are written with 17 significant digits, so predictions after ``loads`` are
bit-identical. The checksum is verified before LightGBM parses the text, because LightGBM
aborts the process on some malformed model text instead of raising.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import lightgbm as lgb
import numpy as np

from opboost.learners.base import Ensemble
from opboost.learners.lightgbm_rows import ACTION_DESIGNS, design_rows
from opboost.learners.toolkit import as_contexts, dumps_checked, loads_checked

__all__ = ["FORMAT", "LightGBMEnsemble"]

FORMAT = "lightgbm_text_v1"
_PREDICT_CHUNK = 1 << 15  # contexts expanded to designed rows at a time in decision_function


class LightGBMEnsemble(Ensemble):
    """F(x) = sum_t alpha_t f_t(x) as one LightGBM model over the action design's rows.

    ``decision_function(X)`` for (m, d) contexts (dense or CSR) returns (m, K) scores.
    """

    format: ClassVar[str] = FORMAT

    def __init__(
        self,
        booster: lgb.Booster,
        *,
        n_actions: int,
        action_design: str,
        n_features: int,
        n_rounds: int,
    ) -> None:
        self.booster = booster
        self.n_actions = n_actions
        self.action_design = action_design
        self.n_features = n_features
        self.n_rounds = n_rounds

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores F(X), shape (m, K)."""
        X = as_contexts(X, self.n_features)
        m, K = X.shape[0], self.n_actions
        if self.booster.num_trees() == 0:
            return np.zeros((m, K))
        if self.action_design == "per_action":
            return np.asarray(self.booster.predict(X, raw_score=True)).reshape(m, K)
        out = np.empty((m, K))
        for start in range(0, m, _PREDICT_CHUNK):
            stop = min(start + _PREDICT_CHUNK, m)
            rows = design_rows(X[start:stop], K, self.action_design)
            out[start:stop] = self.booster.predict(rows, raw_score=True).reshape(-1, K)
        return out

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Yield the cumulative scores (m, K) after each round, from each row's leaves."""
        X = as_contexts(X, self.n_features)
        m, K = X.shape[0], self.n_actions
        n_trees = self.booster.num_trees()
        if n_trees == 0:
            return
        per_action = self.action_design == "per_action"
        rows = X if per_action else design_rows(X, K, self.action_design)
        leaves = np.asarray(self.booster.predict(rows, pred_leaf=True), dtype=np.int64)
        leaves = leaves.reshape(leaves.shape[0], n_trees)  # (rows, trees)
        n_leaves = [tree["num_leaves"] for tree in self.booster.dump_model()["tree_info"]]
        scores = np.zeros((m, K))
        per_round = K if per_action else 1
        for start in range(0, n_trees, per_round):
            for j, tree in enumerate(range(start, start + per_round)):
                values = np.array(
                    [self.booster.get_leaf_output(tree, leaf) for leaf in range(n_leaves[tree])]
                )
                if per_action:
                    scores[:, j] += values[leaves[:, tree]]
                else:
                    scores += values[leaves[:, tree]].reshape(m, K)
            yield scores.copy()

    def dumps(self) -> str:
        """One JSON header line (with the model text's SHA-256), then LightGBM's model text."""
        header = {
            "n_actions": self.n_actions,
            "action_design": self.action_design,
            "n_features": self.n_features,
            "n_rounds": self.n_rounds,
        }
        return dumps_checked(FORMAT, header, self.booster.model_to_string())

    @classmethod
    def loads(cls, text: str) -> LightGBMEnsemble:
        """Inverse of :meth:`dumps`; raises ValueError on foreign or corrupted text."""
        # The checksum is verified first: LightGBM aborts the process on some malformed text.
        header, model = loads_checked(text, FORMAT, cls.__name__)
        first = json.dumps(header)
        K, design = header.get("n_actions"), header.get("action_design")
        d, rounds = header.get("n_features"), header.get("n_rounds")
        ints_ok = all(isinstance(v, int) and v >= 0 for v in (K, d, rounds))
        if not ints_ok or K < 2 or design not in ACTION_DESIGNS:
            raise ValueError(f"Corrupted {FORMAT} header: {first[:200]!r}.")
        try:
            booster = lgb.Booster(model_str=model)
        except lgb.basic.LightGBMError as exc:
            raise ValueError(
                f"Corrupted {FORMAT} text: LightGBM could not parse it ({exc})."
            ) from exc
        width = {"stacked": d + 1, "stacked_onehot": d + K, "per_action": d}[design]
        per_iter = K if design == "per_action" else 1
        if booster.num_feature() != width or booster.num_model_per_iteration() != per_iter:
            raise ValueError(
                f"Corrupted {FORMAT} text: the header says {design} with d={d}, K={K} "
                f"({width} columns, {per_iter} trees per round) but the model has "
                f"{booster.num_feature()} columns, {booster.num_model_per_iteration()} per round."
            )
        return cls(booster, n_actions=K, action_design=design, n_features=d, n_rounds=rounds)
