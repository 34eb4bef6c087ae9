"""Random user-like tables of logged bandit feedback, each drawn from one seed
(``tabular_world``), to judge defaults on logs they were not tuned on.

A world is a promotions-style table: a pandas DataFrame of logs (context columns, the logged
action's string id, its propensity and the reward), the column mapping for
``LoggedBandit.from_dataframe``, fresh test contexts and the true expected reward of every
action on them, so any policy's true value is known. Everything comes from the seed through
numpy Generators (structure, logs and test rows from separate streams, so capping the rows
keeps the same reward function and logger; ``log_seed`` draws other logs of the same world):
the same seeds give the same world bit for bit.

The distributions (U: uniform, LU: log-uniform, a "reference sample" is 2,000 contexts from
the seed's own stream, used only to standardise the score):

* actions: K ~ U{2..20}, ids ``"act_00"`` ... in a seeded shuffle of the catalogue;
* logged rows: n ~ LU[1,000, 100,000] (``n_rows`` overrides, ``max_rows`` caps);
* numeric columns ``num_j``: U{2..8} of them, each normal, log-normal (skewed, like spend),
  Poisson counts or uniform; each standardised by its own distribution's location and scale
  to z_j. The first has U[5%, 20%] missing values, each other one no missing values with
  probability 1/2 and else U[0%, 20%]; a missing value counts as z_j = 0 plus a per-action
  "missing" effect;
* categorical columns: U{1..3} pandas ``category`` columns ``cat_j`` and U{0..2} string
  (object) columns ``str_j``, each with U{3..12} levels of Dirichlet(1) frequencies and, with
  probability 1/2, U[2%, 10%] missing values (None);
* the score s(x, a) = b_a + lin * z W_a + thr * sum_t c_ta 1[z_(j_t) > tau_t]
  + cat * sum_j E_j[level_j(x), a] + inter * sum_p g_pa z_(i_p) z_(k_p) + missing effects,
  all coefficients N(0, 1), tau_t ~ N(0, 0.7^2), U{1..4} thresholds and U{1..3} interactions;
  the form ("linear", "thresholds", "interactions", "categorical" or "mixed", uniform) sets
  its family's weight to 1 and the others' to 0.25 (all 0.7 when mixed). s is then
  standardised (the reference sample's mean 0 and standard deviation 1, over all actions);
* a safe default action, with probability 0.3: action 0's score is the constant at the
  U[0.5, 0.9] quantile of the other actions' scores on the reference sample;
* rewards, one form uniform among three: Bernoulli clicks, mu = sigmoid(logit(base) +
  signal * s), base ~ U[0.1, 0.6]; rare clicks, the same with base ~ U[0.005, 0.03]; real
  rewards, mu = signal * s and r = mu + N(0, noise^2), noise ~ U[0.5, 2]. signal ~ U[0.3, 1.5];
* the logger: p = (1 - 0.05) softmax((beta_a + align * s(x, a)) / T) + 0.05 / K, beta_a ~
  N(0, 1) (favoured actions), align ~ U[-0.5, 1] (uninformed to informed, or misled),
  temperature T ~ LU[0.1, 10] (heavily skewed to near uniform); one action sampled a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit, logit, softmax

from opboost.api.data.logged import LoggedBandit

__all__ = ["TabularWorld", "tabular_world"]

FORMS = ("linear", "thresholds", "interactions", "categorical", "mixed")
REWARDS = ("clicks", "rare_clicks", "real")
NUMERIC_KINDS = ("normal", "lognormal", "poisson", "uniform")
#: The logger's floor: every action keeps at least this share / K of the mass.
EPSILON = 0.05
_REFERENCE = 2000


@dataclass(frozen=True, eq=False)
class _Column:
    name: str
    kind: str  # a numeric kind, "category" or "string"
    missing: float
    loc: float = 0.0
    scale: float = 1.0
    levels: tuple[str, ...] = ()
    freqs: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class TabularWorld:
    """One random table (see the module docstring for its distributions).

    Attributes
    ----------
    seed
        the world's seed.
    logs
        the logged rows: the context columns, ``action`` (string ids), ``propensity``
        and ``reward``.
    columns
        keyword arguments of ``LoggedBandit.from_dataframe(logs, **columns)``
        (contexts, action, propensity, reward and the catalogue ``actions``).
    test_contexts
        fresh context rows, the same columns as the logs' contexts.
    test_means
        (m, K) the true expected reward of every action (catalogue order) on them.
    description
        the world's draws in one line.
    """

    seed: int
    logs: Any
    columns: dict[str, Any]
    test_contexts: Any
    test_means: np.ndarray
    description: str
    _spec: dict[str, Any] = field(repr=False)

    @property
    def action_ids(self) -> list[str]:
        """The catalogue: action a is ``action_ids[a]``."""
        return list(self.columns["actions"])

    def logged_bandit(self) -> LoggedBandit:
        """The logs read by ``LoggedBandit.from_dataframe`` with ``columns``."""
        return LoggedBandit.from_dataframe(self.logs, **self.columns)

    def means(self, contexts: Any) -> np.ndarray:
        """The true expected reward (m, K) of every action on a DataFrame of contexts."""
        return _mean_reward(self._spec, _score(self._spec, contexts))

    def logging_probs(self, contexts: Any) -> np.ndarray:
        """The logging policy's (m, K) probabilities on a DataFrame of contexts."""
        return _logging_probs(self._spec, _score(self._spec, contexts))

    def value(self, policy: Any) -> float:
        """True mean reward on the test contexts of (m,) actions (indices or string ids) or
        of (m, K) action probabilities."""
        policy = np.asarray(policy)
        if policy.ndim == 2:
            return float(np.einsum("ij,ij->i", policy.astype(np.float64), self.test_means).mean())
        if policy.dtype.kind in "OUS":
            index = {a: i for i, a in enumerate(self.action_ids)}
            policy = np.array([index[a] for a in policy.tolist()])
        rows = np.arange(len(self.test_means))
        return float(self.test_means[rows, policy.astype(np.intp)].mean())


