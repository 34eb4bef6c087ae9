"""Declared parameter constraints: the vocabulary's messages, validate_params, check_params."""

from __future__ import annotations

import math
import re
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pytest

from opboost.api.component import Component
from opboost.api.constraints import (
    InstanceOf,
    Interval,
    Options,
    Rule,
    Satisfies,
    Skip,
    describe_constraints,
    validate_params,
)
from opboost.api.exceptions import ConfigError, ConfigParameterError, InvalidParameterError
from opboost.core.booster import Booster


class Toy(Component):
    """A plugin-style component declaring its constraints."""

    name: ClassVar[str] = "toy"
    kind: ClassVar[str] = "estimator"
    _parameter_constraints: ClassVar[dict] = {
        "depth": [Interval(Integral, 1, None, fix="use e.g. 3"), None],
        "rate": [Interval(Real, 0.0, 1.0, closed="right", finite=True)],
        "mode": [Options(("fast", "exact"))],
        "verbose": ["boolean"],
        "low": [Interval(Real, finite=True)],
        "high": [
            Interval(Real, finite=True),
            Rule(lambda p: p["low"] < p["high"], "must exceed low={low!r}. Got {high!r}"),
        ],
        "extra": [Interval(Integral, 0, None), Skip(lambda p: p["mode"] == "fast")],
    }

    def __init__(
        self, *, depth=3, rate=0.5, mode="fast", verbose=False, low=0.0, high=1.0, extra=0
    ):
        self.depth, self.rate, self.mode, self.verbose = depth, rate, mode, verbose
        self.low, self.high, self.extra = low, high, extra


def message(**params) -> str:
    with pytest.raises(InvalidParameterError) as info:
        Toy(**params).validate_params()
    return str(info.value)


T = "The '{}' parameter of Toy must be "


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"depth": 0}, T.format("depth") + "an int >= 1. Got 0 instead; use e.g. 3."),
        ({"depth": 2.5}, T.format("depth") + "an int or None. Got 2.5 instead; use e.g. 3."),
        ({"depth": True}, T.format("depth") + "an int or None. Got True instead; use e.g. 3."),
        ({"rate": 0.0}, T.format("rate") + "a float > 0.0 and <= 1.0. Got 0.0 instead."),
        ({"rate": math.nan}, T.format("rate") + "a float > 0.0 and <= 1.0. Got nan instead."),
        ({"low": math.inf}, T.format("low") + "finite. Got inf instead."),
        ({"mode": "slow"}, T.format("mode") + "one of {'fast', 'exact'}. Got 'slow' instead."),
        ({"mode": 3}, T.format("mode") + "one of {'fast', 'exact'}. Got 3 instead."),
        ({"verbose": "yes"}, T.format("verbose") + "True or False. Got 'yes' instead."),
        ({"high": -1.0}, "The 'high' parameter of Toy must exceed low=0.0. Got -1.0."),
        ({"mode": "exact", "extra": -1}, T.format("extra") + "an int >= 0. Got -1 instead."),
    ],
)
def test_messages(params, expected):
    assert message(**params) == expected


def test_valid_values_pass_and_skip_ignores_unused_parameters():
    Toy().validate_params()
    Toy(depth=None, rate=1, verbose=np.bool_(True), extra=-1).validate_params()  # mode "fast"
    Toy(depth=np.int64(4), mode="exact", extra=2).validate_params()


def test_error_names_the_parameter():
    with pytest.raises(InvalidParameterError) as info:
        Toy(rate=2.0).validate_params()
    assert info.value.param == "rate"


def test_rules_run_after_every_parameter_passed():
    """A bad low is reported as low, not through high's rule."""
    assert message(low="x", high=-1.0).startswith("The 'low' parameter of Toy must be a float")


def test_satisfies_and_instance_of():
    constraints = {
        "model": [None, Satisfies(lambda m: hasattr(m, "fit"), "a model with fit")],
        "path": [InstanceOf((str, bytes), "a path")],
    }
    validate_params("Owner", constraints, {"model": None, "path": "x"})
    with pytest.raises(InvalidParameterError, match=r"must be None or a model with fit\. Got 3"):
        validate_params("Owner", constraints, {"model": 3, "path": "x"})
    with pytest.raises(InvalidParameterError, match=r"'path' parameter of Owner must be a path"):
        validate_params("Owner", constraints, {"model": None, "path": 1})


