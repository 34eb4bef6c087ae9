"""The progress display of a fit: one labelled display by stage, and a closing summary line.

A ``Booster`` fit goes through up to four stages: ``start`` (designing the logs, fitting any
warm start), ``rounds`` (boosting, each round scored on the
held-out logs when there are any), ``hold-out`` (keeping the best round) and ``refit`` (on all
the logs, for the rounds kept). ``Progress`` shows them on stderr: on a terminal as one
tqdm bar labelled with the stage, elsewhere (a log file, a pipe, CI) as plain lines without
escape codes. The fit ends with the one line of ``fit_summary``.
"""

from __future__ import annotations

import math
import sys
import time
from numbers import Integral, Real
from typing import Any, ClassVar

from opboost.api.callback import Callback, RoundEnv
from opboost.api.constraints import InstanceOf, Interval

__all__ = ["Progress", "fit_summary", "start_label"]

#: The metrics a round line (or the bar's postfix) shows, when the fit computes them.
SHOWN_METRICS = ("alpha", "train_objective", "select_value")


def start_label(booster: Any) -> str:
    """What a fitted ``booster`` started from: "reward model (<family>)", "F0 = 0" or the
    ``warm_start`` name (e.g. "best_constant")."""
    reward_start = getattr(booster, "reward_start_", None)
    if reward_start:
        return f"reward model ({reward_start.get('family', 'fitted')})"
    policy = getattr(booster, "policy_", None)
    metadata = getattr(policy, "metadata", None) or {}
    warm_start = metadata.get("warm_start")
    return "F0 = 0" if warm_start in (None, "none") else str(warm_start)


def fit_summary(booster: Any, seconds: float, desc: str = "boosting") -> str:
    """The closing line of a fitted ``booster``'s progress, e.g. ``boosting: done in 2.4 s;
    start reward model (linear+trees); 13 of 100 rounds kept; held-out dr 0.7771 [0.7554,
    0.7988]; refit on all the logs``."""
    parts = [f"{desc}: done in {seconds:.1f} s", f"start {start_label(booster)}"]
    run = getattr(booster, "n_rounds_", None)
    kept = getattr(booster, "best_round_", None)
    kept = run if kept is None else kept
    parts.append(f"{kept} of {run} rounds kept")
    selection = getattr(booster, "selection_", None)
    if selection:
        parts.append(
            f"held-out {selection['method']} {selection['value']:.4f} "
            f"[{selection['low']:.4f}, {selection['high']:.4f}]"
        )
        if getattr(booster, "fallback_", None) is not None:
            parts.append(f"fell back to constant action {selection['constant_action']}")
        elif "refit_rounds" in selection:
            parts.append("refit on all the logs")
    return "; ".join(parts)


