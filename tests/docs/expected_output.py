"""What a docs block says it prints, and whether it does (tests/docs/test_docs_run.py).

Two ways to show output in a Python block of the docs, both checked when the block runs:

* an **expectation comment**, ``# -> TEXT``: at the end of a statement's line (any line of a
  statement that spans several), or on comment lines right after the statement (several
  such lines are one text, one line each). TEXT is what the statement prints, all of it
  (every time it runs, for a statement in a loop);
* an **output block**: a fenced ``text`` block right after the Python block, preceded by
  ``<!-- docs-test: output -->``. It is everything the Python block prints.

How TEXT is compared with what was printed: whitespace matches any whitespace, ``...`` any
text (``0.666...``: a number that starts so), and every other number must equal the printed
one, or be within a tolerance stated at the end of TEXT as ``(±0.02)`` (``# -> 0.93
(±0.02)``) or in the output block's marker (``<!-- docs-test: output ±0.02 -->``). In an
expectation comment, `` # `` ends TEXT and starts a note that is not compared
(``# -> 1.333...  # (2 + 0 + 2) / 3``).
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass

__all__ = [
    "PRELUDE",
    "Expectation",
    "expectations",
    "mismatch",
    "split_tolerance",
    "unchecked_numbers",
]

NUMBER = r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])"
_TOKEN = re.compile(rf"(?P<prefix>{NUMBER})\.\.\.|(?P<number>{NUMBER})|(?P<dots>\.\.\.)|\s+")
_TOLERANCE = re.compile(r"\s*\((?:±|\+-)\s*(?P<tol>[0-9.eE+-]+)\)\s*$")
ARROW = "# ->"

#: Code run before a document's blocks: stdout is recorded per line of the top-level code
#: (the line of the statement running when something is printed) and dumped as JSON to
#: $OPBOOST_DOCS_OUTPUT when the interpreter exits.
PRELUDE = """\
import atexit as _docs_atexit, json as _docs_json, os as _docs_os, sys as _docs_sys


class _DocsStdout:
    def __init__(self, real):
        self.real, self.chunks = real, []

    def write(self, text):
        frame, line = _docs_sys._getframe(1), None
        while frame is not None:
            if frame.f_code.co_filename == "<string>":
                line = frame.f_lineno
            frame = frame.f_back
        self.chunks.append((line, text))
        return self.real.write(text)

    def __getattr__(self, name):
        return getattr(self.real, name)


_docs_sys.stdout = _DocsStdout(_docs_sys.stdout)


@_docs_atexit.register
def _docs_dump():
    with open(_docs_os.environ["OPBOOST_DOCS_OUTPUT"], "w") as out:
        _docs_json.dump(_docs_sys.stdout.chunks, out)
"""


def split_tolerance(text: str) -> tuple[str, float]:
    """(TEXT without a trailing ``(±tol)``, tol or 0.0)."""
    found = _TOLERANCE.search(text)
    if found is None:
        return text.strip(), 0.0
    return text[: found.start()].strip(), float(found.group("tol"))


def mismatch(expected: str, printed: str, tolerance: float = 0.0) -> str | None:
    """Why ``printed`` does not match ``expected`` (the rules of the module doc), or None."""
    parts, numbers, pos = [], [], 0
    expected = expected.strip()
    for token in _TOKEN.finditer(expected):
        parts.append(re.escape(expected[pos : token.start()]))
        if token.group("prefix"):
            parts.append(re.escape(token.group("prefix")) + r"\d*")
        elif token.group("number"):
            parts.append(f"({NUMBER})")
            numbers.append(token.group("number"))
        elif token.group("dots"):
            parts.append(".*?")
        else:
            parts.append(r"\s+")
        pos = token.end()
    parts.append(re.escape(expected[pos:]))
    found = re.fullmatch("".join(parts), printed.strip(), re.S)
    if found is None:
        return f"expected {expected!r}, printed {printed.strip()!r}"
    for want, got in zip(numbers, found.groups(), strict=True):
        if not math.isclose(float(want), float(got), rel_tol=0.0, abs_tol=tolerance):
            within = f" ± {tolerance:g}" if tolerance else ""
            return f"printed {got} where the docs show {want}{within}: {printed.strip()!r}"
    return None


@dataclass(frozen=True)
class Expectation:
    """``text`` (with ``tolerance``) is what lines ``first`` .. ``last`` of the code print;
    ``line`` is the comment's line (1-based, in the code)."""

    line: int
    first: int
    last: int
    text: str
    tolerance: float


def _comments(code: str) -> list[tuple[int, str, bool]]:
    """(line, comment, alone on its line) of every comment of ``code``."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            alone = not tok.line[: tok.start[1]].strip()
            out.append((tok.start[0], tok.string, alone))
    return out


def _statements(code: str) -> list[ast.stmt]:
    """The simple statements of ``code`` (not ``for``, ``if``, ``def``, ...: their bodies'
    statements instead)."""
    return [
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.stmt) and not any(isinstance(v, list) for v in _bodies(node))
    ]


def _bodies(node: ast.stmt) -> list:
    return [getattr(node, name) for name in ("body", "orelse", "finalbody", "handlers")
            if isinstance(getattr(node, name, None), list) and getattr(node, name)]  # fmt: skip


def _owner(statements: list[ast.stmt], line: int, alone: bool, lines: list[str]) -> ast.stmt:
    """The statement a comment at ``line`` belongs to: the one on that line, or for a
    comment alone on its line, the statement right above it (only comments between)."""
    if not alone:
        around = [s for s in statements if s.lineno <= line <= s.end_lineno]
        if not around:
            raise ValueError(f"line {line}: a comment on no simple statement (a loop header?)")
        return min(around, key=lambda s: s.end_lineno - s.lineno)
    above = [s for s in statements if s.end_lineno < line]
    if not above:
        raise ValueError(f"line {line}: an expectation comment before any statement")
    statement = max(above, key=lambda s: (s.end_lineno, -s.lineno))
    between = lines[statement.end_lineno : line - 1]
    if any(row.strip() and not row.strip().startswith("#") for row in between):
        raise ValueError(f"line {line}: an expectation comment must follow its statement")
    return statement


def expectations(code: str) -> list[Expectation]:
    """The expectation comments of ``code``, one per statement (its comment lines joined)."""
    statements, lines = _statements(code), code.split("\n")
    found: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for line, comment, alone in _comments(code):
        if not comment.startswith(ARROW):
            continue
        statement = _owner(statements, line, alone, lines)
        text = comment[len(ARROW) :].split(" # ", 1)[0].strip()
        found.setdefault((statement.lineno, statement.end_lineno), []).append((line, text))
    out = []
    for (first, last), parts in found.items():
        text, tolerance = split_tolerance("\n".join(t for _, t in parts))
        out.append(Expectation(parts[0][0], first, last, text, tolerance))
    return out


def unchecked_numbers(code: str) -> list[int]:
    """Lines of comments that show a number printed by a ``print`` statement without being
    an expectation: on the statement's lines, or alone on the lines right after it."""
    lines = code.split("\n")
    printing = [
        s
        for s in _statements(code)
        if any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
            for n in ast.walk(s)
        )
    ]
    out = []
    for line, comment, alone in _comments(code):
        if comment.startswith(ARROW) or not re.search(r"\d", comment):
            continue
        try:
            statement = _owner(printing, line, alone, lines) if printing else None
        except ValueError:
            continue
        if statement is not None and (not alone or statement.end_lineno < line):
            out.append(line)
    return out
