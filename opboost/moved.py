"""Where moved modules used to be: each old import path (a module, or a package and everything
under it) and the module that lives there now. ``import opboost`` installs these paths
(:class:`opboost.api.lazy.MovedModules`), so code written for the old tree keeps importing
the same objects. New code imports the new paths."""

from __future__ import annotations

__all__ = ["MOVED"]

#: old dotted path -> new dotted path
MOVED: dict[str, str] = {
    "opboost.api.threads": "opboost.api.lgbm.threads",
    "opboost.learners.lightgbm_threads": "opboost.api.lgbm.process_threads",
    "opboost.learners.lightgbm_ensemble": "opboost.api.lgbm.ensemble",
    "opboost.learners.lightgbm_model_text": "opboost.api.lgbm.model_text",
    "opboost.learners.lightgbm_model_fields": "opboost.api.lgbm.model_fields",
    "opboost.learners.lightgbm_rows": "opboost.api.lgbm.rows",
    "opboost.learners.lightgbm_layout": "opboost.api.lgbm.layout",
    "opboost.learners.lightgbm_params": "opboost.api.lgbm.params",
}
