"""Every registered component (and the Booster) declares its parameters' accepted values.

For each class: (a) every constructor parameter has an entry in ``_parameter_constraints``
(and no entry names something else), (b) the defaults and the unit-test parameters validate,
(c) a wrong-typed value of any parameter is rejected by ``check_params`` with a message naming
the class, the parameter and the value, located at the parameter's config key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from opboost.api.component import KINDS
from opboost.api.exceptions import ConfigError, ConfigParameterError, InvalidParameterError
from opboost.core.booster import Booster
from opboost.core.registry import get_registry

ROOT = Path(__file__).resolve().parents[2]

#: Classes whose default is a placeholder the user must replace (no usable default exists).
REQUIRED = {"SklearnRegressor": "estimator", "SklearnClassifier": "estimator"}

#: Settings that make a parameter used (it is skipped otherwise, see constraints.Skip).
ENABLING = {("Booster", "warm_start_prob"): {"warm_start": "best_constant"}}


class Wrong:
    """A value of a type no parameter accepts."""

    def __repr__(self) -> str:
        return "Wrong()"


def _classes() -> list:
    registry = get_registry()
    params = [pytest.param(Booster, id="Booster")]
    for kind in KINDS:
        for name in registry.names(kind):
            params.append(pytest.param(registry.get(kind, name), id=f"{kind}-{name}"))
    return params


CLASSES = _classes()


def _unit_params(cls) -> dict:
    return cls._unit_test_params() if hasattr(cls, "_unit_test_params") else {}


@pytest.mark.parametrize("cls", CLASSES)
def test_every_parameter_has_a_constraint(cls):
    declared = set(cls._parameter_constraints)
    params = set(cls._get_param_names())
    assert params - declared == set(), f"{cls.__name__}: no constraint for {params - declared}"
    assert declared - params == set(), f"{cls.__name__}: constraints of non-parameters"


@pytest.mark.parametrize("cls", CLASSES)
def test_defaults_and_unit_test_params_validate(cls):
    cls.check_params(_unit_params(cls))
    cls(**_unit_params(cls)).validate_params()
    if cls.__name__ in REQUIRED:
        param = REQUIRED[cls.__name__]
        with pytest.raises(InvalidParameterError, match=f"The '{param}' parameter of"):
            cls.check_params({})
    else:
        cls.check_params({})
        cls().validate_params()


@pytest.mark.parametrize("cls", CLASSES)
def test_wrong_type_is_rejected_naming_class_parameter_and_value(cls):
    base = _unit_params(cls)
    for param in cls._get_param_names():
        params = {**base, **ENABLING.get((cls.__name__, param), {}), param: Wrong()}
        with pytest.raises(ConfigParameterError) as info:
            cls.check_params(params, "c.toml [algorithms[1].part]")
        message = str(info.value)
        assert message.startswith(f"c.toml [algorithms[1].part.{param}]: "), message
        assert f"The '{param}' parameter of {cls.__name__} " in message, message
        assert "Got Wrong()" in message, message
        assert info.value.param == param and info.value.key == f"algorithms[1].part.{param}"
        assert isinstance(info.value, ConfigError | InvalidParameterError)
