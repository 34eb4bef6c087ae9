"""Does opboost beat what a user would do instead? Paired true test reward on the same logs.

Data sets come in suites (``--suite``, default ``classic``; ``--datasets`` names them one by
one instead):

* ``classic``: the 12 supervised data sets below, K fixed actions;
* ``catalogue``: simulated recommender logs with item features and per-row candidate sets
  (``_bench_shapes.CATALOGUES``: a bilinear context x item reward on new or on seen test
  items, item popularity dominating, sparse categorical item features, 5 and 100 candidates
  a row, a 1% click rate, and logs shaped like the Open Bandit sample), each seed a fresh
  seeded world of ``simulate_catalogue``; every method is served the test rows' candidates
  and item features, and scored by the mean true click probability of its chosen items;
* ``small``: small and skewed logs: ``NAME@N`` (any registered data set, a seeded subsample
  of N rows per seed, e.g. ``scene@2000``), ``multilabel_skewed`` (one label on 75% of the
  rows), ``one_best`` (one action best for most contexts) and ``smooth`` (few actions,
  rewards smooth in x), synthetic worlds seeded per trial (``_bench_shapes.SYNTHETIC``);
* ``tabular``: 30 random user-like tables (``opboost.simulation.tabular_world``: 2 to 20
  actions with string ids, numeric columns with missing values, categorical and string
  columns, several reward forms, loggers near uniform to heavily skewed, 1,000 to 100,000
  rows), one world a seed; ``--worlds reporting`` (default) runs the worlds defaults are
  reported on, ``--worlds tuning`` the disjoint ones they may be tuned on
  (``_bench_tabular.REPORTING_WORLD_SEEDS`` and ``TUNING_WORLD_SEEDS``). Bench seed s draws
  the world's logs anew (``log_seed=s``); each world's 10,000 test contexts are fixed and
  every method is scored by their exact mean rewards;
* ``all``: classic, catalogue and small (``tabular`` runs on its own).

Protocol (London et al. 2023, appendix F), per data set and seed s = 0 .. ``--seeds``-1: a
seeded subsample of ``--max-rows`` rows (default 20,000, so Fashion-MNIST, letter, connect4 and
adult are subsampled; stratified for single-label data), a stratified 70/30 train/test split
(multilabel labels are split without stratification), supervised-to-bandit logging on the train
rows (``supervised_to_bandit(..., random_state=s)``). Every method is fitted on the SAME logged
rows and scored by its TRUE expected reward on the labelled test rows: argmax actions, the
logging policy with its own (stochastic) probabilities. ``NAME@N`` subsamples min(N,
``--max-rows``) rows; ``--sim-rows`` caps the rows of the simulated (catalogue and synthetic)
worlds, for a fast smoke run. Methods:

* ``default``            ``Booster(random_state=s)``: the default (POEM from the reward-model
                         start, IPS, LightGBM trees, one thread), 100 rounds unless
                         ``--n-rounds``, argmax policy;
* ``--booster NAME=JSON`` an extra Booster configuration, ``Booster(random_state=s, **JSON)``
                         with ``num_threads=1`` merged into ``base_learner_params`` (LightGBM
                         base learner) and ``n_rounds`` from ``--n-rounds`` unless JSON has it;
* ``--policy-learner NAME=JSON`` a registered policy learner (kind "policy_learner"):
                         JSON's ``"name"`` picks it, the other keys are its parameters
                         (``random_state=s`` unless given);
* ``reward_regression``  opboost's direct-method baseline: LightGBM on [x, a], argmax (the
                         first thing a user tries);
* ``dr_reduction``       opboost's doubly robust reduction: one LightGBM regressor per
                         action on the cross-fitted DR pseudo-rewards, argmax (on
                         catalogues one regressor on the pairs [x; phi(a)]);
* ``vw_mtr``, ``vw_dr``  Vowpal Wabbit ``--cb_adf -q sa --cb_type mtr`` / ``dr``, 5 passes
                         (the opboost-vw plugin's ``vw_cb_adf``; skipped with a note when the
                         plugin or vowpalwabbit is not installed);
* ``constant``           the best constant action, chosen on the logs by SNIPS; on catalogue
                         logs the popularity policy: LightGBM on phi(a) alone (reward
                         regression with the context replaced by a constant), the best-scored
                         candidate, so it also serves items never logged (a best logged item
                         could not);
* ``logging``            the logging policy.

On catalogue logs every method fits on the logs and predicts the test rows with
``candidates=`` and ``action_features=``; a policy learner whose ``predict`` takes no
``action_features`` is reported "n/a" with the reason under the table (no traceback).

``--methods`` picks a subset (the reference always runs). A new method is one more entry of
the dict that :func:`build_methods` returns: a callable from a trial (``_bench_common.Trial``
or ``_bench_shapes.CatalogueTrial``: the seed's ``logged`` rows, ``X_test``, the ``serving``
keywords of ``predict``, ``seed`` and ``logging_probs()``) to (m,) test actions or (m, K)
action probabilities; it raises :class:`NotApplicable` for a shape it cannot handle.

Output, one pipe table per data set: each method's mean true test reward with its Student-t
95% interval over seeds; the PAIRED difference (method - reference), seed by seed on the same
logs and test rows, with its Student-t 95% interval; W/T/L of the reference against the method:
W if the interval of (reference - method) lies wholly above 0, L if wholly below 0, T otherwise
(always T with a single seed); and the mean seconds of the method's fit + predict. A final
table counts the reference's W/T/L against each method over the data sets, and another gives
each method's fit + predict seconds per data set with the ratio of the reference's to
``reward_regression``'s. A method that raises on a seed is reported (traceback on stderr, the
message under the table) and left out of that seed's pairs. Progress
and timings go to stderr; ``--json PATH`` writes every per-seed number (after each data set).
Real data sets are read from ``--data-dir`` (default ``$OPBOOST_DATA``) and skipped with a note
when it is unset or their files are missing.

    python examples/benchmarks/bench_peers.py --datasets wine digits --seeds 5
    python examples/benchmarks/bench_peers.py --suite catalogue --seeds 2
    python examples/benchmarks/bench_peers.py --suite tabular --worlds reporting --seeds 5
    python examples/benchmarks/bench_peers.py --suite small --data-dir "$OPBOOST_DATA"
    python examples/benchmarks/bench_peers.py --data-dir "$OPBOOST_DATA" --seeds 5 \\
        --json runs/peers.json > runs/peers.md
    python examples/benchmarks/bench_peers.py --data-dir "$OPBOOST_DATA" \\
        --datasets car nursery --methods default dr reward_regression \\
        --booster 'dr={"estimator": "dr"}' \\
        --booster 'rm_start={"estimator": "dr", "warm_start": "reward_model"}'
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib.metadata
import importlib.util
import inspect
import json
import platform
import re
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import opboost
from opboost import Booster
from opboost.simulation.datasets import SupervisedData, resolve_data_dir

try:
    from opboost.api.serving.tie_order import constant_action_values
    from opboost.core.registry import UnknownComponentError, get_registry
except ImportError:  # a tree before opboost.core: bench_round_time.py --before runs load() there
    from opboost.registry import UnknownComponentError, get_registry
    from opboost.selection import constant_action_values

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import simulate_trial, t_interval
from _bench_shapes import CATALOGUES, SYNTHETIC, CatalogueTrial
from _bench_tabular import TABULAR, WORLDS, tabular_trial
from _bench_tabular import summary as tabular_summary

#: A method: the seed's trial -> (m,) test actions (argmax policy) or (m, K) probabilities.
Method = Callable[[Any], np.ndarray]

DATASETS = (
    "digits",
    "wine",
    "synthetic_multiclass",
    "car",
    "nursery",
    "dna",
    "connect4",
    "letter",
    "adult",
    "scene",
    "tmc2007_500",
    "fashion_mnist",
)
#: The small and skewed logs of issue 34: subsampled real sets and synthetic worlds.
SMALL = (
    "scene@2000",
    "tmc2007_500@2000",
    "letter@2000",
    "adult@2000",
    "multilabel_skewed",
    "one_best",
    "smooth",
)
SUITES: dict[str, tuple[str, ...]] = {
    "classic": DATASETS,
    "catalogue": tuple(CATALOGUES),
    "small": SMALL,
    "all": DATASETS + tuple(CATALOGUES) + SMALL,
    "tabular": WORLDS["reporting"],  # --worlds tuning: WORLDS["tuning"]
}
#: Vowpal Wabbit settings of vw_mtr / vw_dr besides cb_type (``--cb_adf -q sa``, 5 passes).
VW_PARAMS: dict[str, Any] = {"n_passes": 5, "interactions": True}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class NotApplicable(Exception):
    """A method cannot handle this shape of log; the message says why (shown as a note)."""


# --- methods ----------------------------------------------------------------------------------


def booster_method(params: Mapping[str, Any], n_rounds: int | None) -> Method:
    """``Booster(random_state=seed, **params)`` with one LightGBM thread; argmax actions."""
    kwargs = dict(params)
    if n_rounds is not None:
        kwargs.setdefault("n_rounds", n_rounds)
    if kwargs.get("base_learner", "lightgbm_tree") == "lightgbm_tree":
        kwargs["base_learner_params"] = {
            "num_threads": 1,
            **(kwargs.get("base_learner_params") or {}),
        }

    def run(trial: Any) -> np.ndarray:
        booster = Booster(**{"random_state": trial.seed, **kwargs}).fit(trial.logged)
        run.last_choice = kept(booster)
        return booster.predict(trial.X_test, **trial.serving)

    return run


def kept(booster: Any) -> dict[str, Any]:
    """What a fitted Booster kept (JSON-ready): the rounds grown and kept, the fallback that
    replaced them (None: the boosted policy), and its start's family and trees."""
    start = getattr(booster, "reward_start_", None) or {}
    best = getattr(booster, "best_round_", None)  # set by a held-out choice only
    return {
        "n_rounds": int(booster.n_rounds_),
        "best_round": None if best is None else int(best),
        "fallback": getattr(booster, "fallback_", None),
        "start_family": start.get("family"),
        "start_trees": start.get("trees"),
    }


