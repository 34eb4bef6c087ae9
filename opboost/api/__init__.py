"""The opboost plugin SDK: the contract a plugin is written against.

``opboost.api`` exports the names a plugin author needs, in three groups: the **interfaces** a
plugin implements (a component kind's base class, the hook marker, the engine extension
point), the **data** it receives (the logs, a round's state and problem, a fit's settings) and
the **helpers** it may call (declared constraints and checks, the learner toolkit, a few
numerics, the errors it raises). docs/plugins.md lists them; a plugin imports only these
(``from opboost.api import BaseLearner, hookimpl``), and ``opboost.testing`` in its tests.

Each name is defined in a module of this package, which the built-ins import directly. Beside
the interface modules, sub-packages hold a kit the contract builds on, importable by its path
but exported here only where a plugin needs it: ``data`` (the data model: the logs and their
checks, candidate sets, tabular schemas, slots and candidate pairs), ``numerics`` (a round's
row arithmetic, the softmax, the stacked design, memory limits), ``serving`` (candidate masks,
top-k slates, catalogues, exploration with exact propensities), ``files`` (crash-safe writes,
a policy's save protocol) and ``exceptions``. The LightGBM toolkit the built-in LightGBM
learners and the Dask engine share is not part of the SDK: it is :mod:`opboost.lgbm`, a layer
above it.

Names load lazily: ``from opboost.api import BaseLearner`` imports only what it needs.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

#: The interfaces a plugin implements -> the module (under opboost.api) that defines each.
_INTERFACES: dict[str, str] = {
    # every component, and the marker of its hook implementations
    "Component": "component",
    "hookimpl": "hookspecs",
    # the component kinds (one hook each)
    "Objective": "objective",
    "Estimator": "estimator",
    "BaseLearner": "learner",
    "Ensemble": "learner",
    "OnlineLearner": "online",
    "BanditLearner": "bandit",
    "LossFeedbackLearner": "loss_feedback",
    "PolicyLearner": "policy_learner",
    "Callback": "callback",
    "Dataset": "dataset",
    # the engine extension point (logs that live elsewhere)
    "RemoteLogs": "engine",
    "Engine": "engine",
    "BoosterEngine": "engine",
    "Direction": "engine",
}

#: The data a plugin receives (and what it hands back) -> its module.
_DATA: dict[str, str] = {
    # the logs
    "LoggedBandit": "data.logged",
    "TabularSchema": "data.tabular",
    "ActionSchema": "data.pairs",
    "PairRows": "data.pairs",
    "SlateLogs": "slates",
    "SlatePolicy": "slates",
    "SupervisedData": "dataset",
    # a boosting round
    "RoundState": "round_state",
    "ActionState": "round_state",
    "BaseProblem": "numerics.problem",
    "RoundEnv": "callback",
    "HistoryView": "callback",
    # a fit, its engine and what it returns
    "Components": "engine",
    "FitSettings": "engine",
    "StepSettings": "engine",
    "Fitted": "engine",
    "Policy": "policy",
    # estimates, and the losses a loss-feedback learner sees
    "ConfidenceInterval": "estimator",
    "LogsScorer": "estimator",
    "FullLoss": "loss_feedback",
}

#: The helpers a plugin may call -> their module.
_HELPERS: dict[str, str] = {
    # declared parameter constraints
    "Constraint": "constraints",
    "Interval": "constraints",
    "Options": "constraints",
    "InstanceOf": "constraints",
    "Satisfies": "constraints",
    "Rule": "constraints",
    "Skip": "constraints",
    # checks with the project's messages, and an unfitted copy of a component
    "check_scalar": "validation",
    "check_choice": "validation",
    "check_fitted": "validation",
    "check_random_state": "validation",
    "check_data": "data.logged",
    "check_action_probs": "estimator",
    "check_memory": "numerics.memory_limit",
    "clone": "component",
    # a base learner's toolkit
    "prepare_inputs": "learner_toolkit",
    "learner_seed": "learner_toolkit",
    "as_contexts": "numerics.contexts",
    "stacked_design": "numerics.design",
    "wls_terms": "learner_toolkit",
    "wls_gradients": "learner_toolkit",
    "HESSIAN_UNITS": "learner_toolkit",
    "dumps_checked": "learner_toolkit",
    "loads_checked": "learner_toolkit",
    # online learners
    "as_context": "online",
    "project": "loss_feedback",
    "sample_unit_sphere": "loss_feedback",
    "spherical_gradient": "loss_feedback",
    # scores, steps and estimates
    "softmax": "numerics.softmax",
    "policy_terms": "objective",
    "closed_form_step": "objective",
    "normal_interval": "estimator",
    "serving_mask": "serving.masks",
    "mask_scores": "serving.masks",
    "top_k": "serving.masks",
    "logs_tie_order": "serving.tie_order",
    "slate_inputs": "slates",
    # what a remote engine's fitted policy records
    "policy_metadata": "fit_metadata",
    "policy_values": "fit_metadata",
    # the errors a plugin raises (and the base class to catch)
    "OpboostError": "exceptions",
    "OpboostWarning": "exceptions",
    "InvalidParameterError": "exceptions",
    "NotFittedError": "exceptions",
    "InsufficientMemoryError": "exceptions",
}

#: The contract by purpose: group -> {name: the module under opboost.api that defines it}.
_GROUPS: dict[str, dict[str, str]] = {
    "interfaces": _INTERFACES,
    "data": _DATA,
    "helpers": _HELPERS,
}

_LAZY = {
    name: f"opboost.api.{module}" for group in _GROUPS.values() for name, module in group.items()
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_attributes("opboost.api", _LAZY, globals())