def test_options_from_a_callable_with_text():
    names = Options(lambda: ["a", "b"], text="a registered name, one of {values}")
    with pytest.raises(InvalidParameterError, match=r"must be a registered name, one of a, b\."):
        validate_params("Owner", {"x": [names]}, {"x": "c"})


def test_describe_constraints():
    assert describe_constraints(Toy._parameter_constraints["depth"]) == "an int >= 1 or None"
    assert describe_constraints(Toy._parameter_constraints["rate"]) == "a float > 0.0 and <= 1.0"


# --- check_params: would-be constructor parameters (configs) --------------------------------


def test_check_params_locates_the_error_at_the_parameter_key():
    with pytest.raises(ConfigParameterError) as info:
        Toy.check_params({"depth": 0}, "c.toml [algorithms[1].estimator]")
    exc = info.value
    assert str(exc) == (
        "c.toml [algorithms[1].estimator.depth]: The 'depth' parameter of Toy must be an int "
        ">= 1. Got 0 instead; use e.g. 3."
    )
    assert (exc.file, exc.key, exc.param) == ("c.toml", "algorithms[1].estimator.depth", "depth")
    assert isinstance(exc, ConfigError) and isinstance(exc, InvalidParameterError)


def test_check_params_unknown_names_list_the_valid_ones():
    with pytest.raises(ConfigParameterError) as info:
        Toy.check_params({"dept": 2}, "c.toml [algorithms[0].estimator]", managed={"extra"})
    assert str(info.value) == (
        "c.toml [algorithms[0].estimator.dept]: estimator 'toy' (Toy) has no parameter "
        "'dept'. Valid: depth, rate, mode, verbose, low, high. Did you mean 'depth'?"
    )


def test_check_params_checks_defaults_and_rules_too():
    Toy.check_params({})
    with pytest.raises(ConfigParameterError, match=r"^\[high\]: The 'high' parameter"):
        Toy.check_params({"high": -1.0}, "[]")
    with pytest.raises(ConfigParameterError, match=r"^The 'high' parameter of Toy must exceed"):
        Toy.check_params({"high": -1.0})


def test_check_params_without_a_key_path():
    with pytest.raises(ConfigParameterError) as info:
        Toy.check_params({"rate": 5}, "c.toml")
    assert str(info.value).startswith("c.toml [rate]: The 'rate' parameter of Toy")


# --- the Booster -----------------------------------------------------------------------------


def test_booster_negative_n_rounds_message_names_the_fix(synthetic_log):
    expected = (
        "The 'n_rounds' parameter of Booster must be an int >= 0 and <= 1000000. Got -1 "
        "instead; use a number of boosting rounds such as 100 (0: the start alone), or 'auto'."
    )
    with pytest.raises(InvalidParameterError, match=f"^{re.escape(expected)}$"):
        Booster(n_rounds=-1).fit(synthetic_log.data)
    with pytest.raises(ConfigParameterError, match=re.escape(f"[b.n_rounds]: {expected}")):
        Booster.check_params({"n_rounds": -1}, "c.toml [b]")


def test_booster_cross_parameter_rules():
    with pytest.raises(InvalidParameterError, match=r"'safe' parameter of Booster needs held-out"):
        Booster(safe=True, validation_fraction=None).validate_params()
    Booster(safe=True, validation_fraction=0.2).validate_params()
    Booster(safe=True).validate_params()  # "auto" holds out logs for the fallback
    Booster(warm_start="none", warm_start_prob=1.5).validate_params()  # unused: no start
    with pytest.raises(InvalidParameterError, match=r"'warm_start_prob' parameter of Booster"):
        Booster(warm_start="logging", warm_start_prob=1.5).validate_params()


def test_booster_check_params_names_unknown_parameters():
    with pytest.raises(ConfigParameterError, match=r"Booster has no parameter 'n_round'.*n_rounds"):
        Booster.check_params({"n_round": 3}, "c.toml [algorithms[0].booster]")
