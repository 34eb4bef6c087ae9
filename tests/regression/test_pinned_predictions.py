"""Restructurings change no result: every pinned fit predicts as before.

``pinned_predictions.json`` was written by ``pinned_cases.py``; a change meant to alter
results rewrites it (see that module). Scores are compared within the tolerance that module
states (results are the same up to the BLAS kernel's round-off), actions exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from pinned_cases import PINS, compute, mismatches, summary


@pytest.fixture(scope="module")
def computed() -> dict[str, np.ndarray | str]:
    return compute()


def test_every_case_is_pinned(computed):
    assert sorted(computed) == sorted(json.loads(PINS.read_text()))


@pytest.mark.parametrize("case", sorted(json.loads(PINS.read_text())))
def test_predictions_match_the_pins(computed, case):
    pinned = json.loads(PINS.read_text())[case]
    if isinstance(pinned, str):  # an invalid combination stays invalid
        assert computed[case] == pinned
    else:
        assert mismatches(computed[case], pinned) == []


def test_a_real_change_is_caught_and_round_off_is_not():
    scores = np.random.default_rng(0).normal(size=(200, 10))
    best = int(np.argmax(scores[150]))
    scores[150, 0], scores[150, best] = scores[150, best], scores[150, 0]  # best is action 0
    scores[150, 7] = scores[150, 0]  # ... tied with action 7: argmax says 0
    pinned = json.loads(json.dumps(summary(scores)))
    assert pinned["actions"][150] == 0
    assert mismatches(scores * (1 + 1e-13), pinned) == []
    tie_broken = scores.copy()
    tie_broken[150, 7] += 1e-14  # round-off breaks the tie the other way: still agrees
    assert mismatches(tie_broken, pinned) == []
    moved = scores.copy()
    moved[3, 0] += 1e-6
    assert [m.split(":")[0] for m in mismatches(moved, pinned)] == ["rows", "column_means"]
    moved = scores.copy()
    moved[150, 7] += 1e-3  # a real change: action 7 wins row 150 by 1e-3
    assert mismatches(moved, pinned)[-1] == "row 150: action 7 != pinned 0 (by 0.001)"
