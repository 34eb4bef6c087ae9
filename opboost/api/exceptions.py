"""Exception and warning types raised by opboost.

Every error names the thing that is wrong (parameter, field, plugin, file, key) and,
where one exists, the fix.
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

__all__ = [
    "ConfigError",
    "ConfigParameterError",
    "HiddenLabelError",
    "InsufficientMemoryError",
    "InvalidParameterError",
    "NotFittedError",
    "OpboostError",
    "OpboostWarning",
    "PluginError",
]


class OpboostError(Exception):
    """Base class of every opboost error."""


class InvalidParameterError(OpboostError, ValueError, TypeError):
    """A constructor parameter or argument has a wrong type or value; ``param`` names the
    parameter when the error comes from declared constraints (else None)."""

    param: str | None = None


class NotFittedError(OpboostError, _SklearnNotFittedError):
    """A method that needs a fitted model was called before ``fit``; also scikit-learn's
    ``NotFittedError`` (a ValueError and AttributeError), so its tools recognise it."""


class PluginError(OpboostError):
    """A plugin could not be loaded, validated, or looked up."""


class ConfigError(OpboostError, ValueError):
    """A config file is invalid; carries the file and the key path."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None):
        where = ""
        if file is not None:
            where = str(file)
            if key:
                where += f" [{key}]"
            where += ": "
        elif key:
            where = f"[{key}]: "
        super().__init__(where + message)
        self.file = file
        self.key = key


class ConfigParameterError(ConfigError, InvalidParameterError):
    """A component parameter given in a config (or any dict of would-be constructor
    parameters) is unknown or breaks the component's declared constraints; ``key`` ends with
    the parameter's name."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        param: str | None = None,
    ):
        super().__init__(message, file=file, key=key)
        self.param = param


class InsufficientMemoryError(OpboostError, MemoryError):
    """A fit or a prediction would need more memory than the process may use: raised before
    anything is allocated (LightGBM dies by a signal, not a MemoryError, when its own
    allocations fail), with the estimate, the limit and what to do instead."""


class OpboostWarning(UserWarning):
    """A condition the user should know about but that does not stop the run."""


class HiddenLabelError(OpboostError, PermissionError):
    """Something tried to read feedback the bandit setting does not reveal (a label hidden
    by a simulated environment)."""
