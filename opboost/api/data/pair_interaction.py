"""A bilinear score of (context, item) pairs: one more column of a designed pair.

Trees on [x; phi(a)] need many splits for what an interaction of the context with the item's
features says at once (a user's taste times an item's attributes: Vowpal Wabbit's ``-q`` model,
a factorisation machine's core). A fit on candidate pairs may therefore add the column

    s(x, a) = [x_c; 1]^T W [phi~(a); 1]

to each designed pair [x; phi(a)]: x_c the numeric context columns, phi~(a) the item's numeric
columns then the one-hot codes of its categorical columns (a code outside 0 .. n_codes - 1, such
as an unseen category -1, is all zeros). The trees may split on s, and a linear leaf can add s
itself; a policy records W in its action schema, so serving computes the same column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["PairInteraction"]

#: Pairs scored per block (bounds the (block, terms) gather).
_BLOCK = 65_536


@dataclass(frozen=True, eq=False)
class PairInteraction:
    """s(x, a) of the module doc: ``weights`` W ((len(context_columns) + 1) x
    (n_item_terms + 1)); ``item_categories`` lists (phi column, number of codes)."""

    context_columns: tuple[int, ...]
    item_columns: tuple[int, ...]
    item_categories: tuple[tuple[int, int], ...]
    weights: np.ndarray

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PairInteraction):
            return NotImplemented
        same = (self.context_columns, self.item_columns, self.item_categories) == (
            other.context_columns, other.item_columns, other.item_categories,
        )  # fmt: skip
        return same and np.array_equal(self.weights, other.weights)

    __hash__ = None  # type: ignore[assignment]  # mutable weights

    def __repr__(self) -> str:
        terms = (len(self.context_columns) + 1, self.n_item_terms + 1)
        return f"PairInteraction({terms[0]} context x {terms[1]} item terms)"

    @property
    def n_item_terms(self) -> int:
        """Columns of phi~ (without the trailing 1)."""
        return len(self.item_columns) + sum(n for _, n in self.item_categories)

    def context_terms(self, X: Any) -> np.ndarray:
        """[x_c; 1] of contexts ``X`` (m, d) (dense or CSR): (m, len(context_columns) + 1)."""
        columns = list(self.context_columns)
        part = X[:, columns]
        part = part.toarray() if sp.issparse(part) else np.asarray(part, dtype=np.float64)
        return np.hstack([part.astype(np.float64, copy=False), np.ones((X.shape[0], 1))])

    def item_terms(self, phi: np.ndarray) -> np.ndarray:
        """[phi~(a); 1] of item features ``phi`` (k, d_a): (k, n_item_terms + 1)."""
        k = phi.shape[0]
        blocks = [np.asarray(phi[:, list(self.item_columns)], dtype=np.float64)]
        for column, n_codes in self.item_categories:
            codes = phi[:, column]
            onehot = np.zeros((k, n_codes))
            known = (codes >= 0) & (codes < n_codes) & (codes == np.round(codes))
            onehot[np.flatnonzero(known), codes[known].astype(np.int64)] = 1.0
            blocks.append(onehot)
        blocks.append(np.ones((k, 1)))
        return np.hstack(blocks)

    def scores(
        self, X: Any, phi: np.ndarray, rows: np.ndarray, items: np.ndarray, weights: Any = None
    ) -> np.ndarray:
        """s of the pairs (rows[p], items[p]) of contexts ``X`` and item features ``phi``:
        (P,). ``weights`` (default :attr:`weights`) may be another W of the same shape."""
        projected = self.context_terms(X) @ (self.weights if weights is None else weights)
        terms = self.item_terms(phi)
        out = np.empty(len(rows))
        for start in range(0, len(rows), _BLOCK):
            block = slice(start, start + _BLOCK)
            out[block] = np.einsum("pj,pj->p", projected[rows[block]], terms[items[block]])
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "context_columns": list(self.context_columns),
            "item_columns": list(self.item_columns),
            "item_categories": [list(pair) for pair in self.item_categories],
            "weights": self.weights.tolist(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> PairInteraction:
        """Inverse of :meth:`to_json`; ValueError on a malformed record."""
        try:
            if not isinstance(obj, Mapping):
                raise TypeError
            context = tuple(_index(c) for c in obj["context_columns"])
            items = tuple(_index(c) for c in obj["item_columns"])
            cats = tuple((_index(c), _index(n)) for c, n in obj["item_categories"])
            weights = np.asarray(obj["weights"], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"malformed 'interaction' record in policy metadata: {obj!r}"
            ) from None
        record = cls(context, items, cats, weights)
        shape = (len(context) + 1, record.n_item_terms + 1)
        if weights.shape != shape or not np.all(np.isfinite(weights)):
            raise ValueError(
                f"malformed 'interaction' record in policy metadata: weights of shape "
                f"{weights.shape} (finite: {bool(np.all(np.isfinite(weights)))}); expected "
                f"finite weights of shape {shape}."
            )
        return record


def _index(value: Any) -> int:
    """A non-negative int from JSON (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(value)
    return value
