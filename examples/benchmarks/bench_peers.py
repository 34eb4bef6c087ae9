"""Does opboost beat what a user would do instead? Paired true test reward on the same logs.

Protocol (London et al. 2023, appendix F), per data set and seed s = 0 .. ``--seeds``-1: a
seeded subsample of ``--max-rows`` rows (default 20,000, so Fashion-MNIST, letter, connect4 and
adult are subsampled; stratified for single-label data), a stratified 70/30 train/test split
(multilabel labels are split without stratification), supervised-to-bandit logging on the train
rows (``supervised_to_bandit(..., random_state=s)``). Every method is fitted on the SAME logged
rows and scored by its TRUE expected reward on the labelled test rows: argmax actions, the
logging policy with its own (stochastic) probabilities. Methods:

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
* ``vw_mtr``, ``vw_dr``  Vowpal Wabbit ``--cb_adf -q sa --cb_type mtr`` / ``dr``, 5 passes
                         (the opboost-vw plugin's ``vw_cb_adf``; skipped with a note when the
                         plugin or vowpalwabbit is not installed);
* ``constant``           the best constant action, chosen on the logs by SNIPS;
* ``logging``            the logging policy.

``--methods`` picks a subset (the reference always runs). A new method is one more entry of
the dict that :func:`build_methods` returns: a callable from a :class:`Trial` (the seed's
``logged`` rows, ``X_test``, ``seed`` and ``logging_policy``) to (m,) test actions or (m, K)
action probabilities.

Output, one pipe table per data set: each method's mean true test reward with its Student-t
95% interval over seeds; the PAIRED difference (method - reference), seed by seed on the same
logs and test rows, with its Student-t 95% interval; W/T/L of the reference against the method:
W if the interval of (reference - method) lies wholly above 0, L if wholly below 0, T otherwise
(always T with a single seed); and the mean seconds of the method's fit + predict. A final
table counts the reference's W/T/L against each method over the data sets. A method that
raises on a seed is reported (traceback on stderr) and left out of that seed's pairs. Progress
and timings go to stderr; ``--json PATH`` writes every per-seed number (after each data set).
Real data sets are read from ``--data-dir`` (default ``$OPBOOST_DATA``) and skipped with a note
when it is unset or their files are missing.

    python examples/benchmarks/bench_peers.py --datasets wine digits --seeds 5
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
import importlib.metadata
import importlib.util
import json
import platform
import re
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import opboost
from opboost import Booster
from opboost.registry import UnknownComponentError, get_registry
from opboost.selection import constant_action_values
from opboost.simulation.datasets import SupervisedData, resolve_data_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import Trial, simulate_trial, t_interval

#: A method: the seed's trial -> (m,) test actions (argmax policy) or (m, K) probabilities.
Method = Callable[[Trial], np.ndarray]

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
#: Vowpal Wabbit settings of vw_mtr / vw_dr besides cb_type (``--cb_adf -q sa``, 5 passes).
VW_PARAMS: dict[str, Any] = {"n_passes": 5, "interactions": True}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


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

    def run(trial: Trial) -> np.ndarray:
        booster = Booster(**{"random_state": trial.seed, **kwargs})
        return booster.fit(trial.logged).predict(trial.X_test)

    return run


def learner_method(cls: type, params: Mapping[str, Any]) -> Method:
    """A policy learner ``cls(random_state=seed, **params)``; its greedy actions."""
    kwargs = dict(params)

    def run(trial: Trial) -> np.ndarray:
        learner = cls(**{"random_state": trial.seed, **kwargs})
        return learner.fit(trial.logged).predict(trial.X_test)

    return run


def constant_method(trial: Trial) -> np.ndarray:
    """The constant action with the best SNIPS value on the logs."""
    best = int(np.nanargmax(constant_action_values(trial.logged)))
    return np.full(trial.n_test, best)


def logging_method(trial: Trial) -> np.ndarray:
    """The logging policy's (m, K) action probabilities."""
    return trial.logging_policy.predict_proba(trial.X_test)


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


def load(name: str, data_dir: str | None) -> SupervisedData | str:
    """The data set, or the reason it is skipped."""
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


