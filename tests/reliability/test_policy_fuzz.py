"""Random byte edits of a saved policy, in every section of ``ensemble.txt`` and
``policy.json``, with every checksum recomputed as whoever edits a file would: each load runs
in a child process, which must answer (load, or a ValueError naming the problem) and never
die by a signal (issue 40: a ``[`` line in the ``parameters:`` section was a SIGSEGV inside
LightGBM)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from opboost.api.policy import manifest_digest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals, RLIMIT_AS")

N_EDITS = 400
SEED = 40

# The child loads each path it reads on stdin and serves with the policy, then prints one
# line: "ok", "ValueError" or "OTHER <type>: <message>". Its address space is capped at
# +4 GiB (pyarrow, behind pandas' strings, reserves much of it), so an edit that makes
# LightGBM allocate without bound shows as an error, not as the machine swapping.
CHILD = r"""
import os, resource, sys
import numpy as np, pandas as pd
import opboost
opboost.get_registry()
frame = pd.DataFrame({"x": [0.5, -1.0, 2.0], "c": ["a", "b", "z"]})
numbers = np.array([[0.5, 0.0], [-1.0, 1.0], [2.0, -1.0]])
pages = int(open("/proc/self/statm").read().split()[0])
cap = pages * os.sysconf("SC_PAGE_SIZE") + (4 << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
print("ready", flush=True)
for line in sys.stdin:
    try:
        policy = opboost.load_policy(line.strip())
        policy.predict(frame, return_ids=True)
        policy.predict_proba(numbers)
        list(policy.ensemble.staged_decision_function(numbers))
        print("ok", flush=True)
    except ValueError:
        print("ValueError", flush=True)
    except Exception as exc:
        print("OTHER", type(exc).__name__ + ":", str(exc)[:200].replace(chr(10), " "), flush=True)
"""


class Child:
    """One child process that loads many files; restarted only after it dies."""

    def __init__(self) -> None:
        self.deaths: list[tuple[str, int]] = []
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            # one OpenMP thread: LightGBM's parallel parse of a 3-tree model then takes 1 ms,
            # not the 20 ms of waking a thread team on a busy machine
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        assert self.proc.stdout.readline() == "ready\n"

    def load(self, path: Path) -> str:
        """The child's answer for ``path`` (LightGBM's own warnings skipped), or "died"."""
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        while answer := self.proc.stdout.readline():
            if not answer.startswith("[LightGBM]"):
                return answer.rstrip("\n")
        self.deaths.append((str(path), self.proc.wait(30)))
        self._start()
        return "died"

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


def _sections(text: str, marks: list[str]) -> list[tuple[str, int, int]]:
    """(name, start, end) spans of ``text`` starting at each mark (in order) up to the next."""
    starts = [text.index(mark) for mark in marks]
    ends = [*starts[1:], len(text)]
    return [(mark.strip()[:24], s, e) for mark, s, e in zip(marks, starts, ends, strict=True)]


ENSEMBLE_MARKS = [
    '{"format"',
    "tree\n",
    "Tree=0\n",
    "Tree=1\n",
    "end of trees",
    "parameters:",
    "[data: ]",
    "end of parameters",
    "pandas_categorical:",
]
MANIFEST_MARKS = ['"opboost_policy"', '"n_actions"', '"metadata"', '"schema"', '"ensemble"']
ALPHABET = b'0123456789-.:=[] ,\n{}"abzeE+'


def _edit(data: bytes, start: int, end: int, rng: random.Random) -> bytes:
    """One random edit of a byte (replace, delete, insert) or of a line (delete, replace by
    '[', duplicate) at a random position in data[start:end]."""
    at = rng.randrange(start, end)
    kind = rng.randrange(6)
    if kind == 0:
        return data[:at] + bytes([rng.choice(ALPHABET)]) + data[at + 1 :]
    if kind == 1:
        return data[:at] + data[at + 1 :]
    if kind == 2:
        return data[:at] + bytes([rng.choice(ALPHABET)]) + data[at:]
    line_start = data.rfind(b"\n", 0, at) + 1
    line_end = data.find(b"\n", at)
    line_end = len(data) if line_end < 0 else line_end
    line = data[line_start:line_end]
    new = {3: b"", 4: b"[", 5: line + b"\n" + line}[kind]
    return data[:line_start] + new + data[line_end:]


def _recompute(ensemble: bytes, manifest_text: bytes) -> tuple[bytes, bytes]:
    """(ensemble.txt, policy.json) with the ensemble header's and the manifest's SHA-256s,
    the size and the manifest digest recomputed, as far as the edited texts still parse."""
    first, newline, model = ensemble.partition(b"\n")
    try:
        header = json.loads(first)
        header["sha256"] = hashlib.sha256(model).hexdigest()
        ensemble = json.dumps(header).encode() + newline + model
    except (ValueError, TypeError):
        pass
    try:
        manifest = json.loads(manifest_text)
        manifest["ensemble"].update(sha256=hashlib.sha256(ensemble).hexdigest(), size=len(ensemble))
        manifest["manifest_sha256"] = manifest_digest(manifest)
    except (ValueError, TypeError, KeyError, AttributeError):
        return ensemble, manifest_text
    return ensemble, json.dumps(manifest).encode()


def test_random_edits_of_every_section_never_kill_the_loading_process(tabular_policy, tmp_path):
    """400 seeded edits spread over the nine parts of ensemble.txt and five of policy.json:
    every load answers (loads, or ValueError), none kills its process or raises another
    error type."""
    ensemble = (tabular_policy / "ensemble.txt").read_bytes()
    manifest = (tabular_policy / "policy.json").read_bytes()
    targets = [("ensemble.txt", s) for s in _sections(ensemble.decode(), ENSEMBLE_MARKS)]
    targets += [("policy.json", s) for s in _sections(manifest.decode(), MANIFEST_MARKS)]
    rng = random.Random(SEED)
    child = Child()
    answers: Counter[str] = Counter()
    others = []
    try:
        for case in range(N_EDITS):
            file, (section, start, end) = targets[case % len(targets)]
            edited = [ensemble, manifest]
            at = 0 if file == "ensemble.txt" else 1
            edited[at] = _edit(edited[at], start, end, rng)
            edited_ensemble, edited_manifest = _recompute(*edited)
            target = tmp_path / f"case{case}"
            target.mkdir()
            (target / "ensemble.txt").write_bytes(edited_ensemble)
            (target / "policy.json").write_bytes(edited_manifest)
            answer = child.load(target)
            answers[answer.split(" ")[0]] += 1
            if answer.startswith("OTHER"):
                others.append((file, section, case, answer))
    finally:
        child.close()
    assert child.deaths == []
    assert others == []
    assert answers["ok"] > 0 and answers["ValueError"] > 0, answers
