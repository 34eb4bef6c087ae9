"""The opboost plugin SDK: every interface a plugin implements or uses, in one place.

Core (the booster, registry, policies) and the algorithms (objectives, estimators, learners,
online learners) both build on this package and on nothing of each other; a third-party
plugin imports only from here (and from :mod:`opboost.testing` in its tests).

========================  =================================================================
module                    what it holds
========================  =================================================================
``component``             :class:`Component` (the base of every plugin class) and the kinds
``hookspecs``             the pluggy hook specifications and ``hookimpl``
``exceptions``            the error and warning classes
``validation``            parameter checks with the project's messages
``constraints``           declared ``_parameter_constraints`` and :func:`validate_params`
``files``                 crash-safe writes and JSON-safe values
``memory_limit``          a fit's memory estimate against the process's limits
``data``                  :class:`LoggedBandit`, the logged-feedback data model
``data_checks``,          its field checks; Open Bandit Pipeline's bandit-feedback dict;
``obp_format``,           the per-row candidate sets (eligible actions)
``candidates``
``tabular``               :class:`TabularSchema`: string and categorical columns, action ids
``design``                the stacked (x, a) design of the regression reduction
``objective``             :class:`Objective`, :class:`RoundState`, softmax and the step
``round_state``           :class:`RoundState`, :class:`ActionState` (g built on first use)
``row_blocks``            a round's (n, K) arithmetic a block of rows at a time;
                          :class:`RowWeightedProblem`
``estimator``             :class:`Estimator`, :class:`ConfidenceInterval`
``learner``               :class:`BaseLearner`, :class:`BaseProblem`, :class:`Ensemble`
``learner_toolkit``       helpers for base learners (inputs, seeds, checked model text)
``threads``               the thread count of a LightGBM (OpenMP) call: by its work and the
                          free cores
``online``, ``bandit``,   :class:`OnlineLearner`, :class:`BanditLearner`,
``loss_feedback``         :class:`LossFeedbackLearner`
``policy_learner``        :class:`PolicyLearner`
``callback``              :class:`Callback`, :class:`RoundEnv`
``dataset``               :class:`Dataset`, :class:`SupervisedData`
``policy``, ``policy_save`` :class:`Policy`, :class:`ConstantPolicy`, their crash-safe save
``saved_schema``          a saved policy's table schema, checked at load
``serving``               candidate masks and top-k slates at prediction time
``exploration``           deployed policies: epsilon-greedy or softmax exploration with
                          exact propensities (:class:`ExplorationMixin`)
``slots``, ``pairs``,     boosting on candidates and item features: :class:`SlotView`
``pair_serving``          (each row's candidates in slots), :class:`PairRows` (rows
                          [x_i; phi(a)]), :class:`ActionSchema`; scoring a catalogue
``lazy``                  lazy package attributes
========================  =================================================================

Names load lazily: ``from opboost.api import BaseLearner`` imports only what it needs.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

_LAZY: dict[str, str] = {
    "Component": "opboost.api.component",
    "KINDS": "opboost.api.component",
    "clone": "opboost.api.component",
    "HOOKS": "opboost.api.hookspecs",
    "PROJECT_NAME": "opboost.api.hookspecs",
    "hookimpl": "opboost.api.hookspecs",
    "ConfigError": "opboost.api.exceptions",
    "ConfigParameterError": "opboost.api.exceptions",
    "HiddenLabelError": "opboost.api.exceptions",
    "InsufficientMemoryError": "opboost.api.exceptions",
    "InvalidParameterError": "opboost.api.exceptions",
    "NotFittedError": "opboost.api.exceptions",
    "OpboostError": "opboost.api.exceptions",
    "OpboostWarning": "opboost.api.exceptions",
    "PluginError": "opboost.api.exceptions",
    "check_choice": "opboost.api.validation",
    "check_fitted": "opboost.api.validation",
    "check_random_state": "opboost.api.validation",
    "check_scalar": "opboost.api.validation",
    "TooLarge": "opboost.api.files.atomic",
    "fsync_dir": "opboost.api.files.atomic",
    "json_params": "opboost.api.files.atomic",
    "json_safe": "opboost.api.files.atomic",
    "read_regular": "opboost.api.files.atomic",
    "write_atomic": "opboost.api.files.atomic",
    "check_memory": "opboost.api.numerics.memory_limit",
    "check_stacked_fit": "opboost.api.numerics.memory_limit",
    "Constraint": "opboost.api.constraints",
    "InstanceOf": "opboost.api.constraints",
    "Interval": "opboost.api.constraints",
    "Options": "opboost.api.constraints",
    "Rule": "opboost.api.constraints",
    "Satisfies": "opboost.api.constraints",
    "Skip": "opboost.api.constraints",
    "validate_params": "opboost.api.constraints",
    "dot": "opboost.api.numerics.arrays",
    "one_hot": "opboost.api.numerics.arrays",
    "mask_scores": "opboost.api.serving.masks",
    "serving_mask": "opboost.api.serving.masks",
    "top_k": "opboost.api.serving.masks",
    "ExplorationMixin": "opboost.api.serving.exploration",
    "check_exploration": "opboost.api.serving.exploration",
    "draw": "opboost.api.serving.exploration",
    "exploration_distribution": "opboost.api.serving.exploration",
    "sample_slates": "opboost.api.serving.exploration",
    "row_sums": "opboost.api.numerics.arrays",
    "LoggedBandit": "opboost.api.data.logged",
    "ActionCatalogueWarning": "opboost.api.data.tabular",
    "TabularSchema": "opboost.api.data.tabular",
    "ENCODINGS": "opboost.api.numerics.design",
    "action_rows": "opboost.api.numerics.design",
    "stacked_design": "opboost.api.numerics.design",
    "ActionState": "opboost.api.objective",
    "Objective": "opboost.api.objective",
    "REDUCTIONS": "opboost.api.objective",
    "RoundState": "opboost.api.objective",
    "closed_form_step": "opboost.api.objective",
    "policy_terms": "opboost.api.objective",
    "softmax": "opboost.api.objective",
    "Estimator": "opboost.api.estimator",
    "ConfidenceInterval": "opboost.api.estimator",
    "normal_interval": "opboost.api.estimator",
    "check_action_probs": "opboost.api.estimator",
    "BaseLearner": "opboost.api.learner",
    "ActionSchema": "opboost.api.data.pairs",
    "PairRows": "opboost.api.data.pairs",
    "SlotView": "opboost.api.data.slots",
    "BaseProblem": "opboost.api.learner",
    "Ensemble": "opboost.api.learner",
    "HESSIAN_UNITS": "opboost.api.learner_toolkit",
    "as_contexts": "opboost.api.learner_toolkit",
    "dumps_checked": "opboost.api.learner_toolkit",
    "learner_seed": "opboost.api.learner_toolkit",
    "loads_checked": "opboost.api.learner_toolkit",
    "prepare_inputs": "opboost.api.learner_toolkit",
    "wls_terms": "opboost.api.learner_toolkit",
    "lightgbm_threads": "opboost.api.lgbm.threads",
    "OnlineLearner": "opboost.api.online",
    "as_context": "opboost.api.online",
    "BanditLearner": "opboost.api.bandit",
    "FullLoss": "opboost.api.loss_feedback",
    "LABEL_SETS": "opboost.api.loss_feedback",
    "LOSSES": "opboost.api.loss_feedback",
    "LossFeedbackLearner": "opboost.api.loss_feedback",
    "project": "opboost.api.loss_feedback",
    "sample_unit_sphere": "opboost.api.loss_feedback",
    "spherical_gradient": "opboost.api.loss_feedback",
    "PolicyLearner": "opboost.api.policy_learner",
    "Callback": "opboost.api.callback",
    "HistoryView": "opboost.api.callback",
    "RoundEnv": "opboost.api.callback",
    "DATA_ENV": "opboost.api.dataset",
    "Dataset": "opboost.api.dataset",
    "SupervisedData": "opboost.api.dataset",
    "find_file": "opboost.api.dataset",
    "resolve_data_dir": "opboost.api.dataset",
    "CONSTANT_FORMAT": "opboost.api.policy",
    "CONSTANT_FORMAT_VERSION": "opboost.api.policy",
    "ConstantEnsemble": "opboost.api.policy",
    "ConstantPolicy": "opboost.api.policy",
    "ENSEMBLE_FILE": "opboost.api.policy",
    "ENSEMBLE_NAME_RE": "opboost.api.policy",
    "FORMAT_VERSION": "opboost.api.policy",
    "MANIFEST_FILE": "opboost.api.policy",
    "MAX_MANIFEST_BYTES": "opboost.api.policy",
    "MAX_POLICY_BYTES": "opboost.api.policy",
    "Policy": "opboost.api.policy",
    "SUPPORTED_FORMAT_VERSIONS": "opboost.api.policy",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_attributes("opboost.api", _LAZY, globals())
