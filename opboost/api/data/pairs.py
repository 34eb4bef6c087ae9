"""(context, action) pairs featurised by the actions' own features: rows [x_i; phi(a)].

London et al. (appendix F.5) boost F on joint features (x, a) with a one-hot encoding of the
action; with item features phi(a) (``LoggedBandit.action_features``, (K, d_a)) the same trees
score items they never saw. Only the candidate pairs of a ``SlotView``
become rows, so a design costs O(sum_i C_i (d + d_a)), never O(n K).

Logs without action features use phi(a) = [a], the action index as ONE categorical column
(``kind="index"``): the categorical form of the one-hot block, as the default ``"stacked"``
design of ``lightgbm_tree`` uses; one-hot columns would cost K floats per pair.

``ActionSchema`` is what a fitted policy records of phi (kind, d_a, column names) and
checks a prediction-time catalogue against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data.pair_interaction import PairInteraction
from opboost.api.data.slots import SlotView
from opboost.api.data.tabular import TabularSchema

__all__ = ["ACTION_SCHEMA_KEY", "ActionSchema", "PairRows", "pair_features"]

#: The policy metadata key holding ``ActionSchema.to_json``.
ACTION_SCHEMA_KEY = "action_schema"
_KINDS = ("features", "index")


@dataclass(frozen=True)
class ActionSchema:
    """How actions are featurised: ``kind`` "features" (phi = the catalogue's rows, d_a
    columns named ``columns`` if known; ``categories`` maps each categorical column to its
    categories, code c meaning ``categories[column][c]``) or "index" (phi(a) = [a], a
    categorical column over the ``n_actions`` trained actions); ``interaction``: the bilinear
    column a fit added to every designed pair, if any."""

    kind: str
    n_features: int
    n_actions: int
    columns: tuple[str, ...] | None = None
    categories: Mapping[str, tuple[Any, ...]] | None = None
    interaction: PairInteraction | None = None

    @classmethod
    def of_logs(
        cls, action_features: np.ndarray | None, n_actions: int, item_schema: Any = None
    ) -> ActionSchema:
        """The schema of logs with ``action_features`` (K, d_a) and, when they came from a
        DataFrame, its ``TabularSchema``; or of index actions."""
        if action_features is None:
            return cls("index", 1, int(n_actions))
        d_a = int(action_features.shape[1])
        if item_schema is None:
            return cls("features", d_a, int(n_actions))
        names = tuple(str(c) for c in item_schema.columns)
        cats = {str(c): tuple(v) for c, v in item_schema.categories.items()} or None
        return cls("features", d_a, int(n_actions), names, cats)

    def to_json(self) -> dict[str, Any]:
        """The schema as JSON-ready values (a saved policy's manifest); ``from_json`` reads it."""
        cats = self.categories
        return {
            "kind": self.kind,
            "n_features": self.n_features,
            "n_actions": self.n_actions,
            "columns": None if self.columns is None else list(self.columns),
            "categories": None if cats is None else [[c, list(v)] for c, v in cats.items()],
            **({} if self.interaction is None else {"interaction": self.interaction.to_json()}),
        }

    @classmethod
    def from_json(cls, obj: Any) -> ActionSchema:
        """Inverse of ``to_json``; ValueError on a malformed record."""
        ok = isinstance(obj, dict) and obj.get("kind") in _KINDS
        ints = ok and all(
            isinstance(obj.get(k), int) and obj[k] >= 1 for k in ("n_features", "n_actions")
        )
        columns = obj.get("columns") if ok else None
        if not ints or not (columns is None or isinstance(columns, list)):
            raise ValueError(f"malformed {ACTION_SCHEMA_KEY!r} record in policy metadata: {obj!r}")
        names = None if columns is None else tuple(str(c) for c in columns)
        try:
            cats = {str(c): tuple(v) for c, v in obj.get("categories") or []} or None
        except (TypeError, ValueError):
            raise ValueError(
                f"malformed {ACTION_SCHEMA_KEY!r} record in policy metadata: {obj!r}"
            ) from None
        if cats and (names is None or not set(cats) <= set(names)):
            raise ValueError(f"malformed {ACTION_SCHEMA_KEY!r} record in policy metadata: {obj!r}")
        interaction = obj.get("interaction")
        if interaction is not None:
            interaction = PairInteraction.from_json(interaction)
        return cls(obj["kind"], obj["n_features"], obj["n_actions"], names, cats, interaction)

    @property
    def categorical(self) -> tuple[int, ...]:
        """The phi columns LightGBM splits as categorical: the action index, or the
        categorical item-feature columns."""
        if self.kind == "index":
            return (0,)
        cats = self.categories or {}
        return tuple(j for j, c in enumerate(self.columns or ()) if c in cats)

    def phi(self, action_features: Any, owner: str) -> np.ndarray:
        """phi of a catalogue: (K', d_a) float64. "features" needs ``action_features`` with
        this schema's d_a columns (and names, for a DataFrame when names were recorded);
        "index" takes none and gives the trained actions' [a] (K, 1). ValueError naming the
        mismatch otherwise."""
        if self.kind == "index":
            if action_features is not None:
                raise ValueError(
                    f"{owner}: this policy was trained without action features (its actions are "
                    f"the {self.n_actions} trained action indices); drop action_features=."
                )
            return np.arange(self.n_actions, dtype=np.float64)[:, None]
        if action_features is None:
            raise ValueError(
                f"{owner}: this policy scores actions by their features; pass the catalogue "
                f"action_features=, an (n_items, {self.n_features}) array (one row per item; "
                f"candidates= then has one column per item)."
            )
        columns = getattr(action_features, "columns", None)
        if columns is not None and self.columns is not None:
            names = tuple(str(c) for c in columns)
            if names != self.columns:
                raise ValueError(
                    f"{owner}: action_features has columns {list(names)} but the policy was "
                    f"trained on {list(self.columns)}; pass the training columns in order."
                )
            if self.categories:  # codes of the training categories (-1: unseen)
                frame = action_features.set_axis(list(names), axis=1)
                return TabularSchema(self.columns, self.categories).encode(frame, owner)
        to_numpy = getattr(action_features, "to_numpy", None)
        array = to_numpy(dtype=np.float64) if to_numpy else np.asarray(action_features, float)
        if array.ndim != 2 or array.shape[1] != self.n_features or array.shape[0] < 1:
            raise ValueError(
                f"{owner}: action_features must have shape (n_items, {self.n_features}), the "
                f"{self.n_features} item feature(s) the policy was trained on. Got shape "
                f"{array.shape}."
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{owner}: action_features must be finite; impute missing values.")
        return array


def pair_features(contexts: Any, phi: np.ndarray) -> Any:
    """Designed pairs [x; phi(a)] of (m, d) contexts and their (m, d_a) action features:
    (m, d + d_a) float64, CSR if the contexts are (the column layout of ``PairRows``)."""
    if sp.issparse(contexts):
        return sp.hstack([contexts, sp.csr_matrix(phi)], format="csr")
    return np.hstack([np.asarray(contexts, dtype=np.float64), phi])


@dataclass(frozen=True, eq=False)
class PairRows:
    """The candidate pairs of ``view`` over ``contexts`` (n, d) (dense or CSR), with phi
    ``action_features`` (K, d_a): pair p is [contexts[rows[p]]; action_features[items[p]]].
    ``categorical`` lists the phi columns LightGBM splits as categorical (the action index,
    or categorical item features). With an ``interaction``
    (``PairInteraction``) each pair has one more column,
    its score s(x, a), or ``interaction_values`` (P,) when given (a fit's cross-fitted s)."""

    contexts: Any
    action_features: np.ndarray
    view: SlotView
    categorical: tuple[int, ...] = ()
    interaction: PairInteraction | None = None
    interaction_values: np.ndarray | None = None

    @property
    def n_pairs(self) -> int:
        return self.view.n_pairs

    @property
    def n_item_columns(self) -> int:
        """d_a, plus 1 for the interaction column: the columns after the context's."""
        return int(self.action_features.shape[1]) + (self.interaction is not None)

    @property
    def width(self) -> int:
        """d + d_a (+ 1 with an interaction), the columns of a designed pair."""
        return int(self.contexts.shape[1]) + self.n_item_columns

    def item_block(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The columns after the context's of pairs start .. stop - 1: phi(a), and s(x, a)
        with an interaction; (m, n_item_columns) float64."""
        items = self.view.pair_items[start:stop]
        phi = self.action_features[items]
        if self.interaction is None:
            return phi
        if self.interaction_values is not None:
            values = self.interaction_values[start:stop]
        else:
            rows = self.view.rows[start:stop]
            values = self.interaction.scores(self.contexts, self.action_features, rows, items)
        return np.hstack([phi, values[:, None]])

    def take(self, keep: np.ndarray) -> PairRows:
        """The pairs of the rows ``keep`` (n,) bool (contexts, slots and any interaction
        values of theirs; the catalogue is unchanged)."""
        values = self.interaction_values
        if values is not None:
            values = values[keep[self.view.rows]]
        return PairRows(
            self.contexts[keep], self.action_features, self.view.take(keep), self.categorical,
            self.interaction, values,
        )  # fmt: skip

    def with_interaction(
        self, interaction: PairInteraction | None, values: np.ndarray | None = None
    ) -> PairRows:
        """These pairs with ``interaction`` (and its cross-fitted ``values`` (P,))."""
        return PairRows(
            self.contexts, self.action_features, self.view, self.categorical, interaction, values
        )

    def matrix(self, start: int = 0, stop: int | None = None) -> Any:
        """Designed pairs start .. stop - 1: (m, width) float64, CSR if contexts are."""
        rows = self.view.rows[start:stop]
        phi = self.item_block(start, stop)
        if sp.issparse(self.contexts):
            return sp.hstack([self.contexts[rows], sp.csr_matrix(phi)], format="csr")
        out = np.empty((len(rows), self.width))
        d = self.contexts.shape[1]
        out[:, :d] = self.contexts[rows]
        out[:, d:] = phi
        return out
