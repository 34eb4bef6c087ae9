"""The shape of the documentation: a newcomer's path of short pages, and every page in the
site's navigation (mkdocs.yml)."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: README -> getting started -> their own DataFrame -> a study and its plots: each page links
#: to the next, and none is longer than a page a newcomer reads through.
NEWCOMER_PATH = ["README.md", "docs/getting-started.md", "docs/your-logs.md", "docs/studies.md"]
MAX_LINES = 300


@pytest.mark.parametrize("page", NEWCOMER_PATH)
def test_the_newcomers_pages_are_short(page: str) -> None:
    lines = (ROOT / page).read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{page} has {lines} lines, more than {MAX_LINES}"


@pytest.mark.parametrize(("page", "following"), list(pairwise(NEWCOMER_PATH)))
def test_each_page_of_the_path_links_to_the_next(page: str, following: str) -> None:
    target = Path(following).relative_to(Path(page).parent).as_posix()
    assert f"]({target})" in (ROOT / page).read_text(encoding="utf-8"), (
        f"{page} does not link to {target}"
    )


def test_every_page_is_in_the_site_navigation() -> None:
    """mkdocs.yml's nav names every page of docs/ (mkdocs build --strict refuses an omitted
    one too, in CI after the tests)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    listed = set(re.findall(r"(?:^|[\s:])([\w/.-]+\.md)\s*$", nav, re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - pages == set(), "mkdocs.yml's nav names pages that do not exist"
