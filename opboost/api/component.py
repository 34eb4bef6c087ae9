"""The base class every plugin component derives from.

A component is a scikit-learn style object: ``__init__`` takes keyword-only parameters and
only stores them, ``get_params``/``set_params``/``clone`` introspect that signature, and
validation runs at first use. Each concrete class declares its registry ``name`` (snake_case,
unique per kind) and ``kind``.

Parameters are validated from one declaration, ``_parameter_constraints`` (see
[`opboost.api.constraints`][opboost.api.constraints]):
[`Component.validate_params`][opboost.api.component.Component.validate_params] checks an instance
(at first use), [`Component.check_params`][opboost.api.component.Component.check_params] a dict of
would-be constructor parameters (a config, at parse time). Checks the declaration cannot express
go in [`Component.validate`][opboost.api.component.Component.validate], which a config check calls
too.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Collection, Mapping
from typing import Any, ClassVar

from sklearn.base import BaseEstimator, clone

from opboost.api.constraints import validate_params
from opboost.api.exceptions import ConfigParameterError, InvalidParameterError

__all__ = ["KINDS", "Component", "check_params", "clone", "constructor_defaults"]

#: Plugin kinds, in the order ``opboost plugins`` lists them.
KINDS: tuple[str, ...] = (
    "objective",
    "estimator",
    "base_learner",
    "online_learner",
    "policy_learner",
    "dataset",
    "callback",
)


_PARAM_NAMES: dict[type, tuple[str, ...]] = {}


class Component(BaseEstimator):
    """Base of every plugin component (objectives, estimators, learners, data sets, ...)."""

    #: Registry name, snake_case, unique within ``kind``.
    name: ClassVar[str] = ""
    #: One of :data:`KINDS`.
    kind: ClassVar[str] = ""

    #: Accepted values of every constructor parameter (:mod:`opboost.api.constraints`).
    _parameter_constraints: ClassVar[dict[str, Any]] = {}

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        """Parameters that make a small, fast instance for the contract checks."""
        return {}

    @classmethod
    def describe(cls) -> str:
        """How messages name the class: "base_learner 'lightgbm_tree' (LightGBMTree)"."""
        return f"{cls.kind} {cls.name!r} ({cls.__name__})"

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names (scikit-learn's), read from its signature once
        per class: ``get_params`` runs every round (``validate_params``), and the signature
        took a fifth of a small log's Python work per round."""
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = tuple(super()._get_param_names())
        return list(names)

    def validate_params(self) -> None:
        """Check the parameters against ``_parameter_constraints``; raise
        [`InvalidParameterError`][opboost.api.exceptions.InvalidParameterError] on the first bad
        one."""
        validate_params(type(self).__name__, self._parameter_constraints, self.get_params(False))

    # scikit-learn's name for the same check (its own runs on sklearn's constraint objects)
    _validate_params = validate_params

    def validate(self) -> None:
        """Check what ``_parameter_constraints`` cannot express; by default nothing.

        Override it to raise
        [`InvalidParameterError`][opboost.api.exceptions.InvalidParameterError] naming the
        parameter and the fix. A config is checked at parse time by the declared constraints
        and then, for a class that overrides this method, by building the component from the
        config's parameters and calling ``validate()``: it must work without data and without
        fitting. Any other exception it raises is reported as a config error naming the plugin.
        """

    def seeded(self, seed: int) -> Component:
        """Set ``random_state`` to ``seed`` when this component has that parameter and left
        it None (an unseeded estimator with a reward model takes the fit's seed); returns
        self."""
        if self.get_params(deep=False).get("random_state", 0) is None:
            self.set_params(random_state=seed)
        return self

    @classmethod
    def check_params(
        cls, params: Mapping[str, Any], where: str = "", *, managed: Collection[str] = ()
    ) -> None:
        """Validate would-be constructor ``params`` without building the component.

        Unknown names (listing the valid ones, with a "did you mean") and values breaking
        ``_parameter_constraints`` raise
        [`ConfigParameterError`][opboost.api.exceptions.ConfigParameterError] (a ConfigError and an
        InvalidParameterError) whose message starts with ``where`` plus the parameter, e.g.
        ``where="c.toml [algorithms[1].base_learner]"`` gives ``c.toml
        [algorithms[1].base_learner.num_leaves]: The 'num_leaves' parameter of LightGBMTree must be
        an int >= 2 and <= 131072. Got 1 instead.`` ``managed`` names parameters the caller sets
        itself: they are left out of the listed valid names. Parameters not given are checked at
        their constructor defaults.
        """
        check_params(cls, cls.describe(), params, where, managed=managed)


def constructor_defaults(cls: type) -> dict[str, Any]:
    """``cls.__init__``'s parameters and defaults (``inspect.Parameter.empty`` if required)."""
    return {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


_WHERE = re.compile(r"^(?P<file>.*?) ?\[(?P<key>.*)\]$")


def _located(message: str, where: str, param: str | None) -> ConfigParameterError:
    """The error at ``where`` (a file and a bracketed key path, either optional)."""
    if not where:
        return ConfigParameterError(message, param=param)
    found = _WHERE.match(where)
    file, key = (found["file"] or None, found["key"]) if found else (where or None, "")
    if param:
        key = f"{key}.{param}" if key else param
    return ConfigParameterError(message, file=file, key=key or None, param=param)


def check_params(
    cls: type,
    described: str,
    params: Mapping[str, Any],
    where: str = "",
    *,
    managed: Collection[str] = (),
) -> None:
    """[`Component.check_params`][opboost.api.component.Component.check_params] for any class with
    ``_parameter_constraints`` (the Booster too); ``described`` names the class in the
    unknown-parameter message."""
    defaults = constructor_defaults(cls)
    valid = [p for p in defaults if p not in managed]
    for param in params:
        if param not in defaults:
            close = difflib.get_close_matches(str(param), valid, n=3, cutoff=0.6)
            hint = " Did you mean " + " or ".join(map(repr, close)) + "?" if close else ""
            raise _located(
                f"{described} has no parameter {param!r}. Valid: {', '.join(valid) or 'none'}."
                f"{hint}",
                where,
                param,
            )
    full = {k: v for k, v in defaults.items() if v is not inspect.Parameter.empty}
    full.update(params)
    try:
        validate_params(cls.__name__, cls._parameter_constraints, full)
    except InvalidParameterError as exc:
        param = exc.param if exc.param in params else None
        raise _located(str(exc), where, param) from exc
