"""The opboost plugin SDK: every interface a plugin implements or uses, in one place.

Core (the booster, engine, registry, policies) and the algorithms (objectives, estimators,
learners, online learners, policy learners) both build on this package and on nothing of each
other; so do the Dask engine and a third-party plugin, which imports only from here (and from
:mod:`opboost.testing` in its tests). Every public name of every module below is a name of this
package: ``from opboost.api import LoggedBandit, Objective, lightgbm_threads``.

The interfaces, at the top:

========================  =================================================================
module                    what it holds
========================  =================================================================
``component``             :class:`Component` (the base of every plugin class) and the kinds
``hookspecs``             the pluggy hook specifications and ``hookimpl``
``exceptions``            the error and warning classes
``validation``            parameter checks with the project's messages
``constraints``           declared ``_parameter_constraints`` (:class:`Interval`, ...) and
                          :func:`validate_params`
``objective``,            :class:`Objective`, the closed-form step; :class:`RoundState`,
``round_state``           :class:`ActionState` (a round's policy, g built on first use)
``estimator``             :class:`Estimator`, :class:`ConfidenceInterval`, :class:`LogsScorer`
``learner``,              :class:`BaseLearner`, :class:`BaseProblem`, :class:`Ensemble`;
``learner_toolkit``       helpers for base learners (inputs, seeds, checked model text)
``online``, ``bandit``,   :class:`OnlineLearner`, :class:`BanditLearner`,
``loss_feedback``         :class:`LossFeedbackLearner`
``policy_learner``        :class:`PolicyLearner`
``callback``              :class:`Callback`, :class:`RoundEnv`
``dataset``               :class:`Dataset`, :class:`SupervisedData`
``policy``                :class:`Policy`, :class:`ConstantPolicy`
``engine``,               the engine extension point: :class:`Engine`, :class:`RemoteLogs`,
``fit_metadata``          :class:`FitSettings`, :class:`Components`; what a fit records
``lazy``                  lazy package attributes
========================  =================================================================

Below them, in sub-packages that import none of the interfaces: ``data`` (the data model:
:class:`LoggedBandit`, its checks, candidate sets, :class:`TabularSchema`, slots and candidate
pairs), ``numerics`` (a round's row arithmetic, the softmax, the stacked design, memory
limits), ``serving`` (candidate masks, top-k slates, catalogues, exploration with exact
propensities) and ``files`` (crash-safe writes, a policy's save protocol). ``lgbm`` is the
LightGBM toolkit the LightGBM learners and the Dask engine share.

Names load lazily: ``from opboost.api import BaseLearner`` imports only what it needs.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

#: Every public name of the SDK -> the module (under opboost.api) that defines it.
_HOMES: dict[str, str] = {
    # bandit
    "BanditLearner": "bandit",
    # callback
    "Callback": "callback",
    "FIT_METRICS": "callback",
    "HistoryView": "callback",
    "RoundEnv": "callback",
    # component
    "Component": "component",
    "KINDS": "component",
    "check_params": "component",
    "clone": "component",
    "constructor_defaults": "component",
    # constraints
    "Constraint": "constraints",
    "InstanceOf": "constraints",
    "Interval": "constraints",
    "Options": "constraints",
    "Rule": "constraints",
    "Satisfies": "constraints",
    "Skip": "constraints",
    "describe_constraints": "constraints",
    "make_constraint": "constraints",
    "validate_params": "constraints",
    # dataset
    "DATA_ENV": "dataset",
    "Dataset": "dataset",
    "SupervisedData": "dataset",
    "find_file": "dataset",
    "resolve_data_dir": "dataset",
    # engine
    "BoosterEngine": "engine",
    "Components": "engine",
    "Direction": "engine",
    "Engine": "engine",
    "FitSettings": "engine",
    "Fitted": "engine",
    "RemoteLogs": "engine",
    "StepSettings": "engine",
    # estimator
    "ConfidenceInterval": "estimator",
    "Estimator": "estimator",
    "LogsScorer": "estimator",
    "check_action_probs": "estimator",
    "normal_interval": "estimator",
    # exceptions
    "ConfigError": "exceptions",
    "ConfigParameterError": "exceptions",
    "HiddenLabelError": "exceptions",
    "InsufficientMemoryError": "exceptions",
    "InvalidParameterError": "exceptions",
    "NotFittedError": "exceptions",
    "OpboostError": "exceptions",
    "OpboostWarning": "exceptions",
    "PluginError": "exceptions",
    # fit_metadata
    "opboost_version": "fit_metadata",
    "policy_metadata": "fit_metadata",
    "policy_values": "fit_metadata",
    # hookspecs
    "HOOKS": "hookspecs",
    "PROJECT_NAME": "hookspecs",
    "hookimpl": "hookspecs",
    # lazy
    "lazy_attributes": "lazy",
    # learner
    "BaseLearner": "learner",
    "Ensemble": "learner",
    # learner_toolkit
    "HESSIAN_UNITS": "learner_toolkit",
    "dumps_checked": "learner_toolkit",
    "learner_seed": "learner_toolkit",
    "loads_checked": "learner_toolkit",
    "prepare_inputs": "learner_toolkit",
    "wls_gradients": "learner_toolkit",
    "wls_terms": "learner_toolkit",
    # loss_feedback
    "FullLoss": "loss_feedback",
    "LABEL_CONSTRAINTS": "loss_feedback",
    "LABEL_SETS": "loss_feedback",
    "LOSSES": "loss_feedback",
    "LossFeedbackLearner": "loss_feedback",
    "project": "loss_feedback",
    "sample_unit_sphere": "loss_feedback",
    "spherical_gradient": "loss_feedback",
    # objective
    "Objective": "objective",
    "REDUCTIONS": "objective",
    "closed_form_step": "objective",
    "policy_terms": "objective",
    # online
    "OnlineLearner": "online",
    "as_context": "online",
    # policy
    "CONSTANT_FORMAT": "policy",
    "CONSTANT_FORMAT_VERSION": "policy",
    "ConstantEnsemble": "policy",
    "ConstantPolicy": "policy",
    "FORMAT_VERSION": "policy",
    "MANIFEST_DIGEST": "policy",
    "MAX_POLICY_BYTES": "policy",
    "Policy": "policy",
    "SUPPORTED_FORMAT_VERSIONS": "policy",
    "manifest_digest": "policy",
    # policy_learner
    "PolicyLearner": "policy_learner",
    # round_state
    "ActionState": "round_state",
    "RoundState": "round_state",
    # validation
    "check_choice": "validation",
    "check_fitted": "validation",
    "check_random_state": "validation",
    "check_scalar": "validation",
    # data.candidates
    "Candidates": "data.candidates",
    "candidate_pairs": "data.candidates",
    "check_candidates": "data.candidates",
    "count_candidates": "data.candidates",
    "first_outside": "data.candidates",
    "is_candidate": "data.candidates",
    # data.field_checks
    "MAX_ACTIONS": "data.field_checks",
    "as_real": "data.field_checks",
    "bad_propensity": "data.field_checks",
    "check_action_features": "data.field_checks",
    "check_actions": "data.field_checks",
    "check_columns": "data.field_checks",
    "check_contexts": "data.field_checks",
    "check_logging_probs": "data.field_checks",
    "check_n_actions": "data.field_checks",
    "check_positions": "data.field_checks",
    "check_row_fields": "data.field_checks",
    "first_missing": "data.field_checks",
    "readonly": "data.field_checks",
    # data.frame_feedback
    "check_field_columns": "data.frame_feedback",
    "feedback_column": "data.frame_feedback",
    # data.logged
    "LoggedBandit": "data.logged",
    "check_data": "data.logged",
    "check_eval_data": "data.logged",
    # data.obp_format
    "REQUIRED_KEYS": "data.obp_format",
    "feedback_fields": "data.obp_format",
    "logging_slot": "data.obp_format",
    # data.pair_interaction
    "PairInteraction": "data.pair_interaction",
    # data.pairs
    "ACTION_SCHEMA_KEY": "data.pairs",
    "ActionSchema": "data.pairs",
    "PairRows": "data.pairs",
    "pair_features": "data.pairs",
    # data.slots
    "MASKED_SCORE": "data.slots",
    "SlotView": "data.slots",
    "mask_slots": "data.slots",
    # data.tabular
    "ActionCatalogueWarning": "data.tabular",
    "MISSING_CODE": "data.tabular",
    "TabularSchema": "data.tabular",
    "action_indices": "data.tabular",
    "check_same_schema": "data.tabular",
    "check_schema": "data.tabular",
    "dataframe_fields": "data.tabular",
    "frame_schema": "data.tabular",
    "use_categorical_features": "data.tabular",
    # data.table_reader
    "TableReader": "data.table_reader",
    # data.tabular_frames
    "action_ids_of": "data.tabular_frames",
    "attach_feature_names": "data.tabular_frames",
    "attach_schema": "data.tabular_frames",
    "catalogue_of": "data.tabular_frames",
    "encode_frame": "data.tabular_frames",
    "table_reader": "data.tabular_frames",
    # files.atomic
    "TooLarge": "files.atomic",
    "fsync_dir": "files.atomic",
    "json_params": "files.atomic",
    "json_safe": "files.atomic",
    "read_regular": "files.atomic",
    "write_atomic": "files.atomic",
    # files.policy_save
    "ENSEMBLE_FILE": "files.policy_save",
    "ENSEMBLE_NAME_RE": "files.policy_save",
    "MANIFEST_FILE": "files.policy_save",
    "MAX_MANIFEST_BYTES": "files.policy_save",
    "save_directory": "files.policy_save",
    # files.saved_schema
    "check_saved_schema": "files.saved_schema",
    # files.model_consistency
    "check_model_consistency": "files.model_consistency",
    # lgbm.action_trees
    "class_model": "lgbm.action_trees",
    "per_action_model": "lgbm.action_trees",
    # lgbm.onehot_scores
    "onehot_action_scores": "lgbm.onehot_scores",
    "split_actions": "lgbm.onehot_scores",
    # lgbm.ensemble
    "LIGHTGBM_FORMAT": "lgbm.ensemble",
    "LightGBMEnsemble": "lgbm.ensemble",
    # lgbm.layout
    "LAYOUTS": "lgbm.layout",
    "PROBE_MIN_ROWS": "lgbm.layout",
    "PROBE_ROUNDS": "lgbm.layout",
    "fetch_scores": "lgbm.layout",
    "fit_layout": "lgbm.layout",
    "merge_in_front": "lgbm.layout",
    "score_change": "lgbm.layout",
    "set_round_leaves": "lgbm.layout",
    "stored_leaves": "lgbm.layout",
    "update_one_iter": "lgbm.layout",
    # lgbm.model_fields
    "FLOAT_RE": "lgbm.model_fields",
    "check_features": "lgbm.model_fields",
    "check_tail": "lgbm.model_fields",
    # lgbm.model_text
    "check_model_text": "lgbm.model_text",
    "leaf_values": "lgbm.model_text",
    # lgbm.split_codes
    "categorical_split_codes": "lgbm.split_codes",
    # lgbm.params
    "CATEGORICAL_FEATURES": "lgbm.params",
    "LIGHTGBM_PARAMS": "lgbm.params",
    "LIGHTGBM_TREE_CONSTRAINTS": "lgbm.params",
    "TREE_ONLY_DEFAULTS": "lgbm.params",
    "check_lightgbm_params": "lgbm.params",
    "lightgbm_aliases": "lgbm.params",
    "lightgbm_params_problem": "lgbm.params",
    "tree_params": "lgbm.params",
    # lgbm.process_threads
    "default_threads": "lgbm.process_threads",
    "keeping_threads": "lgbm.process_threads",
    "use_threads": "lgbm.process_threads",
    # lgbm.sampling
    "GOSS_MIN_CELLS": "lgbm.sampling",
    "GOSS_MIN_COLUMNS": "lgbm.sampling",
    "GOSS_PARAMS": "lgbm.sampling",
    "MAX_LEAF_TABLE": "lgbm.sampling",
    "ROW_SAMPLINGS": "lgbm.sampling",
    "booster_without_sampling": "lgbm.sampling",
    "designed_shape": "lgbm.sampling",
    "full_row_leaves": "lgbm.sampling",
    "last_leaf_values": "lgbm.sampling",
    "leaf_sums": "lgbm.sampling",
    "leaves_from_sums": "lgbm.sampling",
    "row_sampling_params": "lgbm.sampling",
    "set_last_leaves": "lgbm.sampling",
    "set_leaf_outputs": "lgbm.sampling",
    "set_tree_leaves": "lgbm.sampling",
    "splits_on_actions": "lgbm.sampling",
    "use_full_row_leaves": "lgbm.sampling",
    # lgbm.rows
    "ACTION_DESIGNS": "lgbm.rows",
    "DesignedRowsCache": "lgbm.rows",
    "ROW_WISE_MAX_BINS": "lgbm.rows",
    "action_tilt": "lgbm.rows",
    "categorical_columns": "lgbm.rows",
    "context_rows_cache": "lgbm.rows",
    "design_rows": "lgbm.rows",
    "histogram_layout": "lgbm.rows",
    "pairs_dataset": "lgbm.rows",
    "repeated_rows": "lgbm.rows",
    "stacked_dataset": "lgbm.rows",
    # lgbm.threads
    "AUTO": "lgbm.threads",
    "FIT_WORK_PER_THREAD": "lgbm.threads",
    "NUM_THREADS": "lgbm.threads",
    "PREDICT_WORK_PER_THREAD": "lgbm.threads",
    "free_cores": "lgbm.threads",
    "lightgbm_threads": "lgbm.threads",
    "usable_cores": "lgbm.threads",
    # numerics.arrays
    "dot": "numerics.arrays",
    "one_hot": "numerics.arrays",
    "row_sums": "numerics.arrays",
    # numerics.contexts
    "as_contexts": "numerics.contexts",
    "check_finite_contexts": "numerics.contexts",
    # numerics.design
    "ENCODINGS": "numerics.design",
    "action_rows": "numerics.design",
    "stacked_design": "numerics.design",
    # numerics.memory_limit
    "CELL_BYTES": "numerics.memory_limit",
    "STACKED_ROW_BYTES": "numerics.memory_limit",
    "cgroup_left": "numerics.memory_limit",
    "check_memory": "numerics.memory_limit",
    "check_stacked_fit": "numerics.memory_limit",
    "memory_left": "numerics.memory_limit",
    "memory_problem": "numerics.memory_limit",
    "stacked_fit_bytes": "numerics.memory_limit",
    # numerics.plackett_luce
    "conditional_distributions": "numerics.plackett_luce",
    "marginal_distributions": "numerics.plackett_luce",
    "plackett_luce_weights": "numerics.plackett_luce",
    "prefix_probabilities": "numerics.plackett_luce",
    "sample_plackett_luce": "numerics.plackett_luce",
    # numerics.problem
    "BaseProblem": "numerics.problem",
    # numerics.row_blocks
    "BLOCK_VALUES": "numerics.row_blocks",
    "RowWeightedProblem": "numerics.row_blocks",
    "add_scaled": "numerics.row_blocks",
    "gradient_products": "numerics.row_blocks",
    "logged_gradient": "numerics.row_blocks",
    "row_blocks": "numerics.row_blocks",
    # numerics.softmax
    "softmax": "numerics.softmax",
    "softmax_and_log_norm": "numerics.softmax",
    # serving.catalogue
    "action_schema_of": "serving.catalogue",
    "catalogue_scores": "serving.catalogue",
    # serving.exploration
    "ExplorationMixin": "serving.exploration",
    "check_exploration": "serving.exploration",
    "draw": "serving.exploration",
    "exploration_distribution": "serving.exploration",
    "sample_slates": "serving.exploration",
    # serving.masks
    "mask_scores": "serving.masks",
    "serving_mask": "serving.masks",
    "top_k": "serving.masks",
    # slate_dr_terms
    "cascade_dr_terms": "slate_dr_terms",
    "impression_values": "slate_dr_terms",
    "independent_dr_terms": "slate_dr_terms",
    # slates
    "SlateLogs": "slates",
    "SlatePolicy": "slates",
    "slate_inputs": "slates",
}

_LAZY = {name: f"opboost.api.{module}" for name, module in _HOMES.items()}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_attributes("opboost.api", _LAZY, globals())
