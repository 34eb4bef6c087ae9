"""The API reference reads as rendered: griffe parses the docstrings of every object that
docs/api/*.md documents (its ``::: path`` directives) as mkdocstrings does, with mkdocs.yml's
handler options, and the members each page shows are chosen by mkdocstrings' own filter.

- every row of a Parameters, Attributes, Returns (...) table has a type in the Type column (or
  none) and its text in the Description column: a numpy-style item is ``name`` alone with the
  description indented under it (the type comes from the signature), never ``name : prose``;
- no Sphinx role (``:class:`X```...): mkdocstrings shows them as raw text; a cross-reference is
  ``[X][opboost.path.X]`` (a target on the site) or plain ````X````;
- every public method of a documented class, those inherited from opboost classes included,
  is on the class's page.

Static (no import of the package, no site build); mkdocs build --strict checks the
cross-references resolve (.ci/run).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import griffe
import pytest
import yaml
from griffe import DocstringSectionKind
from mkdocstrings_handlers.python import PythonOptions, do_filter_objects

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "api").glob("*.md"))
DIRECTIVE = re.compile(r"^::: *(?P<path>\S+)[ \t]*\n(?P<block>(?:[ \t]+\S.*\n?)*)", re.M)
ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|obj|exc):`[^`]*`")
TABLES = {
    DocstringSectionKind.parameters,
    DocstringSectionKind.other_parameters,
    DocstringSectionKind.attributes,
    DocstringSectionKind.returns,
    DocstringSectionKind.yields,
    DocstringSectionKind.receives,
    DocstringSectionKind.raises,
    DocstringSectionKind.warns,
}
#: The syntax of a type: names, dotted names, subscripts, ``|`` unions, literals.
TYPE_NODES = (
    ast.Expression,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Constant,
    ast.Load,
    ast.BinOp,
    ast.BitOr,
)


class _IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml's ``!!python/...`` tags (the toc's slugify) are not needed here."""


_IgnoreTags.add_multi_constructor("", lambda loader, suffix, node: None)


def handler_options() -> dict[str, Any]:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_IgnoreTags)
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            return plugin["mkdocstrings"]["handlers"]["python"].get("options", {})
    raise AssertionError("mkdocs.yml has no mkdocstrings plugin")


def directives(page: Path, base: dict[str, Any]) -> list[tuple[str, PythonOptions]]:
    """(object path, options) of each ``::: path`` of ``page``: its own over mkdocs.yml's."""
    out = []
    for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
        local = (yaml.safe_load(match["block"]) or {}).get("options", {})
        out.append((match["path"], PythonOptions.from_data(**{**base, **local})))
    return out


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    """opboost as mkdocstrings' Python handler loads it (its handler.py: the loader, then
    the aliases resolved without implicit ones)."""
    options = handler_options()
    loader = griffe.GriffeLoader(
        extensions=griffe.load_extensions(*options.get("extensions", [])),
        search_paths=[str(ROOT)],
        docstring_parser=griffe.Parser(options.get("docstring_style", "google")),
    )
    loader.load("opboost")
    loader.resolve_aliases(implicit=False, external=None)
    return loader.modules_collection["opboost"]


def rendered(obj: Any, options: PythonOptions, root: bool = True) -> Iterator[Any]:
    """``obj`` and the members its page shows, recursively: the choice of mkdocstrings-python's
    children template (by category, with its filter, __init__ merged into the class)."""
    yield obj
    if not (obj.is_module or obj.is_class):
        return
    members_list = options.members if root else None
    categories = ["attributes", "type_aliases", "classes", "functions"]
    for category in categories + (["modules"] if options.show_submodules else []):
        kept = do_filter_objects(
            getattr(obj, category),
            filters=options.filters,
            members_list=members_list,
            inherited_members=options.inherited_members,
            keep_no_docstrings=options.show_if_no_docstring,
        )
        for member in kept:
            if obj.is_class and member.name == "__init__" and options.merge_init_into_class:
                continue
            if (
                options.filters == "public"
                or members_list is not None
                or not member.is_imported
                or member.is_public
            ):
                yield from rendered(member, options, root=False)