def learner_method(cls: type, params: Mapping[str, Any]) -> Method:
    """A policy learner ``cls(random_state=seed, **params)``; its greedy actions (n/a on a
    catalogue when its ``predict`` takes no ``action_features``)."""
    kwargs = dict(params)

    def run(trial: Any) -> np.ndarray:
        accepted = inspect.signature(cls.predict).parameters
        missing = [key for key in trial.serving if key not in accepted]
        if missing:
            raise NotApplicable(
                f"policy learner {cls.__name__}'s predict takes no {', '.join(missing)}: it "
                f"cannot serve a catalogue"
            )
        learner = cls(**{"random_state": trial.seed, **kwargs})
        return learner.fit(trial.logged).predict(trial.X_test, **trial.serving)

    return run


def constant_method(trial: Any) -> np.ndarray:
    """The constant action with the best SNIPS value on the logs; on a catalogue, the
    popularity policy (reward regression on phi(a) alone, the best-scored candidate)."""
    if not isinstance(trial, CatalogueTrial):
        best = int(np.nanargmax(constant_action_values(trial.logged)))
        return np.full(trial.n_test, best)
    from opboost.algorithms.policy_learners.reward_regression import RewardRegression

    logs = dataclasses.replace(trial.logged, contexts=np.zeros((len(trial.logged), 1)))
    model = RewardRegression(random_state=trial.seed).fit(logs)
    return model.predict(np.zeros((trial.n_test, 1)), **trial.serving)


