"""Property-based tests (hypothesis) of the three loaders of outside input: ``LoggedBandit``,
the config parser and ``load_policy``. On generated bad input every failure is a
``ValueError`` (``ConfigError`` for configs) whose message names the field, never another
exception, a hang or a crash of the process."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
import textwrap

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import ConfigError
from opboost.compose.config import parse_config

FIELDS = ("contexts", "actions", "propensities", "rewards", "n_actions")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- LoggedBandit ------------------------------------------------------------------------

weird_numbers = st.sampled_from(
    [0, 1, 2, -1, 0.5, 1.5, 3.7, math.nan, math.inf, -math.inf, 2**63, -(2**63), 1e308, 1j]
)


def _column(n: int) -> st.SearchStrategy:
    """A length-n column of mostly valid values with a few weird ones, as a numpy array."""
    return st.lists(st.one_of(st.floats(0.05, 1.0), weird_numbers), min_size=n, max_size=n).map(
        lambda values: np.array(values)
    )


@st.composite
def logged_inputs(draw):
    n = draw(st.integers(0, 6))
    d = draw(st.integers(0, 3))
    k = draw(st.one_of(st.integers(-1, 5), st.sampled_from([2.5, math.nan, "3", None])))
    contexts = draw(
        st.one_of(
            st.just(np.zeros((n, d))),
            st.just(np.full((n, d), math.nan)),
            st.just(np.zeros((n, d), dtype=complex)),
            st.just(np.zeros((n,))),
            st.just(np.zeros((n + 1, d))),
        )
    )
    actions = draw(st.one_of(_column(n), st.just(np.zeros(n, dtype=np.int64))))
    propensities = draw(st.one_of(_column(n), st.just(np.full(n, 0.5))))
    rewards = draw(st.one_of(_column(n), st.just(np.ones(n))))
    return contexts, actions, propensities, rewards, k


@SETTINGS
@given(logged_inputs())
def test_logged_bandit_rejects_bad_input_with_a_value_error_naming_the_field(inputs):
    try:
        LoggedBandit(*inputs)
    except ValueError as exc:
        assert any(field in str(exc) for field in FIELDS), str(exc)


# --- the config parser -------------------------------------------------------------------

BASE = {
    "data": {"name": "digits"},
    "simulation": {"log_fraction": 0.1, "logging_C": 0.1, "test_fraction": 0.25},
    "experiment": {"seeds": [0, 1]},
    "algorithms": [
        {"label": "logging", "baseline": "logging"},
        {
            "label": "BOPL-S",
            "booster": {"n_rounds": 5},
            "objective": "bopl_s",
            "base_learner": {"name": "lightgbm_tree", "num_leaves": 7},
        },
    ],
}
bad_values = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -5, 0, 0.0, 2.0, 1e300, "", "x", None]),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
paths = st.sampled_from(
    [
        ("simulation", "log_fraction"),
        ("simulation", "logging_C"),
        ("simulation", "test_fraction"),
        ("experiment", "seeds"),
        ("data", "name"),
        ("algorithms", 1, "booster", "n_rounds"),
        ("algorithms", 1, "base_learner", "num_leaves"),
        ("algorithms", 1, "objective"),
        ("algorithms", 0, "baseline"),
        ("algorithms", 1, "label"),
    ]
)


@SETTINGS
@given(st.lists(st.tuples(paths, bad_values), min_size=1, max_size=3))
def test_config_parser_raises_only_config_errors(mutations):
    raw = copy.deepcopy(BASE)
    for path, value in mutations:
        target = raw
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    try:
        parse_config(raw, file="fuzz.toml")
    except ConfigError as exc:
        assert "fuzz.toml" in str(exc)


# --- load_policy, in a child process (a crash must not take pytest down) ------------------

CHILD = textwrap.dedent(
    """
    import hashlib, json, random, sys, traceback
    import numpy as np
    import opboost
    from opboost.api.data.logged import LoggedBandit
    from opboost.core.policy_loading import load_policy

    rng = np.random.default_rng(0)
    n, k = 60, 3
    logged = LoggedBandit(rng.normal(size=(n, 2)), rng.integers(0, k, n), np.full(n, 1 / k),
                          rng.integers(0, 2, n).astype(float), k)
    booster = opboost.Booster(n_rounds=3, base_learner_params={"num_threads": 1},
                              random_state=0).fit(logged)
    root = sys.argv[1]
    good = booster.save(root + "/good.json").read_text()
    manifest = json.loads(good)
    text = manifest["ensemble"]["text"]
    lines = text.splitlines()
    numbers = ["0", "-1", "1e308", "nan", "inf", "400", "99999", "", "x", "-99999"]
    for case in range(int(sys.argv[2])):
        r = random.Random(case)
        bad = list(lines)
        for _ in range(r.randint(1, 3)):
            i = r.randrange(len(bad))
            line = bad[i]
            if "=" in line and r.random() < 0.8:
                key, _, value = line.partition("=")
                parts = value.split(" ")
                parts[r.randrange(len(parts))] = r.choice(numbers)
                bad[i] = key + "=" + " ".join(parts)
            else:
                del bad[i]
        new = "\\n".join(bad) + "\\n"
        m = json.loads(good)
        m["ensemble"]["text"] = new
        m["ensemble"]["sha256"] = hashlib.sha256(new.encode()).hexdigest()
        if "size" in m["ensemble"]:
            m["ensemble"]["size"] = len(new.encode())
        path = root + f"/bad{case}.json"
        with open(path, "w") as fh:
            json.dump(m, fh)
        try:
            load_policy(path).predict(np.zeros((2, 2)))
        except ValueError:
            pass
        except Exception:
            traceback.print_exc()
            print(f"CASE {case}: not a ValueError")
            sys.exit(3)
    print("ALL OK")
    """
)


def test_load_policy_raises_only_value_errors_on_edited_model_text(tmp_path):
    """200 edited LightGBM model texts with recomputed checksums: load_policy raises
    ValueError or loads; the process never aborts (LightGBM's SIGABRT) or raises otherwise."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), "200"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "ALL OK" in result.stdout