def shown(package: griffe.Module, page: Path) -> Iterator[tuple[Any, PythonOptions]]:
    for path, options in directives(page, handler_options()):
        assert path.startswith("opboost."), f"{page.name}: ::: {path} is not in opboost"
        for obj in rendered(package[path.removeprefix("opboost.")], options):
            yield obj, options


def docstrings(obj: Any, options: PythonOptions) -> Iterator[griffe.Docstring]:
    """The docstrings rendered for ``obj``: its own, and its __init__'s when merged."""
    if obj.docstring is not None:
        yield obj.docstring
    if obj.is_class and options.merge_init_into_class and "__init__" in obj.all_members:
        init = obj.all_members["__init__"]
        if init.docstring is not None:
            yield init.docstring


def is_type(text: str) -> bool:
    """Whether ``text`` is a type: Python type syntax, or numpy's ``A or B`` and
    ``X of shape (...)``."""
    for part in re.split(r"\s+or\s+", text.strip()):
        part = re.sub(r"\s+of shape\s+\(.*\)$", "", part).replace("array-like", "array_like")
        try:
            tree = ast.parse(part, mode="eval")
        except SyntaxError:
            return False
        for node in ast.walk(tree):
            if not isinstance(node, TYPE_NODES):
                return False
            if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitOr):
                return False
    return True


def table_problems(obj: Any, docstring: griffe.Docstring) -> Iterator[str]:
    for section in docstring.parsed:
        if section.kind not in TABLES:
            continue
        for item in section.value:
            name = getattr(item, "name", "") or "(unnamed)"
            annotation = "" if item.annotation is None else str(item.annotation)
            where = f"{obj.path}: {section.kind.value} {name!r}"
            if not item.description.strip():
                yield f"{where} has no description (Type column: {annotation!r})"
            if annotation and not is_type(annotation):
                yield f"{where}: the Type column holds text, not a type: {annotation[:70]!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_table_row_has_its_type_and_its_description(package, page: Path) -> None:
    problems = [
        problem
        for obj, options in shown(package, page)
        for docstring in docstrings(obj, options)
        for problem in table_problems(obj, docstring)
    ]
    assert problems == [], (
        f"docs/api/{page.name}: {len(problems)} table rows render wrong. A numpy item is the "
        "name alone on its line, the description indented by 4 under it (the type comes from "
        "the signature):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_sphinx_role_in_a_rendered_docstring(package, page: Path) -> None:
    roles = [
        f"{obj.path}: {role}"
        for obj, options in shown(package, page)
        for docstring in docstrings(obj, options)
        for role in ROLE.findall(docstring.value)
    ]
    assert roles == [], (
        f"docs/api/{page.name} shows {len(roles)} Sphinx roles as raw text; write "
        "[`X`][opboost.path.X] for an object on the site, else ``X``:\n" + "\n".join(roles)
    )


def public_methods(cls: Any) -> set[str]:
    """The public methods of ``cls``, its own and those it inherits from opboost classes."""
    names = set()
    for name, member in cls.all_members.items():
        if name.startswith("_"):
            continue
        try:
            function = member.is_function
            source = member.canonical_path
        except griffe.AliasResolutionError:  # imported from outside opboost
            continue
        if function and source.startswith("opboost."):
            names.add(name)
    return names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_public_method_of_a_documented_class_is_on_its_page(package, page: Path) -> None:
    objects = list(shown(package, page))
    on_page = {obj.path for obj, _ in objects}
    missing = [
        f"{obj.path}.{name}"
        for obj, _ in objects
        if obj.is_class
        for name in sorted(public_methods(obj))
        if f"{obj.path}.{name}" not in on_page
    ]
    assert missing == [], (
        f"docs/api/{page.name} leaves out {len(missing)} public methods (inherited ones need "
        "inherited_members; one without a docstring is not shown):\n" + "\n".join(missing)
    )


def test_the_pages_document_objects() -> None:
    """The walk above sees the pages: each names at least one object (an empty list of
    directives would make the tests above pass on nothing)."""
    base = handler_options()
    counted = {page.name: len(directives(page, base)) for page in PAGES}
    assert counted.pop("index.md") == 0
    assert counted and min(counted.values()) >= 1, counted