def logging_method(trial: Any) -> np.ndarray:
    """The logging policy's (m, K) action probabilities on the test rows."""
    return trial.logging_probs()


def build_methods(
    boosters: list[tuple[str, dict[str, Any]]],
    learners: list[tuple[str, dict[str, Any]]],
    n_rounds: int | None,
) -> tuple[dict[str, Method], list[str]]:
    """Every available method, in table order, and notes on the ones that are not available."""
    registry, notes = get_registry(), []
    methods: dict[str, Method] = {"default": booster_method({}, n_rounds)}

    def add(name: str, method: Method) -> None:
        if name in methods:
            raise ValueError(f"method {name!r} is defined twice; pick another NAME.")
        methods[name] = method

    for name, params in boosters:
        add(name, booster_method(params, n_rounds))
    for name, params in learners:
        params = dict(params)
        if "name" not in params:
            raise ValueError(f"--policy-learner {name}: JSON needs a registered 'name'.")
        add(name, learner_method(registry.get("policy_learner", params.pop("name")), params))
    add(
        "reward_regression", learner_method(registry.get("policy_learner", "reward_regression"), {})
    )
    add("dr_reduction", learner_method(registry.get("policy_learner", "dr_reduction"), {}))
    try:
        vw = registry.get("policy_learner", "vw_cb_adf")
        if importlib.util.find_spec("vowpalwabbit") is None:
            raise ImportError("the vowpalwabbit package is not installed")
    except (UnknownComponentError, ImportError) as exc:
        notes.append(f"vw_mtr, vw_dr skipped: {exc}")
    else:
        add("vw_mtr", learner_method(vw, {"cb_type": "mtr", **VW_PARAMS}))
        add("vw_dr", learner_method(vw, {"cb_type": "dr", **VW_PARAMS}))
    add("constant", constant_method)
    add("logging", logging_method)
    return methods, notes


