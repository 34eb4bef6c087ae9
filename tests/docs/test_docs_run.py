"""Docs that run: every Python and shell block of README.md and docs/**/*.md is executed.

Per document, its Python blocks run in order in one fresh interpreter (later blocks may use
names an earlier block defined), in a temporary working directory; a hidden setup comment
runs where it stands, before the blocks that follow it:

    <!-- docs-test setup
    import numpy as np
    -->

Shell blocks run line by line with bash from the repository root, each command in a fresh
temporary directory tree where it writes. A block whose preceding line is

    <!-- docs-test: slow (why) -->

needs real data, another machine or minutes; it runs only with ``OPBOOST_DOCS_SLOW=1``
(``OPBOOST_DOCS_SLOW=1 OPBOOST_DATA=/path/to/datasets python -m pytest tests/docs -m slow``),
and a block preceded by ``<!-- docs-test: skip (why) -->`` is never run (installation commands,
which the test run itself depends on). A failure names the document and the block's line.

What a Python block says it prints is checked too (tests/docs/expected_output.py): an
expectation comment ``print(x)  # -> 0.93 (±0.02)`` (or ``# -> ...`` lines right after the
statement), and an output block, a ``text`` block after the Python block preceded by

    <!-- docs-test: output ±0.02 -->

A comment that shows a number on a ``print`` statement must be such an expectation (numbers
shown are checked or not shown). A ``toml`` block preceded by
``<!-- docs-test: same-as examples/quickstart.toml -->`` must hold the same TOML as the file.

The tests that run blocks are marked ``slow`` (an interpreter per document, a minute or two in
all): the default ``python -m pytest`` leaves them out, CI and the README's test command
(``-m "slow or not slow"``) run them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from expected_output import PRELUDE, expectations, mismatch, unchecked_numbers

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!-- docs-test: (?P<kind>slow|skip)\b[^>]*-->\s*$")
SETUP = re.compile(r"<!-- docs-test setup\n(?P<code>.*?)-->", re.S)
OUTPUT = re.compile(r"<!-- docs-test: output(?:\s+(?:±|\+-)(?P<tol>[0-9.eE+-]+))?\s*-->\s*$")
SAME_AS = re.compile(r"<!-- docs-test: same-as (?P<path>\S+)\s*-->\s*$")
SLOW = os.environ.get("OPBOOST_DOCS_SLOW") == "1"
PYTHON = ("python", "py")
SHELL = ("bash", "sh", "shell", "console")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    lang: str
    code: str
    mark: str | None  # "slow", "skip" or None

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def fenced(document: Path) -> list[tuple[int, str, str, str]]:
    """(line, language, body, the line before the fence) of every fenced block."""
    text = document.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        line = text[: match.start()].count("\n") + 1
        out.append((line, match.group("lang").lower(), match.group("body"), before))
    return out


def blocks(document: Path) -> list[Block]:
    """The fenced Python and shell blocks of ``document``, with their markers."""
    out = []
    for line, lang, body, before in fenced(document):
        if lang not in PYTHON + SHELL:
            continue
        mark = MARK.search(before)
        out.append(Block(document, line, lang, body, mark.group("kind") if mark else None))
    return out


def output_blocks(document: Path) -> dict[int, tuple[int, str, float]]:
    """{line of a Python block: (line, text, tolerance) of its output block}."""
    out, python = {}, None
    for line, lang, body, before in fenced(document):
        if lang in PYTHON:
            python = line
        found = OUTPUT.search(before)
        if found is None:
            continue
        if lang != "text" or python is None:
            raise ValueError(f"{document.name}:{line}: an output marker needs a text block "
                             f"after a Python block")  # fmt: skip
        out[python] = (line, body, float(found.group("tol") or 0.0))
    return out


def _line(text: str, offset: int) -> int:
    return text[:offset].count("\n") + 1


def _offset(text: str, line: int) -> int:
    """Character offset of the start of 1-based ``line``."""
    return sum(len(row) + 1 for row in text.split("\n")[: line - 1])


def _runs(block: Block) -> bool:
    return block.mark is None or (block.mark == "slow" and SLOW)


ALL = [b for d in DOCUMENTS for b in blocks(d)]
PY_DOCS = sorted({b.document for b in ALL if b.lang in PYTHON and _runs(b)})
SHELL_BLOCKS = [b for b in ALL if b.lang in SHELL and _runs(b)]


def _link_repo_folders(directory: Path) -> None:
    """examples/, plugins/ and docs/ of the repository, as relative paths in ``directory``."""
    for name in ("examples", "plugins", "docs"):
        (directory / name).symlink_to(ROOT / name)


def _env() -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


@pytest.mark.slow
@pytest.mark.parametrize("document", PY_DOCS, ids=[str(d.relative_to(ROOT)) for d in PY_DOCS])
def test_python_blocks_run(document: Path, tmp_path: Path) -> None:
    """Every Python block of the document runs, in order, in one interpreter."""
    text = document.read_text(encoding="utf-8")
    setups = [(m.start(), m.group("code")) for m in SETUP.finditer(text)]
    runnable = [b for b in blocks(document) if b.lang in PYTHON and _runs(b)]
    steps = sorted(
        [(pos, f"__docs_block__ = 'setup before line {_line(text, pos)}'\n{code}", None)
         for pos, code in setups]
        + [(_offset(text, b.line), f"__docs_block__ = {b.where!r}\n{b.code}", b)
           for b in runnable]
    )  # fmt: skip
    parts, starts = [PRELUDE], {}  # starts: block -> code line of its first line
    for _, step, block in steps:
        if block is not None:  # after the lines before it and its __docs_block__ line
            starts[block] = sum(part.count("\n") + 1 for part in parts) + 2
        parts.append(step)
    code = "\n".join(parts)
    _link_repo_folders(tmp_path)
    env = dict(_env(), OPBOOST_DOCS_OUTPUT=str(tmp_path / "printed.json"))
    # -c rather than a script file: Dask's LocalCluster (docs/dask.md) spawns workers that
    # would re-run a script's top level
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        pytest.fail(f"{_failing_block(code, result.stderr)} failed:\n{result.stderr[-3000:]}")
    printed = json.loads((tmp_path / "printed.json").read_text())
    problems = _printed_problems(document, starts, printed)
    assert not problems, "the docs show other output than their blocks print:\n" + "\n".join(
        problems
    )


def _printed_problems(document: Path, starts: dict, printed: list) -> list[str]:
    """Each expectation comment and output block of the document's ``starts`` blocks (block
    -> its first line in the code run) that ``printed`` ([code line, text], ...) contradicts."""

    def between(first: int, last: int) -> str:
        return "".join(t for line, t in printed if line is not None and first <= line <= last)

    problems, outputs = [], output_blocks(document)
    for block, start in starts.items():
        shift = start - 1  # block line i is code line i + shift
        for want in expectations(block.code):
            got = between(want.first + shift, want.last + shift)
            problem = mismatch(want.text, got, want.tolerance)
            if problem:
                problems.append(f"{block.where} (+{want.line}): {problem}")
        if block.line in outputs:
            line, text, tolerance = outputs[block.line]
            got = between(start, start + block.code.count("\n"))
            problem = mismatch(text, got, tolerance)
            if problem:
                problems.append(f"{document.relative_to(ROOT)}:{line} (output block): {problem}")
    return problems


def _failing_block(code: str, stderr: str) -> str:
    """The document:line of the block whose code raised, from the traceback's line number."""
    lines = [int(n) for n in re.findall(r'File "<string>", line (\d+)', stderr)]
    if not lines:
        return "a block (see the traceback)"
    text = code.splitlines()
    current = "the document's setup"
    for number, line in enumerate(text, start=1):
        if number > lines[-1]:
            break
        found = re.match(r"__docs_block__ = '([^']+)'", line)
        if found:
            current = found.group(1)
    return current


