"""Serving a policy fitted on action features: scores of a catalogue given at prediction time.

A policy boosted on candidate pairs [x; phi(a)] (its metadata holds an
:class:`~opboost.api.data.pairs.ActionSchema`) scores any catalogue with the trained item-feature
schema, items never seen in training included: ``action_features`` (K', d_a) is the catalogue
and ``candidates`` an (m, K') mask (dense or sparse) of each row's eligible items (None: all).
Only the candidate pairs are designed and scored; non-candidates score -inf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from opboost.api.data.pairs import ACTION_SCHEMA_KEY, ActionSchema, PairRows
from opboost.api.data.slots import SlotView
from opboost.api.numerics.contexts import as_contexts
from opboost.api.serving.masks import serving_mask

if TYPE_CHECKING:
    from opboost.api.learner import Ensemble

__all__ = ["action_schema_of", "catalogue_scores"]


def action_schema_of(metadata: Any) -> ActionSchema | None:
    """The policy's :class:`ActionSchema` (fitted on candidate pairs), or None."""
    record = metadata.get(ACTION_SCHEMA_KEY)
    return None if record is None else ActionSchema.from_json(record)


def catalogue_scores(
    ensemble: Ensemble,
    schema: ActionSchema,
    X: Any,
    action_features: Any,
    candidates: Any,
    owner: str,
) -> np.ndarray:
    """Scores (m, K') of contexts ``X`` (m, d) against the catalogue ``action_features``
    (K', d_a), -inf outside ``candidates`` (m, K') (None: every item is a candidate)."""
    phi = schema.phi(action_features, owner)
    # NaN stays: the only ensemble with score_pairs, LightGBM's, routes missing values
    X = as_contexts(X, getattr(ensemble, "n_features", None), missing=True)
    m, k = X.shape[0], phi.shape[0]
    mask = None if candidates is None else serving_mask(candidates, (m, k), owner)
    view = SlotView.from_candidates(mask, m, k)
    pairs = PairRows(X, phi, view, schema.categorical, schema.interaction)
    values = ensemble.score_pairs(pairs)
    out = np.full((m, k), -np.inf)
    out[view.rows, view.pair_items] = values
    return out
