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

# The child caps its address space at what it uses plus GIB GiB, then runs each named fit
# and prints "<name>: <error type>: <seconds> s: <message>" per line (or "<name>: fitted ...").
CHILD = r"""
import os, resource, sys, time
import numpy as np
import opboost
from opboost.api.data.logged import LoggedBandit
from opboost.compose.choice import PolicyChoice
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.compose.dr_reduction import DRReduction

used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
cap = used + (int(sys.argv[1]) << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
rng = np.random.default_rng(0)

def logs(k):
    return LoggedBandit(rng.normal(size=(300, 2)), rng.integers(0, k, 300), np.full(300, 1 / k),
                        rng.random(300), k)

def vw(data):
    from opboost_vw.offline import VWOfflinePolicy
    return VWOfflinePolicy(random_state=0).fit(data)

huge = logs(10**6)
small = RewardRegression(n_estimators=2, random_state=0).fit(logs(5000))
many = rng.normal(size=(100_000, 2))
fits = {
    "Booster": lambda: opboost.Booster(random_state=0).fit(huge),
    "PolicyChoice": lambda: PolicyChoice(random_state=0).fit(huge),
    "PolicyChoice[constant,reward_regression]": lambda: PolicyChoice(
        candidates=["constant", "reward_regression"], random_state=0).fit(huge),
    "PolicyChoice[constant]": lambda: PolicyChoice(candidates=["constant"], random_state=0)
        .fit(huge).policy_,
    "RewardRegression": lambda: RewardRegression(random_state=0).fit(huge),
    "DRReduction": lambda: DRReduction(random_state=0).fit(huge),
    "SlateBooster": lambda: opboost.make("policy_learner", "slate_boost", random_state=0)
        .fit(huge),
    "PolicyChoice[dr_reduction]": lambda: PolicyChoice(
        candidates=["constant", "dr_reduction"], random_state=0).fit(huge),
    "VWOfflinePolicy": lambda: vw(huge),
    "RewardRegression.decision_function[300]": lambda: small.decision_function(huge.contexts)
        .shape,
    "RewardRegression.decision_function[100000]": lambda: small.decision_function(many),
}
for name in sys.argv[2:]:
    start = time.perf_counter()
    try:
        out = fits[name]()
        print(f"{name}: fitted: {time.perf_counter() - start:.1f} s: {out!r}", flush=True)
    except MemoryError as exc:
        seconds = time.perf_counter() - start
        print(f"{name}: {type(exc).__name__}: {seconds:.1f} s: {exc}", flush=True)
"""


def run_child(gib: int, *names: str, timeout: float) -> list[str]:
    """The child's lines for the fits ``names`` under RLIMIT_AS = its usage + ``gib`` GiB;
    the child must exit normally within ``timeout`` seconds."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(gib), *names],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    return result.stdout.strip().split("\n")


def assert_lines(lines: list[str], expected: list[str], seconds: float = 10) -> None:
    """Each line matches its pattern and took less than ``seconds``."""
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.match(pattern, line), (line, pattern)
        assert float(line.split(": ")[2].split(" ")[0]) < seconds, line


LIMIT = (
    r"more than the \d+\.\d GiB left under the address-space limit "
    r"\(RLIMIT_AS \d+\.\d GiB\)\. "
)
STACKED_FIX = (
    r"Give each row its candidate set \(LoggedBandit\(candidates=\.\.\.\), a scipy\.sparse mask "
    r"for large catalogues: only candidates are stacked\), use fewer actions, or fit on a Dask "
    r"cluster \(opboost\.dask, docs/dask\.md\)\.$"
)


STACKED = (
    r"300 rows x 1,000,000 actions, 300,000,000 stacked rows of 3 columns: "
    r"at least 21\.0 GiB needed, "
)
DESIGN_FIX = (
    r"Use fewer actions, or a Booster with candidate sets on this catalogue "
    r"\(LoggedBandit\(candidates=\.\.\.\)\), which stacks only each row's candidates\.$"
)
DESIGN = (
    r"300 rows of \[x; onehot\(a\)\] with 1,000,002 float64 columns: at least 2\.2 GiB needed, "
)


def test_fits_too_large_for_the_address_space_raise_instead_of_dying():
    """Under RLIMIT_AS (used + 3 GiB), in a child: Booster and PolicyChoice on 300 rows x
    10**6 actions raise InsufficientMemoryError within seconds naming the estimate, the limit
    and the fix; RewardRegression scores 300 contexts x 5,000 actions (it predicts only the
    actions its trees split on, issue 52), and refuses the scores of 100,000 contexts, which
    cannot fit, saying what one context's take; the child exits normally."""
    lines = run_child(
        3,
        "Booster",
        "PolicyChoice",
        "RewardRegression.decision_function[300]",
        "RewardRegression.decision_function[100000]",
        timeout=120,
    )
    assert_lines(
        lines,
        [
            rf"^Booster: InsufficientMemoryError: \d+\.\d s: Booster\.fit: {STACKED}{LIMIT}"
            rf"{STACKED_FIX}",
            rf"^PolicyChoice: InsufficientMemoryError: \d+\.\d s: PolicyChoice\.fit: {STACKED}"
            rf"{LIMIT}{STACKED_FIX}",
            r"^RewardRegression\.decision_function\[300\]: fitted: \d+\.\d s: \(300, 5000\)$",
            r"^RewardRegression\.decision_function\[100000\]: InsufficientMemoryError: "
            r"\d+\.\d s: RewardRegression\.decision_function: scores of 100,000 contexts x "
            r"5,000 actions \(float64\): at least 3\.7 GiB needed, "
            rf"{LIMIT}Score fewer contexts per call \(one context's scores take 39\.1 KiB\)\.$",
        ],
    )


