"""The boosting loop driven by a fake engine: a whole fit's lifecycle (run_fit), the stops of
a round (boost_round) and of the loop (run_rounds), the step's scale and learning rate, and
the callbacks' view of it all, with no data, objective or learner behind the engine."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from opboost.api.callback import Callback, RoundEnv
from opboost.api.engine import StepSettings
from opboost.core.loop import TOLERANCE, boost_round, run_fit, run_rounds


@dataclass(frozen=True)
class Step:
    """A scripted round: the gradient norm, max|f|, the fitted f's step denominator and the
    closed-form step the engine answers."""

    gradient_norm: float = 1.0
    max_abs: float = 1.0
    denominator: float = 4.0
    alpha: float = 0.5


@dataclass(frozen=True)
class Direction:
    max_abs: float


@dataclass
class FakeEngine:
    """An engine whose rounds follow ``script`` (then repeat its last step); every call the
    loop makes is appended to ``calls``."""

    script: list[Step]
    n: int = 10
    calls: list[Any] = field(default_factory=list)
    round: int = 0
    stop_reason: str | None = None
    train_metrics: dict[str, float] = field(default_factory=dict)
    eval_metrics: dict[str, float] = field(default_factory=dict)
    history: dict[str, list[float]] = field(default_factory=dict)

    def _now(self) -> Step:
        return self.script[min(self.round, len(self.script) - 1)]

    def restore(self, checkpoint):
        self.calls.append(("restore", checkpoint["round"]))
        self.round = checkpoint["round"]
        self.history = {"alpha": [0.25] * self.round}

    def begin(self):
        self.calls.append("begin")

    def gradient_norm(self):
        return self._now().gradient_norm

    def fit_direction(self):
        self.calls.append("fit")
        return Direction(self._now().max_abs)

    def step_denominator(self, direction):
        return self._now().denominator

    def step(self, direction, factor, l2):
        self.calls.append(("step", factor, l2))
        return self._now().alpha

    def discard(self, direction):
        self.calls.append("discard")

    def commit(self, direction, weight, **metrics):
        self.calls.append(("commit", weight))
        self.round += 1
        self.train_metrics = dict(metrics)
        for key, value in metrics.items():
            self.history.setdefault(key, []).append(value)

    def snapshot(self):
        return {"round": self.round}

    def keep_best(self):
        self.calls.append(("keep_best", self.round))

    def policy(self):
        return f"policy of {self.round} rounds"

    def fitted_attributes(self):
        return {}


class Recorder(Callback):
    """Writes every hook it sees, with the round, alpha and whether a snapshot is offered,
    into the shared ``log``; may offer a checkpoint, stop before or after a round, or mark
    rounds as the best."""

    def __init__(self, log, *, checkpoint=None, stop_before=None, stop_after=None, best=()):
        self.log, self.checkpoint = log, checkpoint
        self.stop_before, self.stop_after, self.best = stop_before, stop_after, best

    def _see(self, hook: str, env: RoundEnv) -> None:
        alpha = None if math.isnan(env.alpha) else env.alpha
        self.log.append((hook, env.round, alpha, env.snapshot is not None))

    def load_checkpoint(self):
        self.log.append(("load_checkpoint",))
        return self.checkpoint

    def on_prepare(self, env):
        self._see("on_prepare", env)

    def on_fit_start(self, env):
        self._see("on_fit_start", env)

    def on_round_begin(self, env):
        self._see("on_round_begin", env)
        if env.round == self.stop_before:
            env.request_stop("stop before")

    def on_round_end(self, env):
        self._see("on_round_end", env)
        if env.round in self.best:
            env.mark_best()
        if env.round == self.stop_after:
            env.request_stop("stop after")

    def on_fit_end(self, env):
        self._see("on_fit_end", env)


def fit_with(engine: FakeEngine, n_rounds: int, *callbacks: Callback) -> Any:
    """run_fit on ``engine``; building it and the owner's finish go into ``engine.calls``."""
    log = engine.calls

    def make():
        log.append("make_engine")
        return engine

    def finish(fit):
        log.append(("finish", fit.round))

    return run_fit(make, n_rounds, StepSettings(), list(callbacks), owner="owner", finish=finish)


def test_run_fit_runs_the_lifecycle_in_order():
    """prepare (before the engine exists: no round, no snapshot), build, the checkpoint asked
    for, begin, start, every round between its two hooks, finish, then on_fit_end with the
    last alpha."""
    engine = FakeEngine([Step(alpha=0.5)])
    log = engine.calls
    assert fit_with(engine, 2, Recorder(log)) is engine
    assert log == [
        ("on_prepare", 0, None, False),
        "make_engine",
        ("load_checkpoint",),
        "begin",
        ("on_fit_start", 0, None, True),
        ("on_round_begin", 0, None, True),
        "fit",
        ("step", 1.0, 0.0),
        ("commit", 0.5),
        ("on_round_end", 1, 0.5, True),
        ("on_round_begin", 1, None, True),
        "fit",
        ("step", 1.0, 0.0),
        ("commit", 0.5),
        ("on_round_end", 2, 0.5, True),
        ("finish", 2),
        ("on_fit_end", 2, 0.5, True),
    ]
    assert engine.stop_reason == "n_rounds reached"