def tabular_world(
    seed: int,
    *,
    n_rows: int | None = None,
    max_rows: int | None = None,
    n_test: int = 10_000,
    log_seed: int = 0,
) -> TabularWorld:
    """The random table of ``seed``.

    Parameters
    ----------
    seed
        the world (a non-negative int).
    n_rows
        logged rows (default: the seed's draw, 1,000 to 100,000).
    max_rows
        at most this many logged rows (smoke runs); the world is otherwise the same.
    n_test
        fresh test contexts.
    log_seed
        another draw of the logs from the same world (the same reward, logger and
        test contexts): repeated trials of one world.
    """
    if int(seed) < 0:
        raise ValueError(f"tabular_world: seed must be a non-negative int; got {seed}.")
    for name, value in (("n_rows", n_rows), ("max_rows", max_rows), ("n_test", n_test)):
        if value is not None and int(value) < 1:
            raise ValueError(f"tabular_world: {name} must be at least 1; got {value}.")
    rng = np.random.default_rng([int(seed), 0])  # structure
    spec = _draw_spec(rng)
    n = int(np.exp(rng.uniform(np.log(1000), np.log(100_000)))) if n_rows is None else n_rows
    n = min(n, max_rows) if max_rows else n
    ids = spec["action_ids"]

    log_rng = np.random.default_rng([int(seed), 1, int(log_seed)])
    logs = _contexts(spec, n, log_rng)
    s = _score(spec, logs)
    probs = _logging_probs(spec, s)
    actions = (log_rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1).clip(0, len(ids) - 1)
    rows = np.arange(n)
    mu = _mean_reward(spec, s)[rows, actions]
    if spec["reward"] == "real":
        rewards = mu + log_rng.normal(scale=spec["noise"], size=n)
    else:
        rewards = (log_rng.random(n) < mu).astype(np.float64)
    context_columns = list(logs.columns)
    logs = logs.assign(
        action=np.asarray(ids, dtype=object)[actions],
        propensity=probs[rows, actions],
        reward=rewards,
    )
    test = _contexts(spec, n_test, np.random.default_rng([int(seed), 2]))
    columns = {
        "contexts": context_columns,
        "action": "action",
        "propensity": "propensity",
        "reward": "reward",
        "actions": list(ids),
    }
    described = (
        f"K = {len(ids)}, {n:,} rows, {spec['n_numeric']} numeric "
        f"({spec['columns'][0].missing:.0%} missing in num_0), {spec['n_categorical']} "
        f"categorical, {spec['n_string']} string columns; {spec['form']} reward, "
        f"{spec['reward'].replace('_', ' ')}{', a safe action' if spec['safe'] else ''}; "
        f"logger temperature {spec['temperature']:.2g}"
    )
    return TabularWorld(int(seed), logs, columns, test, _mean_reward(spec, _score(spec, test)),
                        described, spec)  # fmt: skip


