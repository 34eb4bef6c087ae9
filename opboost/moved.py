"""Where moved modules used to be: each old import path (a module, or a package and everything
under it) and the module that lives there now. ``import opboost`` installs these paths
(:class:`opboost.api.lazy.MovedModules`), so code written for the old tree keeps importing
the same objects. New code imports the new paths."""

from __future__ import annotations

__all__ = ["MOVED"]

#: old dotted path -> new dotted path
MOVED: dict[str, str] = {
    "opboost.api.candidates": "opboost.api.data.candidates",
    "opboost.api.data_checks": "opboost.api.data.checks",
    "opboost.api.design": "opboost.api.numerics.design",
    "opboost.api.exploration": "opboost.api.serving.exploration",
    "opboost.api.memory_limit": "opboost.api.numerics.memory_limit",
    "opboost.api.numeric": "opboost.api.numerics.arrays",
    "opboost.api.obp_format": "opboost.api.data.obp_format",
    "opboost.api.pair_interaction": "opboost.api.data.pair_interaction",
    "opboost.api.pair_serving": "opboost.api.serving.catalogue",
    "opboost.api.pairs": "opboost.api.data.pairs",
    "opboost.api.policy_save": "opboost.api.files.policy_save",
    "opboost.api.row_blocks": "opboost.api.numerics.row_blocks",
    "opboost.api.saved_schema": "opboost.api.files.saved_schema",
    "opboost.api.slots": "opboost.api.data.slots",
    "opboost.api.tabular": "opboost.api.data.tabular",
    "opboost.api.tabular_frames": "opboost.api.data.tabular_frames",
    "opboost.api.threads": "opboost.api.lgbm.threads",
    "opboost.booster": "opboost.core.booster",
    "opboost.booster_checks": "opboost.core.booster_checks",
    "opboost.booster_inputs": "opboost.core.booster_inputs",
    "opboost.callbacks": "opboost.core.callbacks",
    "opboost.engine": "opboost.core.engine",
    "opboost.estimators": "opboost.algorithms.estimators",
    "opboost.fit": "opboost.core.fit",
    "opboost.learners": "opboost.algorithms.learners",
    "opboost.learners.lightgbm_ensemble": "opboost.api.lgbm.ensemble",
    "opboost.learners.lightgbm_layout": "opboost.api.lgbm.layout",
    "opboost.learners.lightgbm_model_fields": "opboost.api.lgbm.model_fields",
    "opboost.learners.lightgbm_model_text": "opboost.api.lgbm.model_text",
    "opboost.learners.lightgbm_params": "opboost.api.lgbm.params",
    "opboost.learners.lightgbm_rows": "opboost.api.lgbm.rows",
    "opboost.learners.lightgbm_threads": "opboost.api.lgbm.process_threads",
    "opboost.metrics": "opboost.core.metrics",
    "opboost.objectives": "opboost.algorithms.objectives",
    "opboost.online": "opboost.algorithms.online",
    "opboost.policy": "opboost.core.policy_loading",
    "opboost.policy_learners": "opboost.algorithms.policy_learners",
    "opboost.registry": "opboost.core.registry",
    "opboost.resolve": "opboost.core.resolve",
    "opboost.selection": "opboost.core.selection",
}
