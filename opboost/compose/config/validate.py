"""The checks of config values: known keys (with "did you mean" suggestions), types like the
constructor's defaults, constructor parameters, and each component's own parameter checks run
without data at parse time. A failure is a :class:`ConfigError` naming the file and the key."""

from __future__ import annotations

import difflib
import inspect
import numbers
import re
from collections.abc import Callable
from typing import Any

from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.compose.config.specs import ComponentSpec
from opboost.core.registry import get_registry

__all__ = [
    "check_keys",
    "check_param",
    "check_params",
    "check_type",
    "parameter_error",
    "run_component_checks",
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


#: Methods a component validates its parameters with, called without data at parse time
#: (those taking a seed get 0). Plugins may define ``_check_params()`` to take part.
_CHECK_METHODS: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("_check_params", ()),
    ("_check", ()),
    ("_check_label_params", ()),
    ("_lgb_params", (0,)),
    ("lgb_params", (0,)),
)
_PARAM_IN_MESSAGE = re.compile(r"The '(\w+)' parameter")


class _ProbeStop(Exception):
    """A probed callback asked for fit state: its parameter checks are behind it."""


class _ProbeEnv:
    """The fit environment a callback's ``on_fit_start`` sees at parse time: empty history,
    and any other attribute stops the probe."""

    history: dict[str, Any] = {}  # noqa: RUF012 - read-only probe

    def __getattr__(self, name: str) -> Any:
        raise _ProbeStop(name)


def _takes(method: Any, n_args: int) -> bool:
    """Whether the bound ``method`` can be called with ``n_args`` positional arguments."""
    try:
        inspect.signature(method).bind(*range(n_args))
    except (TypeError, ValueError):
        return False
    return True


def run_component_checks(obj: Any, kind: str) -> None:
    """Run ``obj``'s own parameter checks without data; raises InvalidParameterError.

    Calls the validation methods of :data:`_CHECK_METHODS` that ``obj`` has (only the first
    of ``_check_params``/``_lgb_params``/``lgb_params``, which overlap), then probes the
    checks that run at first use: a callback's ``on_fit_start`` (stopped as soon as it needs
    fit state) and an online learner's ``predict_one`` on one zero context.
    """
    calls: list[Callable[[], Any]] = []
    done_lgb = False
    for name, args in _CHECK_METHODS:
        method = getattr(obj, name, None)
        if not callable(method) or not _takes(method, len(args)):
            continue
        if name in ("_check_params", "_lgb_params", "lgb_params"):
            if done_lgb:
                continue
            done_lgb = True
        calls.append(lambda method=method, args=args: method(*args))
    if kind == "callback" and hasattr(obj, "on_fit_start"):
        calls.append(lambda: obj.on_fit_start(_ProbeEnv()))
    elif kind == "online_learner" and hasattr(obj, "predict_one"):
        import numpy as np

        calls.append(lambda: obj.predict_one(np.zeros(2)))
    for call in calls:
        try:
            call()
        except InvalidParameterError:
            raise
        except Exception:  # only parameter errors are reported at parse time;
            pass  # anything else (a check that needs data) is left to the trial


def parameter_error(exc: InvalidParameterError, params: dict[str, Any], file: str, key: str):
    """``exc`` as a ConfigError at the key of the parameter it names (when set in the file)."""
    found = _PARAM_IN_MESSAGE.search(str(exc))
    param = found.group(1) if found else None
    where = f"{key}.{param}" if param in params else key
    return ConfigError(str(exc), file=file, key=where)


def validate_component(
    spec: ComponentSpec, file: str, key: str, extra: dict[str, Any] | None = None
) -> None:
    """Build ``spec`` (with ``extra`` managed values) and run its own checks; a failure is a
    ConfigError naming ``file`` and the key of the bad parameter."""
    cls = get_registry().get(spec.kind, spec.name)
    if getattr(cls, "_parameter_constraints", None):  # declared: checked without building it
        cls.check_params(spec.params, f"{file} [{key}]", managed=tuple(extra or ()))
        return
    accepted = _signature_defaults(cls)  # a plugin that declares no constraints: probe it
    extra = {k: v for k, v in (extra or {}).items() if k in accepted and k not in spec.params}
    try:
        obj = spec.build(**extra)
        run_component_checks(obj, spec.kind)
    except InvalidParameterError as exc:
        raise parameter_error(exc, spec.params, file, key) from exc
