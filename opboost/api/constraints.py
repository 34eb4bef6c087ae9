"""Declarative parameter constraints, in the style of scikit-learn's ``_parameter_constraints``.

A component declares, per constructor parameter, the list of values it accepts::

    _parameter_constraints: ClassVar[dict] = {
        "n_rounds": [Interval(Integral, 1, None, fix="use e.g. 100")],
        "scale": [Interval(Real, 0.0, None, closed="neither"), None],
        "mode": [Options(("auto", "min", "max"))],
        "safe": ["boolean", Rule(needs_holdout, "needs held-out logs", fix="...")],
    }

The entries of a list are alternatives (the value must satisfy one of them): an
[`Interval`][opboost.api.constraints.Interval], [`Options`][opboost.api.constraints.Options],
[`InstanceOf`][opboost.api.constraints.InstanceOf], [`Satisfies`][opboost.api.constraints.Satisfies]
(any predicate), ``None`` (the value None), ``"boolean"`` (True or False) or ``"random_state"``
(None, an int >= 0 or a ``numpy.random.Generator``). Two entries are not alternatives: a
[`Rule`][opboost.api.constraints.Rule] is a cross-parameter check run once every parameter satisfies
its own constraints, and [`Skip`][opboost.api.constraints.Skip] says when the parameter is unused,
so not checked at all.

[`validate_params`][opboost.api.constraints.validate_params] checks a dict of parameters against
such a table and raises [`InvalidParameterError`][opboost.api.exceptions.InvalidParameterError] with
the project's message::

    The 'n_rounds' parameter of Booster must be an int >= 1. Got 0 instead; use e.g. 100.

The same table serves [`Component.validate_params`][opboost.api.component.Component.validate_params]
(at fit) and [`check_params`][opboost.api.component.Component.check_params] (configs, at parse
time).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError

__all__ = [
    "Constraint",
    "InstanceOf",
    "Interval",
    "Options",
    "Rule",
    "Satisfies",
    "Skip",
    "describe_constraints",
    "make_constraint",
    "validate_params",
]

_CLOSED = ("both", "left", "right", "neither")


def _fix(fix: str | None) -> str:
    return f"; {fix}." if fix else "."


def _article(text: str) -> str:
    return ("an " if text[:1] in "aeiou" else "a ") + text


def _type_name(kind: type) -> str:
    return {numbers.Real: "float", numbers.Integral: "int", str: "str", bool: "bool"}.get(
        kind, getattr(kind, "__name__", str(kind))
    )


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


class Constraint:
    """One accepted kind of value. ``fix`` is the hint appended to the error message."""

    fix: str | None = None

    def is_satisfied_by(self, value: Any) -> bool:
        """Whether ``value`` is accepted."""
        raise NotImplementedError

    def type_text(self) -> str:
        """What the constraint accepts, after "must be" ("an int", "None", "one of {...}")."""
        raise NotImplementedError

    def failure(self, value: Any) -> str | None:
        """For a value of the right type outside the constraint: what it must be (after
        "must be"), e.g. "an int >= 1"; None when the value is not of the right type."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.type_text()}>"


class _NoneConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return value is None

    def type_text(self) -> str:
        return "None"


