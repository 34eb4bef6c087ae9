"""Exception and warning types raised by opboost.

Every error names the thing that is wrong (parameter, field, plugin, file, key) and,
where one exists, the fix.
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

__all__ = [
    "ConfigError",
    "HiddenLabelError",
    "InvalidParameterError",
    "NotFittedError",
    "OpboostError",
    "OpboostWarning",
    "PluginError",
]


class OpboostError(Exception):
    """Base class of every opboost error."""


class InvalidParameterError(OpboostError, ValueError, TypeError):
    """A constructor parameter or argument has a wrong type or value."""


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


class OpboostWarning(UserWarning):
    """A condition the user should know about but that does not stop the run."""


class HiddenLabelError(OpboostError, PermissionError):
    """Something tried to read feedback the bandit setting does not reveal (a label hidden
    by a simulated environment)."""