# --- drawing ----------------------------------------------------------------------------------


def _draw_spec(rng: np.random.Generator) -> dict[str, Any]:
    """Every parameter of a world (no rows)."""
    k = int(rng.integers(2, 21))
    ids = [f"act_{a:02d}" for a in rng.permutation(k)]
    columns = []
    for j in range(int(rng.integers(2, 9))):
        kind = str(rng.choice(NUMERIC_KINDS))
        loc, scale = {
            "normal": (rng.normal(0, 10), rng.uniform(0.5, 20)),
            "lognormal": (rng.normal(3, 1), rng.uniform(0.3, 1.2)),
            "poisson": (rng.uniform(0.5, 20), 0.0),
            "uniform": (0.0, rng.uniform(1, 100)),
        }[kind]
        if j == 0:
            missing = rng.uniform(0.05, 0.2)
        else:
            missing = 0.0 if rng.random() < 0.5 else rng.uniform(0.0, 0.2)
        columns.append(_Column(f"num_{j}", kind, float(missing), float(loc), float(scale)))
    n_num, n_cat, n_str = len(columns), int(rng.integers(1, 4)), int(rng.integers(0, 3))
    for j in range(n_cat + n_str):
        kind, name = ("category", f"cat_{j}") if j < n_cat else ("string", f"str_{j - n_cat}")
        n_levels = int(rng.integers(3, 13))
        levels = tuple(f"{name}_{level}" for level in range(n_levels))
        missing = 0.0 if rng.random() < 0.5 else rng.uniform(0.02, 0.1)
        columns.append(_Column(name, kind, float(missing), levels=levels,
                               freqs=rng.dirichlet(np.ones(n_levels))))  # fmt: skip
    form = str(rng.choice(FORMS))
    weights = {f: (0.7 if form == "mixed" else 1.0 if f == form else 0.25) for f in FORMS[:4]}
    n_thr, n_inter = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    spec = {
        "action_ids": ids,
        "columns": columns,
        "n_numeric": n_num,
        "n_categorical": n_cat,
        "n_string": n_str,
        "form": form,
        "weights": weights,
        "bias": rng.normal(size=k),
        "linear": rng.normal(size=(n_num, k)) / np.sqrt(n_num),
        "missing_effect": rng.normal(size=(n_num, k)) * 0.5,
        "thr_col": rng.integers(0, n_num, size=n_thr),
        "thr_at": rng.normal(scale=0.7, size=n_thr),
        "thr_coef": rng.normal(size=(n_thr, k)),
        "cat_effect": [rng.normal(size=(len(c.levels) + 1, k)) for c in columns[n_num:]],
        "inter_cols": rng.integers(0, n_num, size=(n_inter, 2)),
        "inter_coef": rng.normal(size=(n_inter, k)) / np.sqrt(n_inter),
        "safe": bool(rng.random() < 0.3),
        "safe_quantile": rng.uniform(0.5, 0.9),
        "reward": str(rng.choice(REWARDS)),
        "signal": rng.uniform(0.3, 1.5),
        "noise": rng.uniform(0.5, 2.0),
        "log_bias": rng.normal(size=k),
        "align": rng.uniform(-0.5, 1.0),
        "temperature": float(np.exp(rng.uniform(np.log(0.1), np.log(10.0)))),
    }
    spec["base"] = (
        rng.uniform(0.005, 0.03) if spec["reward"] == "rare_clicks" else rng.uniform(0.1, 0.6)
    )
    spec["shift"], spec["spread"], spec["safe_score"] = 0.0, 1.0, None
    sample = _contexts(spec, _REFERENCE, rng)
    reference = _score(spec, sample)
    if spec["safe"]:
        spec["safe_score"] = float(np.quantile(reference[:, 1:], spec["safe_quantile"]))
        reference = _score(spec, sample)
    spec["shift"], spec["spread"] = float(reference.mean()), float(reference.std() or 1.0)
    return spec