class _Boolean(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return _is_bool(value)

    def type_text(self) -> str:
        return "True or False"


class _RandomState(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return (
            value is None
            or (isinstance(value, numbers.Integral) and not _is_bool(value) and value >= 0)
            or isinstance(value, np.random.Generator)
        )

    def type_text(self) -> str:
        return "None, an int >= 0 or a numpy.random.Generator"


class Interval(Constraint):
    """A number of type ``kind`` (``numbers.Integral`` or ``numbers.Real``; bools never) in
    [low, high]: ``None`` bounds are open-ended, ``closed`` is "both" (default), "left",
    "right" or "neither" (which ends are included). ``finite=True`` also rejects +-inf and
    nan. Messages read "an int >= 1", "a float > 0.0 and < 1.0", "finite"."""

    def __init__(
        self,
        kind: type | tuple[type, ...],
        low: float | None = None,
        high: float | None = None,
        *,
        closed: str = "both",
        finite: bool = False,
        fix: str | None = None,
    ) -> None:
        if closed not in _CLOSED:
            raise ValueError(f"closed must be one of {_CLOSED}. Got {closed!r}.")
        self.kinds = kind if isinstance(kind, tuple) else (kind,)
        self.low, self.high, self.closed, self.finite, self.fix = low, high, closed, finite, fix

    def _type_ok(self, value: Any) -> bool:
        return isinstance(value, self.kinds) and (not _is_bool(value) or bool in self.kinds)

    def bounds(self) -> list[str]:
        """The bounds as message text, e.g. ``[">= 0", "< 1"]``."""
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>=' if left else '>'} {self.low}")
        if self.high is not None:
            bounds.append(f"{'<=' if right else '<'} {self.high}")
        return bounds

    def _in_range(self, value: Any) -> bool:
        if isinstance(value, float | np.floating) and math.isnan(value):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and (value < self.low if left else value <= self.low):
            return False
        return not (self.high is not None and (value > self.high if right else value >= self.high))

    def _finite_ok(self, value: Any) -> bool:
        return not self.finite or math.isfinite(value)

    def is_satisfied_by(self, value: Any) -> bool:
        return self._type_ok(value) and self._in_range(value) and self._finite_ok(value)

    def type_text(self) -> str:
        return _article(" or ".join(_type_name(k) for k in self.kinds))

    def failure(self, value: Any) -> str | None:
        if not self._type_ok(value):
            return None
        bounds = self.bounds()
        if bounds and not self._in_range(value):
            return f"{self.type_text()} {' and '.join(bounds)}"
        return "finite"


class Options(Constraint):
    """One of ``values`` (listed in the message in the given order). ``values`` may be a
    callable returning them, evaluated at each check (e.g. names from a registry); ``text``
    replaces the message's "one of {...}" ("{values}" in it lists them)."""

    def __init__(
        self,
        values: Iterable[Any] | Callable[[], Iterable[Any]],
        *,
        text: str | None = None,
        fix: str | None = None,
    ) -> None:
        self._values, self.text, self.fix = values, text, fix

    @property
    def values(self) -> tuple[Any, ...]:
        values = self._values() if callable(self._values) else self._values
        return tuple(values)

    def is_satisfied_by(self, value: Any) -> bool:
        try:
            return any(
                _is_bool(value) == _is_bool(option) and bool(value == option)
                for option in self.values
            )
        except (TypeError, ValueError):  # e.g. an array compared elementwise
            return False

    def type_text(self) -> str:
        values = self.values
        if self.text is not None:
            return self.text.format(values=", ".join(str(v) for v in values))
        return "one of {" + ", ".join(repr(v) for v in values) + "}"

    def failure(self, value: Any) -> str | None:
        """A value of the options' type (e.g. an unknown name) is told the options alone."""
        types = {type(v) for v in self.values}
        if len(types) == 1 and isinstance(value, next(iter(types))):
            return self.type_text()
        return None


class InstanceOf(Constraint):
    """An instance of ``types``; ``text`` names it in messages (default: "a <type>")."""

    def __init__(
        self, types: type | tuple[type, ...], text: str | None = None, *, fix: str | None = None
    ) -> None:
        self.types = types if isinstance(types, tuple) else (types,)
        self.text = text or " or ".join(_article(_type_name(t)) for t in self.types)
        self.fix = fix

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, self.types) and (not _is_bool(value) or bool in self.types)

    def type_text(self) -> str:
        return self.text


class Satisfies(Constraint):
    """Any value for which ``predicate(value)`` is true; ``text`` says what that is, e.g.
    ``Satisfies(is_regressor, "a scikit-learn regressor")``."""

    def __init__(
        self, predicate: Callable[[Any], bool], text: str, *, fix: str | None = None
    ) -> None:
        self.predicate, self.text, self.fix = predicate, text, fix

    def is_satisfied_by(self, value: Any) -> bool:
        try:
            return bool(self.predicate(value))
        except Exception:
            return False

    def type_text(self) -> str:
        return self.text


class Rule:
    """A cross-parameter (or whole-value) rule of the parameter it is listed under, checked
    after every parameter satisfies its own constraints.

    ``check(params)`` gets all the parameters (a dict) and returns True (or None) when they
    are fine, False to fail with ``message``, or a string: the failure message itself.
    ``message`` is formatted with the parameters (``"{safe}"``) and follows "The 'x'
    parameter of Owner", e.g. ``"needs validation_fraction. Got safe={safe!r}"``.
    """

    def __init__(
        self,
        check: Callable[[dict[str, Any]], bool | str | None],
        message: str = "is invalid",
        *,
        fix: str | None = None,
    ) -> None:
        self.check, self.message, self.fix = check, message, fix

    def problem(self, params: Mapping[str, Any]) -> str | None:
        """The failure message, or None when the rule holds."""
        result = self.check(dict(params))
        if result is True or result is None:
            return None
        if isinstance(result, str):
            return result
        return self.message.format(**params)

    def __repr__(self) -> str:
        return f"<Rule: {self.message}>"


class Skip:
    """The parameter is unused (and not checked) when ``when(params)`` is true, e.g.
    ``Skip(lambda p: p["warm_start"] is None)``."""

    def __init__(self, when: Callable[[dict[str, Any]], bool], reason: str = "") -> None:
        self.when, self.reason = when, reason

    def __repr__(self) -> str:
        return f"<Skip: {self.reason}>"


_STRINGS: dict[str, Constraint] = {"boolean": _Boolean(), "random_state": _RandomState()}


def make_constraint(spec: Any) -> Constraint | Rule | Skip:
    """The constraint object of one list entry (``None``, "boolean", "random_state", a type
    or an object of this module)."""
    if spec is None:
        return _NoneConstraint()
    if isinstance(spec, Constraint | Rule | Skip):
        return spec
    if isinstance(spec, str) and spec in _STRINGS:
        return _STRINGS[spec]
    if isinstance(spec, type):
        return InstanceOf(spec)
    raise TypeError(f"Unknown parameter constraint {spec!r}.")


def _entries(spec: Any) -> list[Any]:
    return [make_constraint(s) for s in (spec if isinstance(spec, list | tuple) else [spec])]


def describe_constraints(spec: Any) -> str:
    """What a parameter accepts, as in error messages ("an int >= 1 or None")."""
    values = [c for c in _entries(spec) if isinstance(c, Constraint)]
    return " or ".join(
        " ".join([c.type_text(), " and ".join(c.bounds())]).strip()
        if isinstance(c, Interval)
        else c.type_text()
        for c in values
    )


def _error(name: str, owner: str, text: str, fix: str | None) -> InvalidParameterError:
    sep = "" if text.startswith((":", ",")) else " "
    end = "" if not fix and text.endswith((".", "?", "!")) else _fix(fix)
    exc = InvalidParameterError(f"The {name!r} parameter of {owner}{sep}{text}{end}")
    exc.param = name
    return exc


def _check_value(name: str, value: Any, owner: str, values: list[Constraint]) -> None:
    if not values or any(c.is_satisfied_by(value) for c in values):
        return
    for c in values:
        phrase = c.failure(value)
        if phrase is not None:
            raise _error(name, owner, f"must be {phrase}. Got {value!r} instead", c.fix)
    texts = " or ".join(c.type_text() for c in values)
    fix = next((c.fix for c in values if c.fix), None)
    raise _error(name, owner, f"must be {texts}. Got {value!r} instead", fix)


def validate_params(
    owner_name: str, constraints: Mapping[str, Any], params: Mapping[str, Any]
) -> None:
    """Check ``params`` against ``constraints`` (a ``_parameter_constraints`` table); raise
    [`InvalidParameterError`][opboost.api.exceptions.InvalidParameterError] naming ``owner_name``,
    the parameter and the bad value (``exc.param`` holds the parameter's name).

    Only the parameters present in ``params`` are checked; the rules run once every
    parameter passed its own constraints (a rule needing a missing parameter is skipped).
    """
    rules: list[tuple[str, Rule]] = []
    for name, spec in constraints.items():
        if name not in params:
            continue
        entries = _entries(spec)
        skips = [e for e in entries if isinstance(e, Skip)]
        try:
            if any(s.when(dict(params)) for s in skips):
                continue
        except KeyError:
            pass
        values = [e for e in entries if isinstance(e, Constraint)]
        _check_value(name, params[name], owner_name, values)
        rules += [(name, e) for e in entries if isinstance(e, Rule)]
    for name, rule in rules:
        try:
            problem = rule.problem(params)
        except KeyError:  # a rule about a parameter that is not given (a partial dict)
            continue
        if problem is not None:
            raise _error(name, owner_name, problem, rule.fix)