def test_the_first_checkpoint_offered_is_restored_before_begin():
    """The callbacks are asked in order until one offers a checkpoint; the engine restores it
    before it begins, and the rounds go on from there up to n_rounds."""
    engine = FakeEngine([Step()])
    log = engine.calls
    first, offering, later = Recorder([]), Recorder([], checkpoint={"round": 2}), Recorder([])
    fit_with(engine, 3, first, offering, later)
    assert log[:4] == ["make_engine", ("restore", 2), "begin", "fit"]
    assert first.log[:2] == [("on_prepare", 0, None, False), ("load_checkpoint",)]
    assert ("load_checkpoint",) not in later.log
    assert ("on_fit_start", 2, None, True) in later.log
    assert engine.round == 3 and engine.stop_reason == "n_rounds reached"


def test_zero_rounds_still_begin_and_end():
    engine = FakeEngine([Step()])
    log = engine.calls
    fit_with(engine, 0, Recorder(log))
    assert log[-3:] == [
        ("on_fit_start", 0, None, True),
        ("finish", 0),
        ("on_fit_end", 0, None, True),
    ]
    assert "fit" not in log and engine.stop_reason == "n_rounds reached"


@pytest.mark.parametrize(
    ("step", "reason", "discarded"),
    [
        (Step(gradient_norm=0.0), f"gradient norm < {TOLERANCE:g} at round 2", False),
        (Step(max_abs=0.0), f"max|f| < {TOLERANCE:g} at round 2", True),
        (Step(alpha=0.0), f"|alpha| < {TOLERANCE:g} at round 2", True),
        (Step(alpha=math.nan), f"|alpha| < {TOLERANCE:g} at round 2", True),
    ],
)
def test_a_round_stops_the_fit_and_commits_nothing(step, reason, discarded):
    """The second round's stop: the fit keeps its first round; a fitted direction that is
    not committed is discarded."""
    engine = FakeEngine([Step(), step])
    run_rounds(engine, 5, StepSettings())
    assert engine.round == 1 and engine.stop_reason == reason
    assert (engine.calls[-1] == "discard") is discarded
    assert [c for c in engine.calls if c[0] == "commit"] == [("commit", 0.5)]


def test_scale_and_learning_rate_shape_the_step():
    """With scale Z the direction is rescaled by sqrt(Z / (D / n)) before the step; the step
    is times the learning rate; the committed weight is alpha times that factor, and
    alpha (what callbacks and the history see) is the step times the learning rate."""
    engine = FakeEngine([Step(denominator=40.0, alpha=0.8)], n=10)
    alpha = boost_round(engine, StepSettings(scale=16.0, l2=0.5, learning_rate=0.25))
    factor = math.sqrt(16.0 / (40.0 / 10))
    assert alpha == pytest.approx(0.2)
    assert engine.calls == ["fit", ("step", factor, 0.5), ("commit", pytest.approx(0.2 * factor))]
    assert engine.history["alpha"] == [pytest.approx(0.2)]
    assert engine.history["gradient_norm"] == [1.0]


def test_callbacks_stop_before_or_after_a_round_and_mark_the_best():
    before = FakeEngine([Step()])
    run_rounds(before, 9, StepSettings(), [Recorder([], stop_before=2)])
    assert before.round == 2 and before.stop_reason == "stop before"

    after = FakeEngine([Step()])
    recorder = Recorder([], stop_after=3, best=(1, 3))
    run_rounds(after, 9, StepSettings(), [recorder], on_best=after.keep_best)
    assert after.round == 3 and after.stop_reason == "stop after"
    assert [c for c in after.calls if c[0] == "keep_best"] == [("keep_best", 1), ("keep_best", 3)]


def test_callbacks_see_no_round_that_stopped_the_fit():
    """A round that stops the fit ends the loop: no on_round_end for it, and the round's own
    reason is the fit's."""
    engine = FakeEngine([Step(), Step(gradient_norm=0.0)])
    log: list = []
    run_rounds(engine, 9, StepSettings(), [Recorder(log)])
    assert engine.stop_reason == f"gradient norm < {TOLERANCE:g} at round 2"
    assert [entry[0] for entry in log] == ["on_round_begin", "on_round_end", "on_round_begin"]
