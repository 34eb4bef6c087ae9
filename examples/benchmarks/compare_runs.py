"""W/T/L of one method of a new ``bench_peers.py`` run against the methods of earlier runs, on
the data sets and seeds they share.

A change to the default is re-run alone (``--methods default``): every trial is seeded, so the
peers' per-seed values of an earlier run on the same data sets and seeds stand. ``--new`` and
``--old`` take ``bench_peers.py --json`` files (a suite run in parts: every part);
``--against`` names the old run's methods, ``default`` among them the default as it was then
(shown as "before"). Per data set: the paired mean difference (new − old) ± its Student-t 95%
half-width over the seeds and W/T/L from the new method's side; then, per method, the W/T/L
counts, the mean over data sets and the data sets whose mean difference is below
``--below`` (default −0.003, issue 48's bar). docs/benchmarks/defaults.md's reporting tables
come from it:

    python examples/benchmarks/compare_runs.py --new repA.json repB.json \\
        --old peersA.json peersB.json --against reward_regression dr_reduction constant default
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval
from bench_peers import verdict


def load(paths: list[str]) -> dict[str, dict[str, Any]]:
    """data set -> {"rows": logged rows or None, "reward": {method: (seeds,) array}}, the
    runs of ``paths`` merged (a later file's method replaces an earlier one's)."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        for name, result in json.loads(Path(path).read_text())["datasets"].items():
            entry = out.setdefault(name, {"rows": None, "reward": {}})
            entry["rows"] = result.get("sizes", {}).get("logged", entry["rows"])
            for method, values in result["reward"].items():
                entry["reward"][method] = np.asarray(values, dtype=np.float64)
    return out


def compare(
    new: dict[str, dict[str, Any]], old: dict[str, dict[str, Any]], method: str, against: list[str]
) -> tuple[list[list[str]], dict[str, dict[str, Any]]]:
    """(table rows, per-method summary) of ``new``'s ``method`` against ``old``'s methods."""
    rows: list[list[str]] = []
    totals = {m: {"W": 0, "T": 0, "L": 0, "means": {}} for m in against}
    for name in sorted(set(new) & set(old), key=_order):
        mine = new[name]["reward"].get(method)
        if mine is None:
            continue
        rows_logged = new[name]["rows"] or old[name]["rows"]
        line = [name, "–" if rows_logged is None else f"{rows_logged:,}", f"{np.nanmean(mine):.4f}"]
        for peer in against:
            theirs = old[name]["reward"].get(peer)
            if theirs is None or len(theirs) != len(mine):
                line.append("–")
                continue
            diff = mine - theirs
            diff = diff[~np.isnan(diff)]
            mean, half = t_interval(diff)
            outcome = verdict(-diff)  # the W/T/L of its reference, the new method
            totals[peer][outcome] += 1
            totals[peer]["means"][name] = mean
            line.append(f"{mean:+.4f} ± {half:.4f} ({outcome})")
        rows.append(line)
    return rows, totals


def _order(name: str) -> tuple[str, int, str]:
    stem, _, tail = name.rpartition("_")
    return (stem, int(tail), name) if tail.isdigit() else (name, 0, name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", nargs="+", required=True, help="the new run's JSON files")
    parser.add_argument("--old", nargs="+", required=True, help="the earlier run's JSON files")
    parser.add_argument("--method", default="default", help="the new run's method")
    parser.add_argument("--against", nargs="+", required=True, help="the earlier run's methods")
    parser.add_argument("--below", type=float, default=-0.003)
    args = parser.parse_args(argv)
    rows, totals = compare(load(args.new), load(args.old), args.method, args.against)
    if not rows:
        raise SystemExit(f"no data set has method {args.method!r} in --new and in --old")
    shown = ["before" if m == args.method else m for m in args.against]
    print(f"| data set | logged rows | {args.method} | "
          + " | ".join(f"{args.method} − {m}" for m in shown) + " |")  # fmt: skip
    print("|---|--:|--:|" + "--:|" * len(shown))
    for line in rows:
        print("| " + " | ".join(line) + " |")
    print()
    for peer, label in zip(args.against, shown, strict=True):
        t = totals[peer]
        below = [f"{name} {m:+.4f}" for name, m in t["means"].items() if m < args.below]
        mean = float(np.mean(list(t["means"].values()))) if t["means"] else float("nan")
        print(
            f"{label}: W/T/L {t['W']}/{t['T']}/{t['L']}, mean {mean:+.4f}, "
            f"{len(below)} means below {args.below}" + (f": {', '.join(below)}" if below else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
