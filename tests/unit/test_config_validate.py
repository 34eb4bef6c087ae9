"""Config validation checks a component through its declared constraints and its own
``validate()``, never by probing (issue 50): before, a component without constraints was
built and its private ``_check_params``/``_lgb_params``, ``on_fit_start`` or ``predict_one``
called, and any exception but a parameter error swallowed."""

from __future__ import annotations

import re
import sys
import types
from numbers import Real
from pathlib import Path
from typing import ClassVar

import pytest

import opboost
from opboost.api.constraints import Interval
from opboost.api.estimator import Estimator
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.api.hookspecs import hookimpl
from opboost.compose.config import parse_config
from opboost.core.registry import reset_registry

MODULE = "opboost_validating_plugin"
CONFIG = {
    "data": {"name": "wine"},
    "experiment": {"seeds": [0]},
    "algorithms": [{"label": "ips", "objective": "bopl_s", "booster": {"n_rounds": 2}}],
}
CALLS: list[str] = []


class _Rewards(Estimator):
    def round_values(self, data, action_probs):
        return data.rewards


class ProbedIPS(_Rewards):
    """No declared constraints; a private check that must not run at parse time."""

    name = "probed_ips"

    def __init__(self, *, tau: float = 1.0):
        self.tau = tau

    def _check_params(self):
        CALLS.append("_check_params")
        raise InvalidParameterError("The 'tau' parameter of ProbedIPS needs the data.")


class CappedIPS(_Rewards):
    """Declared constraints plus a cross-parameter check in ``validate()``."""

    name = "capped_ips"
    _parameter_constraints: ClassVar[dict] = {
        "tau": [Interval(Real, 0.0, None)],
        "cap": [Interval(Real, 0.0, None)],
    }

    def __init__(self, *, tau: float = 1.0, cap: float = 10.0):
        self.tau = tau
        self.cap = cap

    def validate(self):
        if self.tau > self.cap:
            raise InvalidParameterError(
                f"The 'tau' parameter of CappedIPS must be <= cap ({self.cap}). Got {self.tau} "
                f"instead; lower tau or raise cap."
            )


class BuggyIPS(_Rewards):
    """A ``validate()`` with a bug in it."""

    name = "buggy_ips"

    def __init__(self, *, tau: float = 1.0):
        self.tau = tau

    def validate(self):
        raise RuntimeError("tau table not loaded")


class TableIPS(_Rewards):
    """A required parameter, so building it from a table without it fails."""

    name = "table_ips"

    def __init__(self, *, table: str):
        self.table = table

    def validate(self):
        pass


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The estimators above, registered by an installed plugin 'validating'."""
    for var in ("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", "OPBOOST_DISABLED_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    info = tmp_path / "opboost_validating-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: opboost-validating\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[opboost]\nvalidating = {MODULE}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = types.ModuleType(MODULE)
    module.opboost_register_estimators = hookimpl(
        lambda: [ProbedIPS, CappedIPS, BuggyIPS, TableIPS]
    )
    module.opboost_register_estimators.__name__ = "opboost_register_estimators"
    monkeypatch.setitem(sys.modules, MODULE, module)
    CALLS.clear()
    reset_registry()
    assert {"probed_ips", "capped_ips", "buggy_ips"} <= set(opboost.available("estimator"))
    yield
    reset_registry()


def _with_estimator(**table):
    raw = {**CONFIG, "algorithms": [dict(CONFIG["algorithms"][0], estimator=table)]}
    return parse_config(raw, file="study.toml")


def test_private_checks_are_not_probed(plugin):
    """A component without constraints or validate() is not built and probed at parse time."""
    config = _with_estimator(name="probed_ips", tau=2.0)
    assert config.algorithms[0].estimator.params == {"tau": 2.0}
    assert CALLS == []


def test_validate_error_names_file_key_and_parameter(plugin):
    """validate() runs after the declared constraints, with the config's parameters."""
    _with_estimator(name="capped_ips", tau=5.0, cap=6.0)
    with pytest.raises(
        ConfigError,
        match=r"^study\.toml \[algorithms\[0\]\.estimator\.tau\]: The 'tau' parameter of "
        r"CappedIPS must be <= cap \(2\.0\)\. Got 5\.0 instead; lower tau or raise cap\.$",
    ):
        _with_estimator(name="capped_ips", tau=5.0, cap=2.0)
    with pytest.raises(ConfigError, match=r"\[algorithms\[0\]\.estimator\.cap\]: The 'cap' "):
        _with_estimator(name="capped_ips", cap=-1.0)  # the declared constraints come first


def test_unexpected_validate_error_is_reported_naming_the_plugin(plugin):
    """An exception other than InvalidParameterError from validate() is not swallowed."""
    with pytest.raises(
        ConfigError,
        match=r"^study\.toml \[algorithms\[0\]\.estimator\]: estimator 'buggy_ips' \(BuggyIPS\) "
        r"of plugin 'validating' \(opboost-validating 1\.0\) failed to check its parameters: "
        r"validate\(\) raised RuntimeError: tau table not loaded\. validate\(\) must raise "
        r"InvalidParameterError for a bad parameter; report this to the plugin's authors\.$",
    ) as caught:
        _with_estimator(name="buggy_ips")
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_config_validation_swallows_no_exception():
    """No ``except Exception: pass`` (or bare ``except: pass``) in opboost/compose/config."""
    package = Path(opboost.__file__).parent / "compose" / "config"
    swallow = re.compile(r"except(\s+(Base)?Exception)?\s*:[^\n]*\n\s*pass\b")
    offenders = [p.name for p in sorted(package.glob("*.py")) if swallow.search(p.read_text())]
    assert offenders == []


def test_a_constructor_failing_at_parse_time_is_reported_naming_the_plugin(plugin):
    with pytest.raises(
        ConfigError,
        match=r"^study\.toml \[algorithms\[0\]\.estimator\]: estimator 'table_ips' \(TableIPS\) "
        r"of plugin 'validating' \(opboost-validating 1\.0\) failed to check its parameters: "
        r"its constructor raised TypeError: .*missing 1 required keyword-only argument: 'table'\. ",
    ):
        _with_estimator(name="table_ips")