# --- running ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Source:
    """A data set of the run: ``trial(seed)`` builds a seed's trial; ``header`` describes it
    under its title; ``info`` goes to the JSON."""

    name: str
    trial: Callable[[int], Any]
    header: str
    info: dict[str, Any]


def split_name(name: str) -> tuple[str, int | None]:
    """``NAME@N`` -> (NAME, N); ``NAME`` -> (NAME, None); ValueError for a bad N."""
    base, at, rows = name.partition("@")
    if not at:
        return name, None
    if not rows.isdigit() or int(rows) < 50:
        raise ValueError(f"{name!r}: the rows after '@' must be an integer >= 50, e.g. scene@2000")
    return base, int(rows)


def supervised_data(name: str, data_dir: str | None) -> SupervisedData | str:
    """The registered data set ``name`` (every row), or the reason it is skipped."""
    cls = get_registry().get("dataset", name)
    if not getattr(cls, "bundled", False) and resolve_data_dir(data_dir) is None:
        return "real data set and no data directory: pass --data-dir or set $OPBOOST_DATA"
    try:
        data = cls().load(data_dir)
    except FileNotFoundError as exc:
        return str(exc)
    if data.task == "regression":
        return "regression data set: no supervised-to-bandit simulation"
    return data


def load(
    name: str, data_dir: str | None, max_rows: int | None = None, sim_rows: int | None = None
) -> Source | str:
    """The data set ``name`` as a :class:`Source`, or the reason it is skipped. ``NAME@N``
    caps the rows at N, ``max_rows`` those of registered data sets, ``sim_rows`` those of
    the simulated worlds."""
    base, rows = split_name(name)
    if base in TABULAR:
        cap = min(filter(None, (rows, sim_rows)), default=None)
        header = tabular_summary(TABULAR[base], cap) + "; new logs each seed"
        info = {"kind": "tabular", "world_seed": TABULAR[base], "description": header}
        trial = functools.partial(tabular_trial, TABULAR[base], max_rows=cap)
        return Source(name, trial, header, info)
    if base in CATALOGUES or base in SYNTHETIC:
        world = CATALOGUES.get(base) or SYNTHETIC[base]
        n = min(filter(None, (world.n, rows, sim_rows)))
        kind = "catalogue" if base in CATALOGUES else "synthetic"
        info = {"kind": kind, "n_rows": n, "description": world.summary(n)}
        return Source(name, functools.partial(world.trial, n=n), world.summary(n), info)
    data = supervised_data(base, data_dir)
    if isinstance(data, str):
        return data
    cap = min(filter(None, (rows, max_rows)), default=None)
    n, d = data.X.shape
    subsample = f" (subsample of {cap:,})" if cap and n > cap else ""
    header = f"{n:,} rows{subsample}, {d} features, K = {data.n_actions} ({data.task})"
    info = {"kind": "supervised", "n_rows": n, "n_features": d, "n_actions": data.n_actions}
    return Source(name, functools.partial(simulate_trial, data, max_rows=cap), header, info)


