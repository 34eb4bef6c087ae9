"""Docs that run: every Python and shell block of README.md and docs/*.md is executed.

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

The tests that run blocks are marked ``slow`` (an interpreter per document, a minute or two in
all): the default ``python -m pytest`` leaves them out, CI and the README's test command
(``-m "slow or not slow"``) run them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!-- docs-test: (?P<kind>slow|skip)\b[^>]*-->\s*$")
SETUP = re.compile(r"<!-- docs-test setup\n(?P<code>.*?)-->", re.S)
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


def blocks(document: Path) -> list[Block]:
    """The fenced Python and shell blocks of ``document``, with their markers."""
    text = document.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        lang = match.group("lang").lower()
        if lang not in PYTHON + SHELL:
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        line = text[: match.start()].count("\n") + 1
        out.append(
            Block(document, line, lang, match.group("body"), mark.group("kind") if mark else None)
        )
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
        [(pos, f"__docs_block__ = 'setup before line {_line(text, pos)}'\n{code}")
         for pos, code in setups]
        + [(_offset(text, b.line), f"__docs_block__ = {b.where!r}\n{b.code}") for b in runnable]
    )  # fmt: skip
    parts = [step for _, step in steps]
    code = "\n".join(parts)
    _link_repo_folders(tmp_path)
    # -c rather than a script file: Dask's LocalCluster (docs/dask.md) spawns workers that
    # would re-run a script's top level
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        pytest.fail(f"{_failing_block(code, result.stderr)} failed:\n{result.stderr[-3000:]}")


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
