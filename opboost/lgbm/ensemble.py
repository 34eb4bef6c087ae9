"""The LightGBM-text ensemble: F(x) = sum_t alpha_t f_t(x) as one ordinary LightGBM model.

Serialised as one JSON header line (n_actions, action design, n_features, n_rounds and the
SHA-256 of the model text) followed by LightGBM's model text (format "lightgbm_text_v1");
leaf values are written with 17 significant digits, so predictions after ``loads`` are
bit-identical. The checksum is verified before LightGBM parses the text, because LightGBM
aborts the process on some malformed model text instead of raising.

A checksum proves only that the text was not damaged by accident: whoever edits a file can
recompute it, so the text is also validated structurally before LightGBM sees it
(:func:`opboost.lgbm.model_text.check_model_text`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import lightgbm as lgb
import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import Ensemble
from opboost.api.learner_toolkit import dumps_checked, loads_checked
from opboost.api.numerics.contexts import as_contexts
from opboost.lgbm.model_text import check_model_text
from opboost.lgbm.process_threads import keeping_threads
from opboost.lgbm.rows import ACTION_DESIGNS, PAIRS_DESIGN, design_rows
from opboost.lgbm.split_codes import categorical_split_codes
from opboost.lgbm.threads import PREDICT_WORK_PER_THREAD, lightgbm_threads

__all__ = ["LIGHTGBM_FORMAT", "LightGBMEnsemble", "check_model_text"]

#: The ensemble format of the LightGBM learners' policies.
LIGHTGBM_FORMAT = "lightgbm_text_v1"
FORMAT = LIGHTGBM_FORMAT  # the old name
_PREDICT_CHUNK = 1 << 15  # contexts expanded to designed rows at a time in decision_function


class LightGBMEnsemble(Ensemble):
    """F(x) = sum_t alpha_t f_t(x) as one LightGBM model over the action design's rows.

    ``decision_function(X)`` for (m, d) contexts (dense or CSR) returns (m, K) scores. An
    ensemble of design ``"pairs"`` (fitted on candidate pairs [x; phi(a)], phi with
    ``n_action_features`` columns) scores pairs instead: :meth:`score_pairs`.
    """

    format: ClassVar[str] = LIGHTGBM_FORMAT

    def __init__(
        self,
        booster: lgb.Booster,
        *,
        n_actions: int,
        action_design: str,
        n_features: int,
        n_rounds: int,
        n_action_features: int = 0,
    ) -> None:
        self.booster = booster
        self.n_action_features = int(n_action_features)
        self.n_actions = n_actions
        self.action_design = action_design
        self.n_features = n_features
        self.n_rounds = n_rounds
        self._split_codes: dict[int, np.ndarray] | None = None  # set by loads

    def categorical_codes(self) -> dict[tuple[str, int], np.ndarray]:
        """The category codes the model's categorical splits use (sorted, distinct), keyed by
        the input column they split: ``("context", j)``, ``("item", k)`` (column k after the
        contexts' of a ``"pairs"`` design: phi, then the interaction), ``("action", 0)`` (the
        action index of a ``"stacked"`` design) or ``("onehot", k)`` (``"stacked_onehot"``)."""
        if self._split_codes is None:
            self._split_codes = categorical_split_codes(self.booster.model_to_string())
        after = {PAIRS_DESIGN: "item", "stacked": "action"}.get(self.action_design, "onehot")
        d = self.n_features
        return {
            ("context", j) if j < d else (after, j - d): codes
            for j, codes in self._split_codes.items()
        }

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores F(X), shape (m, K)."""
        if self.action_design == PAIRS_DESIGN:
            raise InvalidParameterError(
                "This ensemble scores (context, item) pairs on item features: predict "
                "through its Policy with the catalogue, policy.decision_function(X, "
                "action_features=..., candidates=...)."
            )
        X = as_contexts(X, self.n_features, missing=True)
        m, K = X.shape[0], self.n_actions
        n_trees = self.booster.num_trees()
        if n_trees == 0:
            return np.zeros((m, K))
        if self.action_design == "per_action":
            return self._raw_scores(X, m, n_trees).reshape(m, K)
        if m <= _PREDICT_CHUNK:  # one block (serving): no chunk loop, no extra copy
            rows = design_rows(X, K, self.action_design)
            return self._raw_scores(rows, m * K, n_trees).reshape(m, K)
        out = np.empty((m, K))
        for start in range(0, m, _PREDICT_CHUNK):
            stop = min(start + _PREDICT_CHUNK, m)
            rows = design_rows(X[start:stop], K, self.action_design)
            out[start:stop] = self._raw_scores(rows, rows.shape[0], n_trees).reshape(-1, K)
        return out

    def score_pairs(self, pairs: Any) -> np.ndarray:
        """Scores F of the pairs of a :class:`opboost.api.data.pairs.PairRows`, shape (P,)
        (design ``"pairs"`` only), designed and predicted in chunks of pairs."""
        width = self.n_features + self.n_action_features
        if self.action_design != PAIRS_DESIGN or pairs.width != width:
            raise InvalidParameterError(
                f"LightGBMEnsemble.score_pairs: the ensemble reads rows of {width} columns "
                f"(design {self.action_design!r}); the pairs have {pairs.width}."
            )
        n_pairs, n_trees = pairs.n_pairs, self.booster.num_trees()
        out = np.zeros(n_pairs)
        if n_trees == 0:
            return out
        chunk = _PREDICT_CHUNK * 8
        for start in range(0, n_pairs, chunk):
            rows = pairs.matrix(start, start + chunk)
            out[start : start + rows.shape[0]] = self._raw_scores(rows, rows.shape[0], n_trees)
        return out

    def _raw_scores(self, rows: Any, n_rows: int, n_trees: int) -> np.ndarray:
        """LightGBM's raw scores of designed rows, (n_rows,) float64.

        The threads follow the work (rows x trees, :func:`opboost.lgbm.threads.lightgbm_threads`
        with ``PREDICT_WORK_PER_THREAD``): single-context serving runs on ONE thread (with
        ``num_threads`` unset LightGBM opens an OpenMP team on every call, and waking its
        threads costs milliseconds on a busy machine while one thread needs microseconds), large
        batches on the free cores. The result is the same either way: each row's score is a sum
        over its own trees. ``num_threads`` in a predict call also sets LightGBM's process-wide
        thread count, which a model being trained in this process then uses; that count is put
        back afterwards (:func:`~opboost.lgbm.process_threads.keeping_threads`).
        """
        threads = lightgbm_threads(n_rows * n_trees, per_thread=PREDICT_WORK_PER_THREAD)
        with keeping_threads():
            return np.asarray(self.booster.predict(rows, raw_score=True, num_threads=threads))

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Yield the cumulative scores (m, K) after each round, from each row's leaves (a
        linear tree, as a reward-model start has, is predicted as itself)."""
        if self.action_design == PAIRS_DESIGN:
            raise NotImplementedError("staged scores of a pairs ensemble are not available.")
        X = as_contexts(X, self.n_features, missing=True)
        m, K = X.shape[0], self.n_actions
        n_trees = self.booster.num_trees()
        if n_trees == 0:
            return
        per_action = self.action_design == "per_action"
        rows = X if per_action else design_rows(X, K, self.action_design)
        threads = lightgbm_threads(rows.shape[0] * n_trees, per_thread=PREDICT_WORK_PER_THREAD)
        with keeping_threads():
            leaves = self.booster.predict(rows, pred_leaf=True, num_threads=threads)
        leaves = np.asarray(leaves, dtype=np.int64)
        leaves = leaves.reshape(leaves.shape[0], n_trees)  # (rows, trees)
        info = self.booster.dump_model()["tree_info"]
        scores = np.zeros((m, K))
        per_round = K if per_action else 1
        for start in range(0, n_trees, per_round):
            linear_round = None  # the round's scores, predicted once: (m, K) per action
            for j, tree in enumerate(range(start, start + per_round)):
                if _is_linear(info[tree]["tree_structure"]):
                    if linear_round is None:
                        with keeping_threads():
                            linear_round = self.booster.predict(
                                rows, start_iteration=start // per_round, num_iteration=1,
                                raw_score=True, num_threads=threads,
                            )  # fmt: skip
                    values = linear_round[:, j] if per_action else linear_round
                else:
                    outputs = [
                        self.booster.get_leaf_output(tree, leaf)
                        for leaf in range(info[tree]["num_leaves"])
                    ]
                    values = np.asarray(outputs)[leaves[:, tree]]
                if per_action:
                    scores[:, j] += values
                else:
                    scores += np.asarray(values).reshape(m, K)
            yield scores.copy()

    def dumps(self) -> str:
        """One JSON header line (with the model text's SHA-256), then LightGBM's model text."""
        header = {
            "n_actions": self.n_actions,
            "action_design": self.action_design,
            "n_features": self.n_features,
            "n_rounds": self.n_rounds,
        }
        if self.action_design == PAIRS_DESIGN:
            header["n_action_features"] = self.n_action_features
        return dumps_checked(LIGHTGBM_FORMAT, header, self.booster.model_to_string())

    @classmethod
    def loads(cls, text: str) -> LightGBMEnsemble:
        """Inverse of :meth:`dumps`; raises ValueError on foreign or corrupted text."""
        # The checksum is verified first: LightGBM aborts the process on some malformed text.
        header, model = loads_checked(text, LIGHTGBM_FORMAT, cls.__name__)
        first = json.dumps(header)
        K, design = header.get("n_actions"), header.get("action_design")
        d, rounds = header.get("n_features"), header.get("n_rounds")
        d_a = header.get("n_action_features", 0)
        ints_ok = all(isinstance(v, int) and v >= 0 for v in (K, d, rounds, d_a))
        # item columns only in a pairs design (they decide whether a catalogue is served)
        fixed = design in ACTION_DESIGNS and "n_action_features" not in header
        known = fixed or (design == PAIRS_DESIGN and ints_ok and d_a >= 1)
        if not ints_ok or K < 2 or not known:
            raise ValueError(f"Corrupted {LIGHTGBM_FORMAT} header: {first[:200]!r}.")
        widths = {"stacked": d + 1, "stacked_onehot": d + K, "per_action": d, "pairs": d + d_a}
        width = widths[design]
        per_iter = K if design == "per_action" else 1
        try:  # before LightGBM parses it: malformed text can abort the process
            check_model_text(model, n_features=width, trees_per_round=per_iter)
        except ValueError as exc:
            raise ValueError(f"Corrupted {LIGHTGBM_FORMAT} text: {exc}.") from exc
        try:
            booster = lgb.Booster(model_str=model)
        except (lgb.basic.LightGBMError, ValueError) as exc:  # ValueError: its parameters' JSON
            raise ValueError(
                f"Corrupted {LIGHTGBM_FORMAT} text: LightGBM could not parse it ({exc})."
            ) from exc
        if booster.num_feature() != width or booster.num_model_per_iteration() != per_iter:
            raise ValueError(
                f"Corrupted {LIGHTGBM_FORMAT} text: the header says {design} with d={d}, K={K} "
                f"({width} columns, {per_iter} trees per round) but the model has "
                f"{booster.num_feature()} columns, {booster.num_model_per_iteration()} per round."
            )
        ensemble = cls(
            booster, n_actions=K, action_design=design, n_features=d, n_rounds=rounds,
            n_action_features=d_a,
        )  # fmt: skip
        ensemble._split_codes = categorical_split_codes(model)  # the text at hand, parsed once
        return ensemble


def _is_linear(node: dict) -> bool:
    """Whether the tree of ``dump_model``'s ``tree_structure`` ``node`` has linear leaves."""
    while "leaf_index" not in node and "left_child" in node:
        node = node["left_child"]
    return "leaf_const" in node