def run_dataset(source: Source, methods: Mapping[str, Method], seeds: list[int]) -> dict[str, Any]:
    """Every method on every seed of one data set: rewards and seconds, (n_seeds,) each."""
    rewards = {m: np.full(len(seeds), np.nan) for m in methods}
    seconds = {m: np.full(len(seeds), np.nan) for m in methods}
    # what each Booster method kept on each seed (its ``last_choice``; None: not a Booster)
    choices: dict[str, list[Any]] = {m: [None] * len(seeds) for m in methods}
    errors: dict[str, dict[int, str]] = {}
    not_applicable: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for i, seed in enumerate(seeds):
        start = time.perf_counter()
        trial = source.trial(seed)
        sizes = {
            "logged": len(trial.logged.actions),
            "test": trial.n_test,
            "actions": int(trial.logged.n_actions),
        }
        parts = [f"simulate {time.perf_counter() - start:.1f} s"]
        for name, method in methods.items():
            t0 = time.perf_counter()
            try:
                rewards[name][i] = trial.value(method(trial))
                choices[name][i] = getattr(method, "last_choice", None)
            except NotApplicable as exc:
                not_applicable[name] = str(exc)
                continue  # no seconds, no progress entry
            except Exception as exc:  # one failing method must not end a long run
                errors.setdefault(name, {})[seed] = f"{type(exc).__name__}: {exc}"
                print(traceback.format_exc(), file=sys.stderr, flush=True)
            seconds[name][i] = time.perf_counter() - t0
            value = "failed" if np.isnan(rewards[name][i]) else f"{rewards[name][i]:.4f}"
            parts.append(f"{name} {value} ({seconds[name][i]:.1f} s)")
        total = time.perf_counter() - start
        print(
            f"[{source.name} seed {seed}] " + ", ".join(parts) + f" | {total:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return {
        "seeds": seeds,
        "sizes": sizes,
        "rewards": rewards,
        "seconds": seconds,
        "choices": {m: c for m, c in choices.items() if any(x is not None for x in c)},
        "errors": errors,
        "not_applicable": not_applicable,
    }


# --- statistics and tables --------------------------------------------------------------------


def verdict(diff: np.ndarray) -> str:
    """W/T/L of the reference, from the per-seed differences (method - reference)."""
    mean, half = t_interval(diff)
    if np.isnan(half):
        return "T"
    if mean + half < 0:  # reference - method wholly above 0
        return "W"
    if mean - half > 0:
        return "L"
    return "T"


def compare(
    rewards: Mapping[str, np.ndarray],
    seconds: Mapping[str, np.ndarray],
    reference: str,
    not_applicable: Collection[str] = (),
) -> list[dict[str, Any]]:
    """One row per method (the reference first): reward, paired difference, W/T/L, seconds;
    ``not_applicable`` methods are marked."""
    ref = rewards[reference]
    rows = []
    for name in sorted(rewards, key=lambda m: m != reference):
        values = rewards[name]
        ok = ~np.isnan(values)
        paired = ok & ~np.isnan(ref)
        diff = values[paired] - ref[paired]
        row = {
            "method": name,
            "n": int(ok.sum()),
            "reward": t_interval(values[ok]),
            "diff": t_interval(diff) if name != reference and len(diff) else None,
            "wtl": verdict(diff) if name != reference and len(diff) else None,
            "seconds": _mean(seconds[name]),
            "not_applicable": name in not_applicable,
        }
        rows.append(row)
    return rows


