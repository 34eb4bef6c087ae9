"""The tables of docs/architecture.md, drawn from the code: the layers (in the order of the
layers contract in pyproject.toml), the import-linter contracts, and the packages with their
modules and lines. tests/docs/test_architecture_page.py checks that the page holds what this
script generates, so the page cannot go stale: every cell exactly, but the line counts within
``LINES_TOLERANCE`` (an edit of a few lines need not rewrite the page; a stale size does).

Usage::

    python docs/architecture_tables.py           # print the tables
    python docs/architecture_tables.py --write   # rewrite them in docs/architecture.md

In the page, each table sits between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``
(HTML comments: the site does not show them). The prose of each row (what a layer or a package
holds) lives here, next to the numbers; a package without it is an error that names it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "opboost"
COMMAND = "python docs/architecture_tables.py --write"

#: Each layer of the layers contract over ``opboost``, by its packages: its name, what it
#: holds, what it may import (the contracts below say the same, checked).
LAYERS: dict[str, tuple[str, str, str]] = {
    "api": (
        "SDK",
        "the plugin contract, `opboost.api.__all__` (`from opboost.api import ...`): the "
        "interfaces a plugin implements (`Component` and the kinds' base classes, `hookimpl`, "
        "the engine extension point), the data it receives (`LoggedBandit`, `RoundState`, "
        "`BaseProblem`, `RoundEnv`, `FitSettings`, ...) and the helpers it may call (declared "
        "constraints, checks, the learner toolkit, the errors). Below the interfaces, importing "
        "none of them, the kit imported by its module paths: `data/`, `numerics/`, `serving/`, "
        "`files/`",
        "nothing else of opboost",
    ),
    "lgbm": (
        "LightGBM toolkit",
        "what the LightGBM learners and the Dask engine share: the saved ensemble and its "
        "model text, the designed rows and their binned Dataset, a round's trees read and "
        "scaled in place, the tree parameters, row sampling, thread counts",
        "the SDK",
    ),
    "core": (
        "core",
        "the Booster, the one boosting loop, the in-memory engine (`fit/`), label-free round "
        "selection, the registry, the built-in callbacks, the scorers, policy loading",
        "the SDK",
    ),
    "algorithms": (
        "algorithms",
        "one module per algorithm (`objectives/`, `estimators/`, `learners/`, `online/`, "
        "`policy_learners/`), registered through entry points like a third party's",
        "the SDK and the LightGBM toolkit",
    ),
    "simulation": (
        "simulation",
        "supervised data turned into logs and streams, label-hiding environments and runners, "
        "deployments retrained in batches, data set loaders (`datasets/`)",
        "the SDK",
    ),
    "dask": (
        "dask",
        "a remote engine: logs on a Dask cluster, trees grown where the rows are",
        "the SDK and the LightGBM toolkit",
    ),
    "testing": (
        "testing",
        "the contract checks every plugin runs, a pytest plugin",
        "the SDK and the registry",
    ),
    "compose": (
        "composition",
        "configs, search, trials, studies, reports, the command line, `PolicyChoice` "
        "(`config/`, `trial/`, `study/`, `cli`, `quickstart`, `choice`)",
        "everything",
    ),
}

#: What each package (its own modules, not its sub-packages) holds.
PACKAGES: dict[str, str] = {
    "opboost": "the facade (`opboost.Booster`, `load_policy`, ...)",
    "opboost/api": "the SDK's interfaces and its contract (`__all__`)",
    "opboost/api/data": "the data model: logs, checks, candidates, tables, slots, pairs",
    "opboost/api/numerics": "row arithmetic, softmax, design, contexts, memory",
    "opboost/api/serving": "masks, top-k, catalogues, exploration",
    "opboost/api/files": "crash-safe writes, the policy save protocol",
    "opboost/lgbm": "the LightGBM toolkit: ensemble, rows, layout, threads",
    "opboost/core": "Booster, resolve, loop, selection, registry, callbacks, scorers, loading",
    "opboost/core/fit": "the in-memory engine, slots, warm start, checkpoints",
    "opboost/algorithms": "(the families below)",
    "opboost/algorithms/objectives": "BOPL, BOPL-S, SNIPS, POEM",
    "opboost/algorithms/estimators": "IPS, truncated IPS, SNIPS, DM, DR",
    "opboost/algorithms/learners": "LightGBM and scikit-learn base learners, starts",
    "opboost/algorithms/online": "online boosting, bandit and loss feedback",
    "opboost/algorithms/policy_learners": "whole-policy learners",
    "opboost/simulation": "logs, streams, environments, runners, deployments",
    "opboost/simulation/datasets": "data set loaders",
    "opboost/dask": "the Dask engine and its learner",
    "opboost/testing": "the plugin contract checks, a pytest plugin",
    "opboost/compose": "cli, quickstart, `PolicyChoice`",
    "opboost/compose/config": "experiment configs, search",
    "opboost/compose/trial": "one trial: plan, data, a runner per kind, result, store",
    "opboost/compose/study": "studies: runner, session, workers, outputs, reports",
}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _size(modules: list[Path]) -> tuple[int, int]:
    return len(modules), sum(_lines(p) for p in modules)


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def layers_table() -> str:
    """The layers, bottom (the SDK) to top, as the layers contract over ``opboost`` orders them."""
    (contract,) = [
        c for c in _contracts() if c["type"] == "layers" and c["containers"] == ["opboost"]
    ]
    rows = [
        "| floor | layer | packages | modules | lines | holds | may import |",
        "|---|---|---|---|---|---|---|",
    ]
    for floor, layer in enumerate(reversed(contract["layers"]), 1):
        for name in (n.strip() for n in layer.split("|")):
            if name not in LAYERS:
                raise KeyError(
                    f"the layer package opboost.{name} has no row in LAYERS of {__file__}"
                )
            label, holds, imports = LAYERS[name]
            modules, lines = _size(sorted((PACKAGE / name).rglob("*.py")))
            cells = (floor, label, f"`opboost.{name}`", modules, f"{lines:,}", holds, imports)
            rows.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(rows)


def contracts_list() -> str:
    """The import-linter contracts of pyproject.toml, numbered, as ``lint-imports`` lists them."""
    return "\n".join(f"{i}. {c['name']}." for i, c in enumerate(_contracts(), 1))


def packages_table() -> str:
    """One row per package: what it holds, its own modules and their lines (not its
    sub-packages'), and a total."""
    rows = ["| package | holds | modules | lines |", "|---|---|---|---|"]
    packages = sorted(
        (p.parent for p in PACKAGE.rglob("__init__.py")),
        key=lambda p: p.relative_to(ROOT).parts,
    )
    total = [0, 0]
    for package in packages:
        name = package.relative_to(ROOT).as_posix()
        if name not in PACKAGES:
            raise KeyError(f"the package {name}/ has no row in PACKAGES of {__file__}")
        modules, lines = _size(sorted(package.glob("*.py")))
        total[0] += modules
        total[1] += lines
        rows.append(f"| `{name}/` | {PACKAGES[name]} | {modules} | {lines:,} |")
    if gone := sorted(set(PACKAGES) - {p.relative_to(ROOT).as_posix() for p in packages}):
        raise KeyError(f"PACKAGES of {__file__} describes packages that do not exist: {gone}")
    rows.append(f"| all of `opboost/` | | {total[0]} | {total[1]:,} |")
    return "\n".join(rows)


#: The generated blocks of the page, by name.
TABLES = {"layers": layers_table, "contracts": contracts_list, "packages": packages_table}


#: A line count on the page may be off from the code's by this share (10%) before it is stale.
LINES_TOLERANCE = 0.10


def stale_cells(on_page: str, generated: str) -> list[str]:
    """The cells of a page table that disagree with the generated one ("row: page != code"):
    text cells exactly, the "lines" column within :data:`LINES_TOLERANCE`; a row added or
    removed is one entry."""
    page_rows, code_rows = on_page.splitlines(), generated.splitlines()
    if len(page_rows) != len(code_rows):
        return [f"{len(page_rows)} rows on the page, {len(code_rows)} in the code"]
    header = [c.strip() for c in code_rows[0].strip("|").split("|")] if code_rows else []
    stale = []
    for page_row, code_row in zip(page_rows, code_rows, strict=True):
        page_cells = [c.strip() for c in page_row.strip("|").split("|")]
        code_cells = [c.strip() for c in code_row.strip("|").split("|")]
        if len(page_cells) != len(code_cells):
            stale.append(f"{code_cells[0]}: {page_row!r} != {code_row!r}")
            continue
        for i, (page, code) in enumerate(zip(page_cells, code_cells, strict=True)):
            lines = i < len(header) and header[i] == "lines" and code.replace(",", "").isdigit()
            if lines and page.replace(",", "").isdigit():
                want, have = int(code.replace(",", "")), int(page.replace(",", ""))
                if abs(have - want) <= LINES_TOLERANCE * want:
                    continue
            if page != code:
                stale.append(
                    f"{code_cells[0]} {header[i] if i < len(header) else i}: {page!r} != {code!r}"
                )
    return stale


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(<!-- end: {name} -->)", re.S)


def page_tables(text: str) -> dict[str, str | None]:
    """Each generated block as the page has it (None: the page lacks its markers)."""
    found = {name: _block(name).search(text) for name in TABLES}
    return {name: (m.group(2).strip() if m else None) for name, m in found.items()}


def write(path: Path = PAGE) -> None:
    """Rewrite every generated block of the page in place."""
    text = path.read_text(encoding="utf-8")
    for name, make in TABLES.items():
        pattern = _block(name)
        if not pattern.search(text):
            raise ValueError(f"{path} has no <!-- generated: {name} --> ... <!-- end: {name} -->")
        table = make()
        text = pattern.sub(lambda m, t=table: f"{m.group(1)}\n{t}\n\n{m.group(3)}", text)
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    elif sys.argv[1:]:
        sys.exit(f"usage: {sys.argv[0]} [--write]")
    else:
        print("\n\n".join(make() for make in TABLES.values()))
