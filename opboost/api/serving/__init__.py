"""Serving a fitted policy: candidate masks and top-k slates (``masks``), scoring a catalogue
of items by their features (``catalogue``), and exploration with exact propensities
(``exploration``: :class:`~opboost.api.serving.exploration.ExplorationMixin`). The package
imports no interface of the SDK; ``opboost.api`` exports the names of its contract among them
(``serving_mask``, ``mask_scores``, ``top_k``), the rest is imported by its module path. Names
load lazily."""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = ["mask_scores", "serving_mask", "top_k"]

_LAZY = {name: "opboost.api.serving.masks" for name in __all__}

__getattr__, __dir__ = lazy_attributes("opboost.api.serving", _LAZY, globals())