def _interval(mean: float, half: float, sign: str = "") -> str:
    if np.isnan(mean):
        return "–"
    return f"{mean:{sign}.4f}" + ("" if np.isnan(half) else f" ± {half:.4f}")


def table(rows: list[dict[str, Any]], reference: str, n_seeds: int) -> list[str]:
    """The data set's pipe table."""
    lines = [
        f"| method | test reward (95% CI) | method − {reference} (paired 95% CI) "
        f"| {reference} W/T/L | fit+predict s |",
        "|---|---|---|:-:|--:|",
    ]
    for row in rows:
        reward = _interval(*row["reward"])
        if row.get("not_applicable"):
            reward = "n/a"
        elif row["n"] < n_seeds:
            reward += f" ({n_seeds - row['n']}/{n_seeds} seeds failed)"
        diff = "–" if row["diff"] is None else _interval(*row["diff"], sign="+")
        name = f"**{row['method']}**" if row["method"] == reference else row["method"]
        secs = _number(row["seconds"], ".2f")
        lines.append(f"| {name} | {reward} | {diff} | {row['wtl'] or '–'} | {secs} |")
    return lines


def method_notes(result: Mapping[str, Any]) -> list[str]:
    """Quoted notes under a data set's table: methods not applicable, and failures."""
    notes = [f"> {m}: n/a, {reason}." for m, reason in result["not_applicable"].items()]
    for method, by_seed in result["errors"].items():
        for seed, message in by_seed.items():
            notes.append(f"> {method} failed on seed {seed}: {message}")
    return notes


