"""The SDK's data model: the logs and what describes them.

=====================  =======================================================================
module                 what it holds
=====================  =======================================================================
``logged``             :class:`LoggedBandit`, the validated logged feedback; the fit's checks
                       of its data arguments (:func:`check_data`, :func:`check_eval_data`)
``checks``             the field checks of the logs (contexts, actions, propensities, ...)
``obp_format``         Open Bandit Pipeline's bandit-feedback dict
``candidates``         the per-row candidate sets (eligible actions)
``tabular``,           :class:`TabularSchema`: a DataFrame's string and categorical columns
``tabular_frames``     and action ids; encoding frames with it
``slots``              :class:`SlotView`: each row's candidates in slots 0 .. C_i - 1
``pairs``,             :class:`PairRows`, rows [x_i; phi(a)] of candidate pairs, their
``pair_interaction``   :class:`ActionSchema` and the bilinear pair interaction
=====================  =======================================================================

The package imports no interface of the SDK (only its foundation: exceptions, validation,
constraints); ``opboost.api`` exports the names of its contract among them (``LoggedBandit``,
``TabularSchema``, ...), the rest is imported by its module path. Names load lazily.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = ["LoggedBandit", "check_data", "check_eval_data"]

_LAZY = {name: "opboost.api.data.logged" for name in __all__}

__getattr__, __dir__ = lazy_attributes("opboost.api.data", _LAZY, globals())
