"""Off-policy evaluation on the Open Bandit Dataset, obp's standard experiment (docs/obp.md).

Two logging policies ran on the same platform: uniform random and Bernoulli Thompson sampling
(BTS). Each log's mean click is its own policy's on-policy value (the ground truth), so the
value of each policy estimated from the *other* log with IPS and SNIPS can be checked
against it. Run from the repository root (a few seconds)::

    OPBOOST_DATA=/path/to/datasets python examples/open_bandit_ope.py
    python examples/open_bandit_ope.py --data-dir /path/to/datasets

where the data directory holds ``open_bandit/{random,bts}/all/{all.csv,item_context.csv}``
(obp's layout).

The evaluated policy's action_dist, obp's (n, K, L) array read at each logged row's position:

* BTS evaluated on the random log: BTS's propensities changed over the week as its posterior
  was updated, and obp rebuilds the policy from ZOZOTOWN's prior (``BernoulliTS(...,
  is_zozotown_prior=True).compute_batch_action_dist``), which is not in the data files.
  Here BTS is its empirical per-(item, position) distribution in the BTS log,
  ``#{rows at position l showing item a} / #{rows at position l}``, the same for every row
  (a context-free policy, as obp's batch action_dist is); an item never shown at a position
  gets probability 0 there.
* The random policy evaluated on the BTS log: exactly 1/K for every item at every position
  (the random log's propensity_score is 1/80 on every row).

The intervals are 95%: IPS a Student-t interval on the round values, SNIPS the delta-method
interval, the on-policy value a Student-t interval on the clicks.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

import opboost
from opboost import LoggedBandit
from opboost.algorithms.estimators.ips import IPS
from opboost.algorithms.estimators.snips import SNIPS


def empirical_action_dist(log: LoggedBandit, n_rows: int) -> np.ndarray:
    """(n_rows, K, L): the share of each item at each position in ``log``, every row alike."""
    counts = np.zeros((log.n_actions, log.n_positions))
    np.add.at(counts, (log.actions, log.positions), 1.0)
    shares = counts / counts.sum(axis=0, keepdims=True)
    return np.broadcast_to(shares, (n_rows, *shares.shape))


def on_policy(log: LoggedBandit) -> tuple[float, float, float]:
    """Mean click with a 95% Student-t interval."""
    n, mean = len(log), float(log.rewards.mean())
    half = float(stats.t.ppf(0.975, n - 1) * log.rewards.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None, help="directory of real data sets")
    parser.add_argument("--campaign", default="all", choices=("all", "men", "women"))
    args = parser.parse_args(argv)
    logs = {
        policy: opboost.make(
            "dataset", "open_bandit", behavior_policy=policy, campaign=args.campaign
        ).load_logged(args.data_dir)
        for policy in ("random", "bts")
    }
    # obp's dict and back loses nothing (positions, action_context)
    again = LoggedBandit.from_obp(logs["bts"].to_obp())
    assert np.array_equal(again.positions, logs["bts"].positions)

    rows = []
    for target, logged in (("bts", "random"), ("random", "bts")):
        log = logs[logged]
        if target == "bts":
            dist = empirical_action_dist(logs["bts"], len(log))
        else:
            dist = np.full((len(log), log.n_actions, log.n_positions), 1 / log.n_actions)
        truth = on_policy(logs[target])
        for estimator in (IPS(), SNIPS()):
            interval = estimator.estimate_interval(log, dist)
            rows.append((target, logged, estimator.name, interval, truth))

    print(
        f"Open Bandit Dataset, campaign {args.campaign!r}: "
        + ", ".join(
            f"{p} log {len(v):,} rows, {int(v.rewards.sum())} clicks" for p, v in logs.items()
        )
        + f"; {logs['bts'].n_actions} items, {logs['bts'].n_positions} positions"
    )
    header = (
        f"{'policy':<7} {'from log':<9} {'estimator':<9} {'estimate':>9} {'95% interval':>20}"
        f"  {'on-policy':>9} {'95% interval':>20}  {'rel. error':>10}"
    )
    print(header)
    print("-" * len(header))
    for target, logged, name, iv, (value, low, high) in rows:
        print(
            f"{target:<7} {logged:<9} {name:<9} {iv.value:>9.5f} "
            f"{f'[{iv.low:.5f}, {iv.high:.5f}]':>20}  {value:>9.5f} "
            f"{f'[{low:.5f}, {high:.5f}]':>20}  {abs(iv.value - value) / value:>10.3f}"
        )


if __name__ == "__main__":
    main()
