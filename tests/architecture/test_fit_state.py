"""The fit's state has one owner (issue 50, item 2): no function takes a ``fit`` annotated
``Any``, and no function writes an attribute of an object it was handed; the stages of the fit
(checkpoint restore, warm start) return what changes and
:class:`opboost.core.fit.memory.InMemoryFit` assigns it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

#: The modules these checks cover, listed by hand: a module joins once it complies
#: (opboost/core/selection.py when its RoundSelection takes a typed fit).
COVERED = (
    "opboost/core/fit/__init__.py",
    "opboost/core/fit/checkpoint.py",
    "opboost/core/fit/memory.py",
    "opboost/core/fit/slot_fit.py",
    "opboost/core/fit/warm_start.py",
    "opboost/core/selection.py",  # reads the fit through the SelectedFit protocol
    "opboost/core/booster.py",
    "opboost/core/resolve.py",
)


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function in ``tree``, methods as ``Class.method``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")


def _parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = func.args
    extra = [p for p in (a.vararg, a.kwarg) if p is not None]
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *extra]


def _is_any(annotation: ast.expr | None) -> bool:
    """``Any``, ``typing.Any``, ``"Any"`` or a union with one of them."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_any(annotation.left) or _is_any(annotation.right)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.replace(" ", "") in ("Any", "typing.Any")
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
        isinstance(annotation, ast.Attribute) and annotation.attr == "Any"
    )


def untyped_fits(source: str) -> list[str]:
    """``function:line`` of every parameter named ``fit`` annotated ``Any`` in ``source``."""
    return [
        f"{name}:{p.lineno}"
        for name, func in _functions(ast.parse(source))
        for p in _parameters(func)
        if p.arg == "fit" and _is_any(p.annotation)
    ]


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        found = [node.target]
    else:
        return []
    while any(isinstance(t, ast.Tuple | ast.List | ast.Starred) for t in found):
        found = [
            e
            for t in found
            for e in (
                t.elts
                if isinstance(t, ast.Tuple | ast.List)
                else [t.value]
                if isinstance(t, ast.Starred)
                else [t]
            )
        ]
    return found


def parameter_writes(source: str) -> list[str]:
    """``function:line target`` of every assignment to an attribute (or an item of one) of
    a parameter other than ``self`` and ``cls``, in ``source``."""
    found = []
    for name, func in _functions(ast.parse(source)):
        handed = {p.arg for p in _parameters(func)} - {"self", "cls"}
        for node in ast.walk(func):
            for target in _targets(node):
                root, through_attribute = target, False
                while isinstance(root, ast.Attribute | ast.Subscript):
                    through_attribute |= isinstance(root, ast.Attribute)
                    root = root.value
                if through_attribute and isinstance(root, ast.Name) and root.id in handed:
                    found.append(f"{name}:{target.lineno} {ast.unparse(target)}")
    return found


@pytest.mark.parametrize("path", COVERED)
def test_no_parameter_named_fit_is_annotated_any(path):
    """A function says what of a fit it reads: typed arguments or a typed fit, not Any."""
    assert untyped_fits((ROOT / path).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", COVERED)
def test_no_function_writes_an_attribute_of_an_object_it_was_handed(path):
    """The fit's stages return what changes; only an object's own methods assign it."""
    assert parameter_writes((ROOT / path).read_text(encoding="utf-8")) == []


def test_every_module_of_the_fit_package_is_covered():
    package = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "opboost/core").rglob("*.py"))
    package = [p for p in package if "/fit/" in p or p.endswith(("selection.py", "booster.py"))]
    assert [p for p in package if p not in COVERED] == []
    assert all((ROOT / path).is_file() for path in COVERED)


def test_the_checks_find_what_they_forbid():
    """Each check flags its pattern (so an empty answer above means something)."""
    source = (
        "import typing\n"
        "from typing import Any\n"
        "def restore(fit: Any, ckpt: dict) -> None:\n"
        "    fit.round, (fit.scores, x) = ckpt['round'], (ckpt['scores'], 0)\n"
        "    fit.history['alpha'] += [1.0]\n"
        "class Start:\n"
        "    def __init__(self, fit: 'Any', n: int) -> None:\n"
        "        self.fit = fit\n"
        "    def run(self, *, fit: typing.Any | None, scores: list) -> None:\n"
        "        scores += [1.0]\n"
        "        fit.eval_scores: list = scores\n"
        "def typed(fit: 'InMemoryFit', data: Any) -> None:\n"
        "    data = fit.scores\n"
    )
    assert untyped_fits(source) == ["restore:3", "Start.__init__:7", "Start.run:9"]
    assert parameter_writes(source) == [
        "restore:4 fit.round",
        "restore:4 fit.scores",
        "restore:5 fit.history['alpha']",
        "Start.run:11 fit.eval_scores",
    ]