def run_dataset(
    data: SupervisedData,
    methods: Mapping[str, Method],
    seeds: list[int],
    max_rows: int | None,
) -> dict[str, Any]:
    """Every method on every seed of one data set: rewards and seconds, (n_seeds,) each."""
    rewards = {m: np.full(len(seeds), np.nan) for m in methods}
    seconds = {m: np.full(len(seeds), np.nan) for m in methods}
    errors: dict[str, dict[int, str]] = {}
    sizes: dict[str, int] = {}
    for i, seed in enumerate(seeds):
        start = time.perf_counter()
        trial = simulate_trial(data, seed, max_rows)
        sizes = {"logged": len(trial.logged.actions), "test": trial.n_test}
        parts = [f"simulate {time.perf_counter() - start:.1f} s"]
        for name, method in methods.items():
            t0 = time.perf_counter()
            try:
                rewards[name][i] = trial.value(method(trial))
            except Exception as exc:  # one failing method must not end a long run
                errors.setdefault(name, {})[seed] = f"{type(exc).__name__}: {exc}"
                print(traceback.format_exc(), file=sys.stderr, flush=True)
            seconds[name][i] = time.perf_counter() - t0
            value = "failed" if np.isnan(rewards[name][i]) else f"{rewards[name][i]:.4f}"
            parts.append(f"{name} {value} ({seconds[name][i]:.1f} s)")
        total = time.perf_counter() - start
        print(
            f"[{data.name} seed {seed}] " + ", ".join(parts) + f" | {total:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return {
        "seeds": seeds,
        "sizes": sizes,
        "rewards": rewards,
        "seconds": seconds,
        "errors": errors,
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
    rewards: Mapping[str, np.ndarray], seconds: Mapping[str, np.ndarray], reference: str
) -> list[dict[str, Any]]:
    """One row per method (the reference first): reward, paired difference, W/T/L, seconds."""
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
            "seconds": float(np.nanmean(seconds[name])),
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
        if row["n"] < n_seeds:
            reward += f" ({n_seeds - row['n']}/{n_seeds} seeds failed)"
        diff = "–" if row["diff"] is None else _interval(*row["diff"], sign="+")
        name = f"**{row['method']}**" if row["method"] == reference else row["method"]
        lines.append(f"| {name} | {reward} | {diff} | {row['wtl'] or '–'} | {row['seconds']:.2f} |")
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
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), metavar="NAME")
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
    known = get_registry().names("dataset")
    unknown = [d for d in args.datasets if d not in known]
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join(["python", sys.argv[0], *(sys.argv[1:] if argv is None else argv)])
    version = versions()
    seeds = list(range(args.seeds))
    max_rows = args.max_rows or None
    methods, reference = args.methods_, args.reference
    print(f"Command: `{command}`\n")
    print(f"Versions: {version}\n")
    print(
        f"Seeds {seeds[0]}..{seeds[-1]}, max rows {max_rows or 'all'}, "
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
    for name in args.datasets:
        start = time.perf_counter()
        data = load(name, args.data_dir)
        if isinstance(data, str):
            print(f"> Skipped {name}: {data}\n", flush=True)
            print(f"[{name}] skipped: {data}", file=sys.stderr, flush=True)
            record["skipped"][name] = data
            continue
        result = run_dataset(data, methods, seeds, max_rows)
        rows = compare(result["rewards"], result["seconds"], reference)
        for row in rows:
            if row["method"] != reference:
                verdicts[row["method"]][name] = row["wtl"] or "–"
        n, d = data.X.shape
        sizes = result["sizes"]
        subsample = f" (subsample of {max_rows:,})" if max_rows and n > max_rows else ""
        print(
            f"### {name}\n\n{n:,} rows{subsample}, {d} features, K = {data.n_actions} "
            f"({data.task}); logs {sizes['logged']:,} rows, test {sizes['test']:,} rows; "
            f"{len(seeds)} seeds.\n"
        )
        print("\n".join(table(rows, reference, len(seeds))) + "\n", flush=True)
        elapsed = time.perf_counter() - start
        print(f"[{name}] done in {elapsed:.0f} s", file=sys.stderr, flush=True)
        record["datasets"][name] = {
            "n_rows": int(n),
            "n_features": int(d),
            "n_actions": int(data.n_actions),
            "seeds": seeds,
            "sizes": sizes,
            "reward": {m: _nan_to_none(v) for m, v in result["rewards"].items()},
            "seconds": {m: _nan_to_none(v) for m, v in result["seconds"].items()},
            "errors": result["errors"],
            "wtl": {row["method"]: row["wtl"] for row in rows if row["wtl"] is not None},
            "wall_seconds": elapsed,
        }
        if args.json:
            _write_json(args.json, record)
    if verdicts and record["datasets"]:
        n_data = len(record["datasets"])
        plural = "s" if n_data > 1 else ""
        print(f"### Summary: {reference} against each method over {n_data} data set{plural}\n")
        print("\n".join(summary_table(verdicts, reference)))
    if args.json:
        _write_json(args.json, record)
    return 0


def _nan_to_none(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else float(v) for v in values]


def _write_json(path: str, record: Mapping[str, Any]) -> None:
    with open(path, "w") as fh:
        json.dump(record, fh, indent=1)


if __name__ == "__main__":
    raise SystemExit(main())
