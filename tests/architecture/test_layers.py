"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml), no
private names across modules, plugins that import only the SDK, and the size limits."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "opboost"
PLUGIN_SOURCES = sorted((ROOT / "plugins").glob("*/src"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, imported names) of every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
    return found


def test_import_linter_contracts_are_kept():
    """Every contract of [tool.importlinter] in pyproject.toml is kept."""
    from importlinter import cli

    code = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    assert code == 0, "lint-imports found a broken layer contract (run `lint-imports`)"


def test_the_drawing_is_checked_by_at_least_eleven_contracts():
    """docs/architecture.md's claims each have a contract: at least 11, named."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 11
    assert all(c["name"] for c in contracts)


def test_booster_calls_no_lifecycle_hook():
    """A fit's lifecycle lives in the engine (opboost.core.loop.run_fit): the Booster neither
    calls a callback's hook nor restores a checkpoint itself."""
    text = (PACKAGE / "core" / "booster.py").read_text(encoding="utf-8")
    calls = [
        ast.unparse(node.func) for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
    ]
    hooks = [
        c for c in calls if c.split(".")[-1].startswith(("on_", "call_hook", "load_checkpoint"))
    ]
    hooks += [c for c in calls if c.split(".")[-1] in ("restore", "begin", "run_rounds")]
    assert hooks == []
    assert "run_fit" in calls


def test_one_module_per_name():
    """No two modules of opboost share a file name (a package's __init__ and the plugin
    modules that register each package's components aside)."""
    names: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name not in ("__init__.py", "plugin.py"):
            names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {n: paths for n, paths in names.items() if len(paths) > 1} == {}


def test_no_module_imports_another_modules_private_names():
    """A leading underscore is private to its module: nobody else imports it."""
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, module, names in _imports(path):
            if not module.startswith("opboost"):
                continue
            private_module = [p for p in module.split(".") if p.startswith("_")]
            private_names = [n for n in names if n.startswith("_") and n != "__version__"]
            if private_module or private_names:
                offences.append(f"{path.relative_to(ROOT)}:{line} {module} {private_names}")
    assert offences == []


@pytest.mark.parametrize("source", PLUGIN_SOURCES, ids=lambda p: p.parent.name)
def test_plugins_import_only_the_sdk(source):
    """The plugins in plugins/ use opboost only through opboost.api (and opboost.testing)."""
    offences = []
    for path in sorted(source.rglob("*.py")):
        for line, module, _ in _imports(path):
            top = module.split(".")[0]
            if top == "opboost" and not module.startswith(("opboost.api", "opboost.testing")):
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert offences == []


def _plugin_uses_of_the_sdk(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each use of the SDK in ``path`` that is not a name of the contract:
    an import of a module under opboost.api, or of a name outside ``opboost.api.__all__``."""
    import opboost.api

    found = []
    for line, module, names in _imports(path):
        if module == "opboost.api" and names:
            found += [(line, f"opboost.api.{n}") for n in names if n not in opboost.api.__all__]
        elif module == "opboost.api" or module.startswith("opboost.api."):
            found.append((line, module))
    return found


@pytest.mark.parametrize("source", [p.parent for p in PLUGIN_SOURCES], ids=lambda p: p.name)
def test_plugins_use_only_the_contracts_names(source):
    """Sources and tests of the plugins in plugins/ import from the SDK only names of
    ``opboost.api.__all__`` (``from opboost.api import X``), never a module below it."""
    offences = [
        f"{path.relative_to(ROOT)}:{line} uses {what} (not in opboost.api.__all__)"
        for path in sorted(source.rglob("*.py"))
        if "build" not in path.relative_to(source).parts
        for line, what in _plugin_uses_of_the_sdk(path)
    ]
    assert offences == []


def test_a_module_path_or_a_name_off_the_contract_is_an_offence(tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "from opboost.api import BaseLearner, lightgbm_threads\n"
        "from opboost.api.exceptions import InvalidParameterError\n"
        "import opboost.api.numerics.softmax\n"
    )
    assert _plugin_uses_of_the_sdk(plugin) == [
        (1, "opboost.api.lightgbm_threads"),
        (2, "opboost.api.exceptions"),
        (3, "opboost.api.numerics.softmax"),
    ]


def _functions(path: Path):
    return [
        node
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_one_boosting_loop():
    """Exactly one function loops over boosting rounds (opboost.core.loop.run_rounds), and only
    the engine's round asks a fit for a direction: the Booster, the warm start and the Dask
    fit all run through it."""
    loops, callers = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for func in _functions(path):
            for node in ast.walk(func):
                if isinstance(node, ast.While) and "stop_reason" in ast.unparse(node.test):
                    loops.append(f"{path.relative_to(ROOT)}:{func.name}")
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".fit_direction"):
                    callers.append(f"{path.relative_to(ROOT)}:{func.name}")
    assert loops == ["opboost/core/loop.py:run_rounds"]
    assert sorted(set(callers)) == ["opboost/core/loop.py:boost_round"]


#: Where no function may exceed 60 lines: the SDK and the core.
SIZE_CHECKED = ("api", "core")
#: The smoke alarm for a module that holds more than one concept.
MAX_MODULE_LINES = 800


def test_module_and_function_sizes():
    """A smoke alarm, not a target: no module over 800 lines anywhere in opboost (a module holds
    one concept, whatever its length; one this long likely holds several); no function over 60
    lines in the core and the SDK (one screen per function)."""
    long_modules = [
        f"{p.relative_to(ROOT)}: {n} lines (over {MAX_MODULE_LINES}: does it hold one concept?)"
        for p in sorted(PACKAGE.rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    long_functions = []
    for name in SIZE_CHECKED:
        target = PACKAGE / name
        for path in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            for func in _functions(path):
                length = func.end_lineno - func.lineno + 1
                if length > 60:
                    long_functions.append(f"{path.relative_to(ROOT)}:{func.name}: {length}")
    assert long_modules == []
    assert long_functions == []
