"""Serving one context from a table: a one-row DataFrame, a dict and the encoded numpy row.

Fits ``opboost.Booster()`` (the default: a reward-model start, held-out selection and a refit)
on 2,000 logs of a table with a categorical column, a string column and a number (the table
of docs/your-logs.md), saves and loads the policy, then times in ONE process, interleaved call
by call (ratios only: absolute times on a shared machine move between runs):

- ``policy.predict`` of the loaded policy on the numpy row, a one-row DataFrame and a dict;
- ``Booster.predict`` on the numpy row and the DataFrame;
- LightGBM's own single-thread predict of the same trees on the designed rows
  (``booster.predict(rows, raw_score=True, num_threads=1)``, rows built outside the timing).

It prints the median and p99 of each over ``--calls`` calls and the ratios the docs quote. A
call the installed opboost cannot make (a dict before it read them) prints "n/a".

Run: ``python examples/benchmarks/bench_serving_frames.py`` (about 20 s).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import opboost
from opboost.lgbm.rows import design_rows


def logs(n: int, seed: int = 0) -> opboost.LoggedBandit:
    rng = np.random.default_rng(seed)
    ads = ["ad-a", "ad-b", "ad-c", "ad-d"]
    city = rng.choice(["paris", "lyon", "nice"], n)
    shown = rng.choice(ads[:3], n)
    best = {"paris": "ad-a", "lyon": "ad-b", "nice": "ad-c"}
    df = pd.DataFrame(
        {
            "city": pd.Categorical(city),
            "device": rng.choice(["ios", "android"], n),
            "age": rng.uniform(18, 80, n),
            "ad": shown,
            "p": 1 / 3,
            "click": (shown == pd.Series(city).map(best)).astype(float),
        }
    )
    return opboost.LoggedBandit.from_dataframe(
        df, contexts=["city", "device", "age"], action="ad", propensity="p", reward="click",
        actions=ads,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    data = logs(args.rows)
    booster = opboost.Booster(random_state=0).fit(data)
    with tempfile.TemporaryDirectory() as tmp:
        booster.save(Path(tmp) / "policy")
        policy = opboost.load_policy(Path(tmp) / "policy")
    ensemble = policy.ensemble
    row = {"city": "paris", "device": "ios", "age": 30.0}
    frame = pd.DataFrame({k: [v] for k, v in row.items()})
    numpy_row = data.contexts[:1].copy()
    numpy_row[0] = [data.schema.categories["city"].index("paris"),
                    data.schema.categories["device"].index("ios"), 30.0]  # fmt: skip
    rows = design_rows(numpy_row, ensemble.n_actions, ensemble.action_design)
    print(
        f"policy: {ensemble.booster.num_trees()} trees, design {ensemble.action_design}, "
        f"K={ensemble.n_actions}, d={numpy_row.shape[1]}; opboost {opboost.__version__}, "
        f"pandas {pd.__version__}"
    )
    calls: dict[str, Any] = {
        "policy.predict(numpy row)": lambda: policy.predict(numpy_row),
        "policy.predict(DataFrame row)": lambda: policy.predict(frame),
        "policy.predict(dict)": lambda: policy.predict(row),
        "Booster.predict(numpy row)": lambda: booster.predict(numpy_row),
        "Booster.predict(DataFrame row)": lambda: booster.predict(frame),
        "LightGBM predict, num_threads=1": lambda: ensemble.booster.predict(
            rows, raw_score=True, num_threads=1
        ),
    }
    times: dict[str, list[float] | None] = {}
    for name, f in calls.items():
        try:
            f()
            times[name] = []
        except Exception:  # a call this opboost cannot make
            times[name] = None
    live = [(name, f) for name, f in calls.items() if times[name] is not None]
    for i in range(args.calls + 100):  # the first 100 rounds warm up and are dropped
        for k in range(len(live)):
            name, f = live[(i + k) % len(live)]
            start = time.perf_counter()
            f()
            if i >= 100:
                times[name].append(time.perf_counter() - start)

    def median(name: str) -> float:
        return float(np.median(times[name])) * 1e6

    print(f"\none context, {args.calls} interleaved calls each (microseconds):")
    print(f"{'':34s}{'p50':>9s}{'p99':>10s}")
    for name, t in times.items():
        if t is None:
            print(f"{name:34s}{'n/a':>9s}{'n/a':>10s}")
        else:
            print(f"{name:34s}{median(name):9.1f}{np.percentile(t, 99) * 1e6:10.1f}")
    policy_numpy, booster_numpy = "policy.predict(numpy row)", "Booster.predict(numpy row)"
    ratios = (
        ("DataFrame / numpy (policy)", "policy.predict(DataFrame row)", policy_numpy),
        ("dict / numpy (policy)", "policy.predict(dict)", policy_numpy),
        ("DataFrame / numpy (Booster)", "Booster.predict(DataFrame row)", booster_numpy),
        ("numpy / LightGBM", policy_numpy, "LightGBM predict, num_threads=1"),
    )
    for label, a, b in ratios:
        value = "n/a" if times[a] is None else f"{median(a) / median(b):.2f}"
        print(f"ratio {label:28s}{value:>9s}")


if __name__ == "__main__":
    main()