def shell_commands(block: Block) -> list[str]:
    """The command lines of a shell block: in a console transcript (some lines start with
    "$ ") only those, without the prompt; elsewhere every line but comments."""
    lines = block.code.splitlines()
    if any(line.startswith("$ ") for line in lines):
        return [line[2:] for line in lines if line.startswith("$ ")]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.slow
@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[b.where for b in SHELL_BLOCKS])
def test_shell_blocks_run(block: Block, tmp_path: Path) -> None:
    """Every command of the shell block exits 0 (run in a temporary directory where relative
    outputs such as --out runs/x land; examples/ paths resolve to the repository's)."""
    _link_repo_folders(tmp_path)
    script = "set -euo pipefail\n" + "\n".join(shell_commands(block))
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, f"{block.where} failed:\n{result.stderr[-3000:]}"


def test_every_block_is_counted(record_property) -> None:
    """The count of blocks run, slow (run with OPBOOST_DOCS_SLOW=1) and skipped, printed in
    the summary line by tests/docs/conftest.py; every block has a known language."""
    counts = {"python": 0, "shell": 0, "slow": 0, "skip": 0}
    for block in ALL:
        if block.mark == "skip" or (block.mark == "slow" and not SLOW):
            counts[block.mark] += 1
        else:
            counts["python" if block.lang in PYTHON else "shell"] += 1
    record_property("docs_blocks", counts)
    assert counts["python"] + counts["shell"] > 0


def test_numbers_in_print_comments_are_checked() -> None:
    """A comment showing a number that a print statement prints is an expectation comment
    (``# -> ...``), which the block's run checks: the docs show no unchecked printed number."""
    unchecked = [
        f"{b.where} (+{line})"
        for b in ALL
        if b.lang in PYTHON
        for line in unchecked_numbers(b.code)
    ]
    assert not unchecked, (
        "comments showing printed numbers that no test checks (write them as '# -> TEXT', "
        "see tests/docs/expected_output.py): " + ", ".join(unchecked)
    )


SAME_AS_BLOCKS = [
    (d, line, body, SAME_AS.search(before).group("path"))
    for d in DOCUMENTS
    for line, lang, body, before in fenced(d)
    if lang == "toml" and SAME_AS.search(before)
]


@pytest.mark.parametrize(
    ("document", "line", "body", "path"),
    SAME_AS_BLOCKS,
    ids=[f"{d.relative_to(ROOT)}:{line}" for d, line, _, _ in SAME_AS_BLOCKS],
)
def test_toml_excerpts_are_the_files(document: Path, line: int, body: str, path: str) -> None:
    """A TOML block marked ``same-as FILE`` holds the file's TOML (comments aside)."""
    assert tomllib.loads(body) == tomllib.loads((ROOT / path).read_text(encoding="utf-8")), (
        f"{document.relative_to(ROOT)}:{line} differs from {path}"
    )