class Progress(Callback):
    """The progress of a fit on stderr, labelled by stage (``start``, ``rounds``, ``hold-out``,
    ``refit``), ending with a one-line summary ([`fit_summary`][opboost.core.progress.fit_summary]).

    On a terminal: one tqdm bar whose label names the stage, a line above it per finished
    stage, cleared at the end. Elsewhere (only with ``force``; e.g. ``Booster(verbose=1)`` into
    a log file): plain lines without escape codes, one per stage and one every ``every``
    rounds. With ``delay`` (seconds) nothing shows until the fit has run that long, so quick
    fits print nothing (``Booster(verbose="auto")``).

    Parameters
    ----------
    force
        show the progress when stderr is not a terminal too (as plain lines).
    desc
        the label that begins every line.
    delay
        seconds a fit runs before anything is shown.
    every
        a plain line every that many rounds; None: about ten lines per stage of rounds.
    """

    name: ClassVar[str] = "progress"
    order: ClassVar[int] = 80
    _parameter_constraints: ClassVar[dict] = {
        "force": ["boolean"],
        "desc": [InstanceOf(str)],
        "delay": [Interval(Real, 0.0, None, finite=True)],
        "every": [Interval(Integral, 1, None, fix="use a number of rounds >= 1"), None],
    }

    def __init__(
        self, *, force: bool = False, desc: str = "boosting", delay: float = 0.0, every=None
    ) -> None:
        self.force = force
        self.desc = desc
        self.delay = delay
        self.every = every

    # --- the fit's hooks ------------------------------------------------------------------

    def on_prepare(self, env: RoundEnv) -> None:
        if self.__dict__.pop("_refit_next", False):  # the Booster's refit, announced
            self._depth += 1
            self.stage("refit", f"on all the logs for {env.n_rounds} rounds", total=env.n_rounds)
            return
        self._begin()
        self.stage("start", "designing the logs, fitting any warm start")

    def on_fit_start(self, env: RoundEnv) -> None:
        if not getattr(self, "_depth", 0):  # no on_prepare before (a fit outside Booster.fit)
            self._begin()
        if self._stage == "refit":
            self._reset(env.n_rounds, env.round)
            return
        if self._stage == "start":
            self.note(f"[start] ready in {time.perf_counter() - self._t0:.1f} s")
        self.stage("rounds", f"up to {env.n_rounds}", total=env.n_rounds, done=env.round)

    def on_round_end(self, env: RoundEnv) -> None:
        shown = {k: f"{v:.4g}" for k, v in env.metrics.items() if k in SHOWN_METRICS}
        if self._bar is not None:
            self._bar.set_postfix(shown, refresh=False)
            self._bar.update(1)
            return
        every = self.every or max(1, math.ceil(env.n_rounds / 10))
        if env.round % every == 0 or env.round == env.n_rounds:
            values = "".join(f" {k}={v}" for k, v in shown.items())
            self.note(f"[{self._stage}] {env.round}/{env.n_rounds}{values}")

    def on_fit_end(self, env: RoundEnv) -> None:
        self._depth -= 1
        if self._depth:  # the refit ends; the outer fit goes on
            return
        summary = fit_summary(env.booster, time.perf_counter() - self._t0, self.desc)
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._visible():
            print(summary, file=sys.stderr, flush=True)

    # --- stages ---------------------------------------------------------------------------

    def stage(self, name: str, detail: str = "", *, total: int | None = None, done: int = 0):
        """Enter stage ``name``, described by ``detail``; ``total``: the rounds it counts.
        Stage "refit" without ``total`` announces the fit inside this one (the Booster's refit
        on all the logs), which then shows here instead of opening a display of its own."""
        self._stage = name
        self._refit_next = name == "refit" and total is None
        if self._tty:
            label = f"{self.desc} [{name}]" + (f" {detail}" if detail and not total else "")
            self._open(label, total, done)
        elif detail:
            self.note(f"[{name}] {detail}")

    def _begin(self) -> None:
        self.validate_params()
        self._depth, self._t0, self._bar, self._stage = 1, time.perf_counter(), None, "start"
        self._tty = sys.stderr.isatty()
        self._enabled = bool(self.force) or self._tty

    def _visible(self) -> bool:
        return self._enabled and time.perf_counter() - self._t0 >= self.delay

    def _open(self, label: str, total: int | None, done: int) -> None:
        """The terminal's bar, labelled with the stage (counts and a clock only for rounds)."""
        from tqdm import tqdm

        self._label = label
        if self._bar is not None and not self._visible():  # not shown yet: stay hidden
            self._bar.close()
            self._bar = None
        if self._bar is None:
            left = max(0.0, self.delay - (time.perf_counter() - self._t0))
            self._bar = tqdm(
                total=total,
                desc=label,
                bar_format=None if total else "{desc}",
                file=sys.stderr,
                leave=False,
                delay=left,
            )
            self._bar.update(done)
            return
        self._bar.set_description_str(label, refresh=False)
        self._reset(total, done)

    def _reset(self, total: int | None, done: int) -> None:
        if self._bar is None:
            return
        if not self._visible():  # reset() draws the bar: open a hidden one instead
            self._open(self._label, total, done)
            return
        self._bar.bar_format = None if total else "{desc}"
        self._bar.reset(total=total)
        self._bar.update(done)

    def note(self, text: str) -> None:
        """Print ``text`` after the label as a plain line (no escape codes), once the display
        is due; above the bar on a terminal."""
        if not self._visible():
            return
        if self._bar is not None:
            self._bar.write(f"{self.desc} {text}", file=sys.stderr)
        else:
            print(f"{self.desc} {text}", file=sys.stderr, flush=True)
