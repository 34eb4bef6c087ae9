"""The checks of config values: known keys (with "did you mean" suggestions), types like the
constructor's defaults, constructor parameters, and each component's declared constraints and
``validate()``, run without data at parse time. A failure is a :class:`ConfigError` naming the
file and the key."""

from __future__ import annotations

import difflib
import inspect
import numbers
import re
from collections.abc import Callable
from typing import Any

from opboost.api.component import Component
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.compose.config.specs import ComponentSpec
from opboost.core.registry import get_registry

__all__ = [
    "check_keys",
    "check_param",
    "check_params",
    "check_type",
    "overrides_validate",
    "parameter_error",
    "suggest",
    "validate_component",
]


def suggest(word: str, choices: list[str]) -> str:
    """The hint ``" Did you mean 'a' or 'b'?"`` naming the ``choices`` close to ``word``
    (at most three), or ``""`` when none is."""
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""


def check_keys(
    table: dict, allowed: list[str] | tuple[str, ...], file: str, path: str, what: str
) -> None:
    """Every key of ``table`` (at key path ``path``, described as ``what``) is ``allowed``."""
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key {key!r} in {what}. Valid keys: {', '.join(allowed)}."
                f"{suggest(key, list(allowed))}",
                file=file,
                key=f"{path}.{key}" if path else key,
            )


def check_type(value: Any, default: Any, file: str, key: str) -> None:
    """Values must have the type of the parameter's default (ints are accepted for floats)."""
    if default is None or default is inspect.Parameter.empty:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, numbers.Integral):
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    elif isinstance(default, numbers.Real):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        return
    if not ok:
        raise ConfigError(
            f"must be {type(default).__name__} like its default {default!r}. "
            f"Got {value!r} ({type(value).__name__}).",
            file=file,
            key=key,
        )


def _signature_defaults(cls: type) -> dict[str, Any]:
    return {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


def check_params(
    params: dict[str, Any],
    cls: type,
    owner: str,
    managed: set[str] | frozenset[str],
    managed_message: Callable[[str], str],
    file: str,
    key: str,
) -> dict[str, Any]:
    """Check ``params`` against ``cls``'s constructor: no ``managed`` key (the config sets
    it; ``managed_message(param)`` says how), no unknown key, and, for a class that declares
    no ``_parameter_constraints`` (those are checked by :func:`validate_component`), types
    like the defaults. Returns the constructor's defaults."""
    defaults = _signature_defaults(cls)
    allowed = [p for p in defaults if p not in managed]
    typed = not getattr(cls, "_parameter_constraints", None)
    for param, val in params.items():
        if param in managed:
            raise ConfigError(managed_message(param), file=file, key=f"{key}.{param}")
        check_param(param, val, defaults, allowed, owner, file, key, typed=typed)
    return defaults


def check_param(
    param: str,
    value: Any,
    defaults: dict[str, Any],
    allowed: list[str],
    owner: str,
    file: str,
    key: str,
    *,
    typed: bool = True,
) -> None:
    """``param`` (at ``key.param``) is a parameter of ``owner`` (``defaults``: {name:
    default}; ``allowed``: the names a config may set) and, if ``typed``, ``value`` has its
    default's type."""
    if param not in defaults:
        raise ConfigError(
            f"{owner} has no parameter {param!r}. Valid: "
            f"{', '.join(allowed) or 'none'}.{suggest(param, allowed)}",
            file=file,
            key=f"{key}.{param}",
        )
    if typed:
        check_type(value, defaults[param], file, f"{key}.{param}")


_PARAM_IN_MESSAGE = re.compile(r"The '(\w+)' parameter")


def overrides_validate(cls: type) -> bool:
    """Whether ``cls`` defines its own ``validate()`` (the base's does nothing)."""
    own = getattr(cls, "validate", None)
    return callable(own) and own is not Component.validate


def parameter_error(exc: InvalidParameterError, params: dict[str, Any], file: str, key: str):
    """``exc`` as a ConfigError at the key of the parameter it names (when set in the file)."""
    param = exc.param
    if param is None:
        found = _PARAM_IN_MESSAGE.search(str(exc))
        param = found.group(1) if found else None
    where = f"{key}.{param}" if param in params else key
    return ConfigError(str(exc), file=file, key=where)


def validate_component(
    spec: ComponentSpec, file: str, key: str, managed: dict[str, Any] | None = None
) -> None:
    """Check ``spec``'s parameters against its class's declared constraints, then, if the
    class overrides ``validate()``, build it (with the ``managed`` values it accepts) and
    call it. A failure is a ConfigError naming ``file`` and the key of the bad parameter;
    any other exception from the plugin's code, one naming the plugin."""
    registry = get_registry()
    cls = registry.get(spec.kind, spec.name)
    if getattr(cls, "_parameter_constraints", None):
        cls.check_params(spec.params, f"{file} [{key}]", managed=tuple(managed or ()))
    if not overrides_validate(cls):
        return
    accepted = _signature_defaults(cls)
    extra = {k: v for k, v in (managed or {}).items() if k in accepted and k not in spec.params}
    step = "its constructor"
    try:
        component = spec.build(**extra)
        step = "validate()"
        component.validate()
    except InvalidParameterError as exc:
        raise parameter_error(exc, spec.params, file, key) from exc
    except Exception as exc:  # a bug in the plugin: reported, with the plugin named
        plugin = registry.provider(spec.kind, spec.name)
        raise ConfigError(
            f"{cls.describe()} of plugin {plugin.name!r} ({plugin.source}) failed to check its "
            f"parameters: {step} raised {type(exc).__name__}: {exc}. validate() must raise "
            f"InvalidParameterError for a bad parameter; report this to the plugin's authors.",
            file=file,
            key=key,
        ) from exc
