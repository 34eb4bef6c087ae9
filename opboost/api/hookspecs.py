"""Hook specifications: one hook per plugin kind, each returning component classes.

A plugin is a module (or object) with functions marked ``@opboost.hookimpl`` whose names
match these specs. Third-party plugins are found through the ``opboost`` entry-point group::

    [project.entry-points.opboost]
    fancy = "opboost_fancy.plugin"

Built-in components register through exactly these hooks. Hooks are called with keyword
arguments; an implementation may accept a subset of a spec's arguments (none today).
Results are combined, never "last one wins": a name provided twice is an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from opboost.api.component import Component

__all__ = ["HOOKS", "PROJECT_NAME", "hookimpl"]

PROJECT_NAME = "opboost"
_hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# --- offline boosting -------------------------------------------------------------------


@_hookspec
def opboost_register_objectives() -> list[type[Component]]:
    """Return the objective classes (kind "objective") this plugin provides."""


@_hookspec
def opboost_register_estimators() -> list[type[Component]]:
    """Return the off-policy estimator classes (kind "estimator") this plugin provides."""


@_hookspec
def opboost_register_base_learners() -> list[type[Component]]:
    """Return the base learner classes (kind "base_learner") this plugin provides."""


@_hookspec
def opboost_register_callbacks() -> list[type[Component]]:
    """Return the fit callback classes (kind "callback") this plugin provides."""


# --- online boosting --------------------------------------------------------------------


@_hookspec
def opboost_register_online_learners() -> list[type[Component]]:
    """Return the online learner classes (kind "online_learner") this plugin provides."""


# --- whole-policy learners -------------------------------------------------------------


@_hookspec
def opboost_register_policy_learners() -> list[type[Component]]:
    """Return the policy learner classes (kind "policy_learner") this plugin provides."""


# --- data -------------------------------------------------------------------------------


@_hookspec
def opboost_register_datasets() -> list[type[Component]]:
    """Return the data set loader classes (kind "dataset") this plugin provides."""


# --- what a plugin cannot provide here ---------------------------------------------------


@_hookspec
def opboost_unavailable_components() -> list[tuple[str, str, str]]:
    """Return (kind, name, how to get it) for each component this plugin would provide but
    cannot in this environment (an optional dependency is missing), e.g.
    ``("base_learner", "lightgbm_dask_tree", 'pip install "opboost[dask]"')``; the registry
    adds the hint to the "Unknown ..." error for that name."""


#: Hook name for each plugin kind.
HOOKS: dict[str, str] = {
    "objective": "opboost_register_objectives",
    "estimator": "opboost_register_estimators",
    "base_learner": "opboost_register_base_learners",
    "online_learner": "opboost_register_online_learners",
    "policy_learner": "opboost_register_policy_learners",
    "dataset": "opboost_register_datasets",
    "callback": "opboost_register_callbacks",
}
