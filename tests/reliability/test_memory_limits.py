"""Fits that cannot fit in memory are refused up front, with the estimate, the limit and the
fix, instead of dying inside LightGBM (issue 40: Booster().fit on 300 rows with 10**6
actions was a SIGSEGV under a 6 GiB limit, PolicyChoice().fit ran past 300 s)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc")

# The child caps its address space at what it uses plus 3 GiB, then runs each fit and prints
# "<name>: <error type>: <message>" per line (or "<name>: fitted").
CHILD = r"""
import os, resource, sys, time
import numpy as np
import opboost
from opboost.api.data.logged import LoggedBandit
from opboost.compose.choice import PolicyChoice
from opboost.algorithms.policy_learners.reward_regression import RewardRegression

used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
cap = used + (3 << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
rng = np.random.default_rng(0)

def logs(k):
    return LoggedBandit(rng.normal(size=(300, 2)), rng.integers(0, k, 300), np.full(300, 1 / k),
                        rng.random(300), k)

huge = logs(10**6)
small = RewardRegression(n_estimators=2, random_state=0).fit(logs(5000))
fits = {
    "Booster": lambda: opboost.Booster(random_state=0).fit(huge),
    "PolicyChoice": lambda: PolicyChoice(random_state=0).fit(huge),
    "RewardRegression.decision_function": lambda: small.decision_function(huge.contexts),
}
for name, fit in fits.items():
    start = time.perf_counter()
    try:
        fit()
        print(name + ": fitted", flush=True)
    except MemoryError as exc:
        seconds = time.perf_counter() - start
        print(f"{name}: {type(exc).__name__}: {seconds:.1f} s: {exc}", flush=True)
"""

LIMIT = (
    r"more than the \d+\.\d GiB left under the address-space limit "
    r"\(RLIMIT_AS \d+\.\d GiB\)\. "
)
STACKED_FIX = (
    r"Give each row its candidate set \(LoggedBandit\(candidates=\.\.\.\), a scipy\.sparse mask "
    r"for large catalogues: only candidates are stacked\), use fewer actions, or fit on a Dask "
    r"cluster \(opboost\.dask, docs/dask\.md\)\.$"
)


def test_fits_too_large_for_the_address_space_raise_instead_of_dying():
    """Under RLIMIT_AS (used + 3 GiB), in a child: Booster and PolicyChoice on 300 rows x
    10**6 actions, and RewardRegression's scores of 300 contexts x 5,000 actions, each raise
    InsufficientMemoryError within seconds naming the estimate, the limit and the fix; the
    child exits normally."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    lines = result.stdout.strip().split("\n")
    stacked = (
        r"300 rows x 1,000,000 actions, 300,000,000 stacked rows of 3 columns: "
        r"at least 21\.0 GiB needed, "
    )
    expected = [
        rf"^Booster: InsufficientMemoryError: \d+\.\d s: Booster\.fit: {stacked}{LIMIT}"
        rf"{STACKED_FIX}",
        rf"^PolicyChoice: InsufficientMemoryError: \d+\.\d s: PolicyChoice\.fit: {stacked}{LIMIT}"
        rf"{STACKED_FIX}",
        r"^RewardRegression\.decision_function: InsufficientMemoryError: \d+\.\d s: "
        r"RewardRegression\.decision_function of 300 contexts: 1,500,000 rows of "
        r"\[x; onehot\(a\)\] with 5,002 float64 columns: at least 55\.9 GiB needed, "
        rf"{LIMIT}Score fewer contexts per call \(each is stacked with every action\)\.$",
    ]
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.match(pattern, line), (line, pattern)
        assert float(line.split(": ")[2].split(" ")[0]) < 10, line  # refused, not attempted
