"""Every relative link of README.md and docs/**/*.md resolves: the file or folder exists in the
repository, and an anchor (``page.md#section``, ``#section``) is a heading of that page as
GitHub renders it (``github_slug``) or an explicit ``<a id="...">``.

Links are read outside fenced code blocks, inline code and HTML comments; links with a scheme
(``https:``, ``mailto:``) are not followed.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[ \t]*$", re.S | re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s()<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$", re.M)
_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
#: Unicode categories GitHub keeps in a heading's anchor (letters, marks, decimal digits, the
#: connector punctuation "_"); every other character but "-" and " " is dropped.
_KEPT = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"}


def prose(text: str) -> str:
    """``text`` without fenced code blocks and HTML comments (newlines kept, so that line
    numbers stay those of the file)."""

    def blank(match: re.Match) -> str:
        return "\n" * match.group(0).count("\n")

    return _COMMENT.sub(blank, _FENCE.sub(blank, text))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text (inline code and links reduced to
    their text) lowercased, every character but letters, digits, "_", "-" and " " removed,
    and each space replaced by "-"."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    kept = "".join(c for c in text if c in "- " or unicodedata.category(c) in _KEPT)
    return kept.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    """Every anchor of ``document``: its headings' slugs (a repeated slug gets -1, -2, ...
    as on GitHub) and its explicit ``<a id>``/``<a name>`` anchors."""
    text = document.read_text(encoding="utf-8")
    found, seen = set(_ANCHOR.findall(text)), {}
    for match in _HEADING.finditer(prose(text)):
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(document: Path) -> list[tuple[int, str]]:
    """(line, target) of every link of ``document`` outside code and comments."""
    text = prose(document.read_text(encoding="utf-8"))
    text = _CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in _LINK.finditer(text)]


def broken(document: Path) -> list[str]:
    """What is wrong with each relative link of ``document`` that does not resolve."""
    problems = []
    for line, target in links(document):
        if _SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        where = f"{document.relative_to(ROOT)}:{line}: {target}"
        resolved = (document.parent / path).resolve() if path else document
        if ROOT not in resolved.parents and resolved != ROOT:
            problems.append(f"{where}: points outside the repository")
        elif not resolved.exists():
            problems.append(f"{where}: {resolved.relative_to(ROOT)} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: no heading of {resolved.relative_to(ROOT)} has the anchor")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_relative_links_resolve(document: Path) -> None:
    problems = broken(document)
    assert not problems, "broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Booster parameters", "booster-parameters"),
        ("`LoggedBandit`", "loggedbandit"),
        ("Outputs (`--out DIR`)", "outputs---out-dir"),
        ("LightGBM classification trees (`lightgbm_tree_classifier`)",
         "lightgbm-classification-trees-lightgbm_tree_classifier"),
        ("The default objective follows the start (2026-11-26)",
         "the-default-objective-follows-the-start-2026-11-26"),
        ("At 1M contexts × 10 actions against LightGBM multiclass (2026-11-26)",
         "at-1m-contexts--10-actions-against-lightgbm-multiclass-2026-11-26"),
        ("Chen, Lin & Lu (2014), Table 2", "chen-lin--lu-2014-table-2"),
        ("IPS — inverse propensity scoring", "ips--inverse-propensity-scoring"),
        ("why `Booster()` stayed BOPL-S from F₀ = 0", "why-booster-stayed-bopl-s-from-f--0"),
        ("See [the data](data.md)", "see-the-data"),
    ],
)  # fmt: skip
def test_anchors_are_githubs(heading: str, slug: str) -> None:
    """The anchors GitHub renders for these headings (subscripts, ×, & and — dropped; "_"
    and "-" kept; one "-" per space)."""
    assert github_slug(heading) == slug


def test_a_broken_link_is_named(tmp_path: Path) -> None:
    """The check finds a missing file, a missing anchor and ignores code and URLs."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Two words\n\n[ok](#two-words) [url](https://example.org/x)\n"
        "`[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](#three-words) [self](page.md#title)\n",
        encoding="utf-8",
    )
    assert [target for _, target in links(page)] == [
        "#two-words", "https://example.org/x", "missing.md", "#three-words", "page.md#title",
    ]  # fmt: skip
    assert "three-words" not in anchors(page) and {"title", "two-words"} <= anchors(page)
