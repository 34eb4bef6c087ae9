"""docs/architecture.md is drawn from the code: each generated table of the page is what
docs/architecture_tables.py makes from the package and pyproject.toml now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "architecture_tables", ROOT / "docs" / "architecture_tables.py"
)
tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tables)


@pytest.mark.parametrize("name", sorted(tables.TABLES))
def test_the_architecture_page_table_is_the_code_s(name: str) -> None:
    on_page = tables.page_tables(tables.PAGE.read_text(encoding="utf-8"))[name]
    assert on_page is not None, f"docs/architecture.md lacks <!-- generated: {name} -->"
    stale = tables.stale_cells(on_page, tables.TABLES[name]())
    assert stale == [], (
        f"docs/architecture.md's {name} table differs from the code: run `{tables.COMMAND}`"
    )


def test_a_line_count_off_by_more_than_the_tolerance_is_stale() -> None:
    """Line counts may drift by LINES_TOLERANCE (an edit need not rewrite the page); past it,
    and in any other cell, the table is stale."""
    table = tables.packages_table()
    row = next(r for r in table.splitlines() if r.startswith("| `opboost/core/` "))
    lines = int(row.rsplit("|", 2)[1].strip().replace(",", ""))
    near = row.replace(f"{lines:,} |", f"{int(lines * 1.05):,} |")
    far = row.replace(f"{lines:,} |", f"{int(lines * 1.2):,} |")
    renamed = row.replace("`opboost/core/`", "`opboost/kern/`")
    assert tables.stale_cells(table.replace(row, near), table) == []
    assert len(tables.stale_cells(table.replace(row, far), table)) == 1
    assert len(tables.stale_cells(table.replace(row, renamed), table)) == 1


def test_write_brings_a_stale_page_back_to_the_code(tmp_path: Path) -> None:
    """Rewriting a page brings each stale table back to the code and leaves the prose alone;
    the layers are the layers contract's, bottom first; a package's size is its own files'."""
    page = tmp_path / "architecture.md"
    stale = "text\n<!-- generated: {0} -->\n| old |\n<!-- end: {0} -->\nmore\n"
    page.write_text("".join(stale.format(name) for name in tables.TABLES), encoding="utf-8")
    tables.write(page)
    text = page.read_text(encoding="utf-8")
    assert tables.page_tables(text) == {name: make() for name, make in tables.TABLES.items()}
    assert text.count("text\n") == text.count("more\n") == len(tables.TABLES)
    layers = tables.layers_table().splitlines()
    assert [row.split(" | ")[2] for row in layers[2:]] == [
        "`opboost.api`",
        "`opboost.lgbm`",
        "`opboost.core`",
        "`opboost.algorithms`",
        "`opboost.simulation`",
        "`opboost.dask`",
        "`opboost.testing`",
        "`opboost.compose`",
    ]
    core = next(
        r for r in tables.packages_table().splitlines() if r.startswith("| `opboost/core/` ")
    )
    core_dir = ROOT / "opboost" / "core"
    assert core.endswith(
        f" | {len(list(core_dir.glob('*.py')))} | "
        f"{sum(len(p.read_text().splitlines()) for p in core_dir.glob('*.py')):,} |"
    )


def test_a_page_without_the_markers_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "architecture.md"
    page.write_text("no tables\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"has no <!-- generated: layers --> \.\.\. <!-- end: layers -->"
    ):
        tables.write(page)