DR_NEED = (
    r"q and Gamma of 300 rows x 1,000,000 actions and their pairs \(32 bytes a cell\): "
    r"at least 8\.9 GiB needed, "
)
DR_FIX = r"Give each row its candidate set or the items their features, or use fewer actions\.$"


def test_every_policy_learner_on_a_million_actions_answers_under_a_memory_limit():
    """Issue 52 item 1: under RLIMIT_AS (used + 2 GiB), each policy learner on 300 rows x
    10**6 actions refuses up front, in seconds, with the estimate, the limit and the fix:
    PolicyChoice with the constant and reward_regression candidates (it ran past 600 s,
    predicting its doubly robust reward model one action at a time) and RewardRegression
    by the reward regression's dense rows, VWOfflinePolicy by its action lines, DRReduction
    (alone and as a PolicyChoice candidate) by its (n, K) pseudo-rewards (numpy's bare
    "Unable to allocate" before), SlateBooster by its dense (context, item) pairs."""
    lines = run_child(
        2,
        "PolicyChoice[constant,reward_regression]",
        "RewardRegression",
        "VWOfflinePolicy",
        "DRReduction",
        "PolicyChoice[dr_reduction]",
        "SlateBooster",
        timeout=60,
    )
    assert_lines(
        lines,
        [
            r"^PolicyChoice\[constant,reward_regression\]: InsufficientMemoryError: \d+\.\d s: "
            rf"PolicyChoice\.fit: {DESIGN}{LIMIT}{DESIGN_FIX}",
            rf"^RewardRegression: InsufficientMemoryError: \d+\.\d s: RewardRegression\.fit: "
            rf"{DESIGN}{LIMIT}{DESIGN_FIX}",
            r"^VWOfflinePolicy: InsufficientMemoryError: \d+\.\d s: VWOfflinePolicy\.fit: "
            r"300 examples of 1,000,000 actions, 300,000,000 action lines: at least 2\.2 GiB "
            rf"needed, {LIMIT}Give each row its candidate set "
            r"\(LoggedBandit\(candidates=\.\.\.\)\): only candidates are written; or use fewer "
            r"actions\.$",
            rf"^DRReduction: InsufficientMemoryError: \d+\.\d s: DRReduction\.fit: {DR_NEED}"
            rf"{LIMIT}{DR_FIX}",
            r"^PolicyChoice\[dr_reduction\]: InsufficientMemoryError: \d+\.\d s: "
            rf"PolicyChoice\.fit: {DR_NEED}{LIMIT}{DR_FIX}",
            r"^SlateBooster: InsufficientMemoryError: \d+\.\d s: SlateBooster\.fit: "
            r"300,000,000 \(context, item\) pairs of 1,000,003 columns and four 300 x "
            rf"1,000,000 arrays \(float64\): at least [\d,.]+ GiB needed, {LIMIT}Give each "
            r"impression its candidate set or the items their features, or use fewer items\.$",
        ],
    )


@pytest.mark.slow
def test_policy_choice_on_a_million_actions_fits_under_6_gib():
    """Issue 52 item 1, the probe as filed: under RLIMIT_AS of its usage + 6 GiB, in a
    child, PolicyChoice with the constant candidate alone and with reward_regression too,
    on 300 rows x 10**6 actions, each fit within 60 s (16-22 s and 31 s measured on a busy
    2-core machine; past 600 s before: the doubly robust reward model predicted each action
    separately on (60, 10**6 + 2) rows)."""
    lines = run_child(
        6,
        "PolicyChoice[constant]",
        "PolicyChoice[constant,reward_regression]",
        timeout=150,
    )
    assert_lines(
        lines,
        [
            r"^PolicyChoice\[constant\]: fitted: \d+\.\d s: ConstantPolicy\(",
            r"^PolicyChoice\[constant,reward_regression\]: fitted: \d+\.\d s: "
            r"PolicyChoice\(candidates=\['constant', 'reward_regression'\]",
        ],
        seconds=60,
    )