def _contexts(spec: dict[str, Any], n: int, rng: np.random.Generator) -> Any:
    """n context rows of the world's columns, a DataFrame (NaN / None where missing)."""
    import pandas as pd

    data = {}
    for c in spec["columns"]:
        if c.kind == "normal":
            values = rng.normal(c.loc, c.scale, size=n)
        elif c.kind == "lognormal":
            values = np.round(rng.lognormal(c.loc, c.scale, size=n), 2)
        elif c.kind == "poisson":
            values = rng.poisson(c.loc, size=n).astype(np.float64)
        elif c.kind == "uniform":
            values = rng.uniform(0.0, c.scale, size=n)
        else:
            codes = rng.choice(len(c.levels), size=n, p=c.freqs)
            values = np.asarray(c.levels, dtype=object)[codes]
        missing = rng.random(n) < c.missing
        if c.kind in NUMERIC_KINDS:
            data[c.name] = np.where(missing, np.nan, values)
        else:
            values[missing] = None
            kept = pd.Categorical(values, categories=c.levels) if c.kind == "category" else values
            data[c.name] = kept
    return pd.DataFrame(data)


# --- the reward and the logger ----------------------------------------------------------------


def _standard(c: _Column, values: np.ndarray) -> np.ndarray:
    """z of a numeric column by its distribution's own location and scale (NaN kept)."""
    if c.kind == "normal":
        return (values - c.loc) / c.scale
    if c.kind == "lognormal":
        return (np.log(np.maximum(values, 1e-3)) - c.loc) / c.scale
    if c.kind == "poisson":
        return (values - c.loc) / np.sqrt(c.loc)
    return values / c.scale * np.sqrt(12) - np.sqrt(3)


def _score(spec: dict[str, Any], contexts: Any) -> np.ndarray:
    """The standardised score s (m, K) of the contexts (a DataFrame of the world's columns)."""
    import pandas as pd

    n_num, w = spec["n_numeric"], spec["weights"]
    numeric = spec["columns"][:n_num]
    z = np.column_stack([_standard(c, contexts[c.name].to_numpy(np.float64)) for c in numeric])
    missing = np.isnan(z)
    z = np.where(missing, 0.0, z)
    s = spec["bias"] + w["linear"] * (z @ spec["linear"]) + missing @ spec["missing_effect"]
    above = z[:, spec["thr_col"]] > spec["thr_at"]
    s = s + w["thresholds"] * (above @ spec["thr_coef"])
    pairs = z[:, spec["inter_cols"][:, 0]] * z[:, spec["inter_cols"][:, 1]]
    s = s + w["interactions"] * (pairs @ spec["inter_coef"])
    for c, effect in zip(spec["columns"][n_num:], spec["cat_effect"], strict=True):
        codes = pd.Categorical(contexts[c.name], categories=c.levels).codes.astype(np.intp)
        s = s + w["categorical"] * effect[codes]  # missing (code -1): the last row
    if spec["safe_score"] is not None:
        s[:, 0] = spec["safe_score"]
    return (s - spec["shift"]) / spec["spread"]


def _mean_reward(spec: dict[str, Any], s: np.ndarray) -> np.ndarray:
    if spec["reward"] == "real":
        return spec["signal"] * s
    return expit(logit(spec["base"]) + spec["signal"] * s)


def _logging_probs(spec: dict[str, Any], s: np.ndarray) -> np.ndarray:
    logits = (spec["log_bias"] + spec["align"] * s) / spec["temperature"]
    k = s.shape[1]
    return (1 - EPSILON) * softmax(logits, axis=1) + EPSILON / k
