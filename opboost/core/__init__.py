"""The core: the Booster and the one boosting loop, free of any concrete algorithm.

=====================  =======================================================================
module                 what it holds
=====================  =======================================================================
``booster``            :class:`Booster`: validate, resolve, run, set the fitted attributes
``booster_checks``     the Booster's parameter constraints, the checks of its callbacks
``booster_inputs``     the logs fit receives, checked and shaped (the scikit-learn (X, y)
                       route, feature names, missing values); contexts at prediction
``resolve``            the components by registry name, and the plan of one fit
``engine``             the whole fit (:func:`run_fit`), the loop over rounds and one round
``fit``                the in-memory engine: its state, slot coordinates, the warm start,
                       checkpoints
``selection``          label-free selection of the round on held-out logs; safe fallbacks
``registry``           the plugin registry: pluggy hooks and entry points, lookup by name
``callbacks``          the built-in fit callbacks (early stopping, progress, checkpoints)
``metrics``            off-policy scorers for scikit-learn's model selection
``policy_loading``     loading saved policies without executing code
=====================  =======================================================================

The core imports the SDK (:mod:`opboost.api`) and meets the algorithms only by name, through
the registry. Users meet it through the facade: ``opboost.Booster``, ``opboost.load_policy``,
``opboost.EarlyStopping``, ...
"""

from __future__ import annotations

__all__: list[str] = []