def seconds_table(
    datasets: Mapping[str, Mapping[str, Any]], methods: list[str], reference: str
) -> list[str]:
    """Mean fit + predict seconds of each method per data set, and the reference's ratio to
    ``reward_regression`` (both measured on the same trials, one after the other)."""
    ratio = "reward_regression" in methods and reference != "reward_regression"
    head = "| data set | " + " | ".join(methods)
    head += f" | {reference} / reward_regression |" if ratio else " |"
    lines = [head, "|---|" + "--:|" * (len(methods) + ratio)]
    for name, result in datasets.items():
        means = {m: _mean(result["seconds"][m]) for m in methods}
        cells = [_number(means[m], ".2f") for m in methods]
        if ratio:
            cells.append(_number(means[reference] / means["reward_regression"], ".1f"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def summary_table(verdicts: Mapping[str, Mapping[str, str]], reference: str) -> list[str]:
    """The reference's W/T/L against each method over the data sets ("–": no result)."""
    lines = [
        f"| method | {reference} W | T | L | no result | data sets where {reference} loses |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for method, by_data in verdicts.items():
        counts = " | ".join(str(sum(v == c for v in by_data.values())) for c in "WTL–")
        lost = ", ".join(d for d, v in by_data.items() if v == "L") or "–"
        lines.append(f"| {method} | {counts} | {lost} |")
    return lines


# --- command line -----------------------------------------------------------------------------


def named_json(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME=JSON-object`` -> (NAME, dict), for ``--booster`` and ``--policy-learner``."""
    name, sep, payload = text.partition("=")
    if not sep or not _NAME.match(name):
        raise argparse.ArgumentTypeError(
            f'expected NAME=JSON, e.g. \'dr={{"estimator": "dr"}}\'; got {text!r}'
        )
    try:
        params = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{name}: invalid JSON ({exc})") from exc
    if not isinstance(params, dict):
        raise argparse.ArgumentTypeError(f"{name}: the JSON must be an object, got {payload!r}")
    return name, params


def _git(root: Path, *args: str) -> str:
    """Output of a read-only git command in ``root`` (takes no index lock)."""
    command = ["git", "--no-optional-locks", "-C", str(root), *args]
    return subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=10
    ).stdout.strip()


def versions() -> str:
    """Versions of opboost and its learners, and the git commit of the source if any."""
    parts = [f"opboost {opboost.__version__}"]
    for dist in ("lightgbm", "vowpalwabbit", "numpy", "scikit-learn"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
    parts.append(f"Python {platform.python_version()}")
    root = Path(opboost.__file__).resolve().parent.parent
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = _git(root, "rev-parse", "--short", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no", "--", "opboost")
        parts.append(f"git {commit}" + (" (opboost/ modified)" if dirty else ""))
    return ", ".join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--suite",
        choices=tuple(SUITES),
        default="classic",
        help="the group of data sets (default classic); --datasets names them instead",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=None,
        metavar="NAME",
        help="data sets: registered names, NAME@N (a subsample of N rows), catalogue and "
        "synthetic names (see --suite)",
    )
    parser.add_argument(
        "--worlds",
        choices=tuple(WORLDS),
        default="reporting",
        help="the tabular suite's worlds: reporting (default) or tuning (disjoint seeds)",
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1 (default 5)")
    parser.add_argument(
        "--n-rounds", type=int, default=None, help="boosting rounds (default: Booster's)"
    )
    parser.add_argument("--data-dir", default=None, help="real data sets (default $OPBOOST_DATA)")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=20_000,
        help="seeded subsample of larger data sets (default 20000; 0: none)",
    )
    parser.add_argument(
        "--sim-rows",
        type=int,
        default=None,
        metavar="N",
        help="at most N logged rows in the simulated worlds (default: their own; smoke runs)",
    )
    parser.add_argument(
        "--booster",
        type=named_json,
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="an extra Booster configuration (repeatable)",
    )
    parser.add_argument(
        "--policy-learner",
        type=named_json,
        action="append",
        default=[],
        metavar="NAME=JSON",
        help='a registered policy learner, JSON {"name": ..., params} (repeatable)',
    )
    parser.add_argument("--methods", nargs="+", default=None, metavar="NAME", help="default: all")
    parser.add_argument("--reference", default="default", help="method compared against")
    parser.add_argument("--json", default=None, metavar="PATH", help="write per-seed numbers")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    suite = WORLDS[args.worlds] if args.suite == "tabular" else SUITES[args.suite]
    args.datasets_ = list(suite if args.datasets is None else args.datasets)
    known = [*get_registry().names("dataset"), *CATALOGUES, *SYNTHETIC, *TABULAR]
    try:
        unknown = [d for d in args.datasets_ if split_name(d)[0] not in known]
    except ValueError as exc:
        parser.error(str(exc))
    if unknown:
        parser.error(f"unknown data sets {unknown}; known: {', '.join(known)}")
    try:
        all_methods, notes = build_methods(args.booster, args.policy_learner, args.n_rounds)
    except (ValueError, UnknownComponentError) as exc:
        parser.error(str(exc))
    if args.reference not in all_methods:
        parser.error(f"--reference {args.reference!r} is not available: {', '.join(all_methods)}")
    chosen = list(all_methods) if args.methods is None else list(args.methods)
    skipped_vw = any("vw_mtr" in n for n in notes)
    missing = [
        m for m in chosen if m not in all_methods and not (skipped_vw and m.startswith("vw_"))
    ]
    if missing:
        parser.error(f"unknown methods {missing}; available: {', '.join(all_methods)}")
    if args.reference not in chosen:
        chosen.insert(0, args.reference)
    args.methods_ = {m: f for m, f in all_methods.items() if m in chosen}
    args.notes_ = notes
    return args


def main(argv: list[str] | None = None, *, shown: list[str] | None = None) -> int:
    """Run the benchmark on ``argv`` (default: the command line); the printed command shows
    ``shown`` (default: ``argv``), e.g. a wrapper's own arguments too."""
    args = parse_args(argv)
    shown = shown if shown is not None else (sys.argv[1:] if argv is None else argv)
    command = shlex.join(["python", sys.argv[0], *shown])
    version = versions()
    seeds = list(range(args.seeds))
    max_rows = args.max_rows or None
    methods, reference = args.methods_, args.reference
    print(f"Command: `{command}`\n")
    print(f"Versions: {version}\n")
    sim_rows = f", simulated rows at most {args.sim_rows:,}" if args.sim_rows else ""
    print(
        f"Seeds {seeds[0]}..{seeds[-1]}, max rows {max_rows or 'all'}{sim_rows}, "
        f"n_rounds {args.n_rounds or 'Booster default'}, reference **{reference}**.\n"
    )
    for note in args.notes_:
        print(f"> Note: {note}\n")
    record: dict[str, Any] = {
        "command": command,
        "versions": version,
        "settings": {k: v for k, v in vars(args).items() if not k.endswith("_")},
        "methods": list(methods),
        "notes": list(args.notes_),
        "skipped": {},
        "datasets": {},
    }
    verdicts: dict[str, dict[str, str]] = {m: {} for m in methods if m != reference}
    for name in args.datasets_:
        start = time.perf_counter()
        source = load(name, args.data_dir, max_rows, args.sim_rows)
        if isinstance(source, str):
            print(f"> Skipped {name}: {source}\n", flush=True)
            print(f"[{name}] skipped: {source}", file=sys.stderr, flush=True)
            record["skipped"][name] = source
            continue
        result = run_dataset(source, methods, seeds)
        rows = compare(result["rewards"], result["seconds"], reference, result["not_applicable"])
        for row in rows:
            if row["method"] != reference:
                verdicts[row["method"]][name] = row["wtl"] or "–"
        sizes = result["sizes"]
        print(
            f"### {name}\n\n{source.header}; logs {sizes['logged']:,} rows, test "
            f"{sizes['test']:,} rows; {len(seeds)} seeds.\n"
        )
        print("\n".join(table(rows, reference, len(seeds))) + "\n", flush=True)
        notes = method_notes(result)
        if notes:
            print("\n".join(notes) + "\n", flush=True)
        elapsed = time.perf_counter() - start
        print(f"[{name}] done in {elapsed:.0f} s", file=sys.stderr, flush=True)
        record["datasets"][name] = {
            **source.info,
            "seeds": seeds,
            "sizes": result["sizes"],
            "reward": {m: _nan_to_none(v) for m, v in result["rewards"].items()},
            "seconds": {m: _nan_to_none(v) for m, v in result["seconds"].items()},
            "kept": result["choices"],
            "errors": result["errors"],
            "not_applicable": result["not_applicable"],
            "wtl": {row["method"]: row["wtl"] for row in rows if row["wtl"] is not None},
            "wall_seconds": elapsed,
        }
        if args.json:
            _write_json(args.json, record)
    if verdicts and record["datasets"]:
        n_data = len(record["datasets"])
        plural = "s" if n_data > 1 else ""
        print(f"### Summary: {reference} against each method over {n_data} data set{plural}\n")
        print("\n".join(summary_table(verdicts, reference)) + "\n")
        print("### Fit + predict seconds (mean over seeds)\n")
        print("\n".join(seconds_table(record["datasets"], list(methods), reference)))
    if args.json:
        _write_json(args.json, record)
    return 0


def _mean(values: Any) -> float:
    """Mean of the values that are neither None nor NaN; NaN when there are none."""
    a = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.mean()) if len(a) else float("nan")


def _number(value: float, spec: str) -> str:
    return "–" if np.isnan(value) else format(value, spec)


def _nan_to_none(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else float(v) for v in values]


def _write_json(path: str, record: Mapping[str, Any]) -> None:
    with open(path, "w") as fh:
        json.dump(record, fh, indent=1)


if __name__ == "__main__":
    raise SystemExit(main())
