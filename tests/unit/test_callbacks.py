"""Callbacks: early stopping, progress, history, checkpoint resume, and the RoundEnv."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from typing import ClassVar

import numpy as np
import pytest

import opboost
from opboost import Booster
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.core.callbacks import Callback, Checkpoint, EarlyStopping, History, Progress, RoundEnv


class Kill(Callback):
    """Raises at a given round, like a process killed after that round's checkpoint."""

    name: ClassVar[str] = "kill"
    order: ClassVar[int] = 100

    def __init__(self, *, at: int = 3) -> None:
        self.at = at

    def on_round_end(self, env: RoundEnv) -> None:
        if env.round == self.at:
            raise KeyboardInterrupt


class StopAt(Callback):
    """Requests a stop at a given round."""

    name: ClassVar[str] = "stop_at"

    def __init__(self, *, at: int = 2) -> None:
        self.at = at

    def on_round_end(self, env: RoundEnv) -> None:
        if env.round == self.at:
            env.request_stop(f"stopped by test at {env.round}")


def booster(**params):
    defaults = {
        "base_learner": "sklearn_tree",
        "n_rounds": 12,
        "random_state": 0,
        "reward_shift": -0.3,
    }
    return Booster(**{**defaults, **params})


def test_registered_callbacks():
    """The four built-ins are registered under kind 'callback'."""
    assert {"checkpoint", "early_stopping", "history", "progress"} <= set(
        opboost.available("callback")
    )
    assert isinstance(opboost.make("callback", "early_stopping", patience=3), EarlyStopping)


def test_request_stop_records_reason(synthetic_log):
    """A callback's request_stop ends the fit after that round with its reason."""
    b = booster().fit(synthetic_log.data, callbacks=[StopAt(at=2)])
    assert b.n_rounds_ == 2 and b.stop_reason_ == "stopped by test at 2"


def test_round_env_is_frozen():
    """RoundEnv is immutable; request_stop does not set attributes."""
    env = RoundEnv(booster=None, round=1, n_rounds=3, alpha=0.1, train_metrics={}, eval_metrics={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.round = 2
    env.request_stop("x")
    assert env._stop == ["x"]


def test_early_stopping_stops_and_records_reason(synthetic_log, log_factory):
    """With a metric that cannot improve, patience p stops after p + 1 rounds."""
    eval_log = log_factory(seed=9).data
    stopper = EarlyStopping(metric="eval_snips_argmax", patience=2, min_delta=10.0)
    b = booster(n_rounds=50).fit(synthetic_log.data, eval_data=eval_log, callbacks=[stopper])
    assert b.n_rounds_ == 3
    assert b.stop_reason_.startswith("patience 2 reached: eval_snips_argmax best ")
    assert b.stop_reason_.endswith("at round 1")


def test_early_stopping_minimises_objective(synthetic_log):
    """mode='auto' minimises train_objective, which keeps improving: no early stop."""
    b = booster(n_rounds=8).fit(
        synthetic_log.data, callbacks=[EarlyStopping(metric="train_objective", patience=1)]
    )
    assert b.stop_reason_ == "n_rounds reached"


def test_early_stopping_unknown_metric(synthetic_log):
    """Monitoring an eval metric without eval_data says what is available."""
    with pytest.raises(
        InvalidParameterError,
        match=r"'metric' parameter of EarlyStopping is "
        r"'eval_snips_argmax', which this fit does not compute. Available: "
        r"alpha, gradient_norm",
    ):
        booster().fit(synthetic_log.data, callbacks=[EarlyStopping()])


def test_early_stopping_bad_patience(synthetic_log):
    """patience 0 is rejected with the parameter name."""
    with pytest.raises(InvalidParameterError, match=r"'patience' parameter of EarlyStopping"):
        booster().fit(synthetic_log.data, callbacks=[EarlyStopping(patience=0)])


def test_history_callback_matches_booster_history(synthetic_log):
    """History records every metric per round, equal to booster.history_."""
    history = History()
    b = booster(n_rounds=5).fit(synthetic_log.data, callbacks=[history])
    np.testing.assert_array_equal(history.history_["round"], np.arange(1, 6))
    for key, values in b.history_.items():
        np.testing.assert_array_equal(history.history_[key], values)


def test_progress_disabled_without_tty(synthetic_log, capsys):
    """Under pytest stderr is not a TTY: the bar is disabled and prints nothing."""
    b = booster(n_rounds=3).fit(synthetic_log.data, callbacks=[Progress()])
    assert b.n_rounds_ == 3 and capsys.readouterr().err == ""


def test_progress_forced(synthetic_log, capsys):
    """force=True draws the bar even without a TTY."""
    booster(n_rounds=3).fit(synthetic_log.data, callbacks=[Progress(force=True, desc="fitx")])
    assert "fitx" in capsys.readouterr().err


class Events(Callback):
    """Records the hooks it sees, in order, in a shared list."""

    name: ClassVar[str] = "events"

    def __init__(self, *, log: list | None = None) -> None:
        self.log = log

    def on_prepare(self, env: RoundEnv) -> None:
        self.log.append(("prepare", env.round, env.n_rounds))

    def on_fit_start(self, env: RoundEnv) -> None:
        self.log.append(("fit_start", env.round, env.n_rounds))


def slow_start(monkeypatch, log: list, seconds: float = 0.0) -> None:
    """LightGBMTree.start_from_rewards records itself in ``log`` and takes ``seconds`` more."""
    from opboost.algorithms.learners.lightgbm_tree import LightGBMTree

    original = LightGBMTree.start_from_rewards

    def start(self, *args, **kwargs):
        log.append(("start",))
        time.sleep(seconds)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LightGBMTree, "start_from_rewards", start)


def test_on_prepare_runs_before_the_warm_start(synthetic_log, monkeypatch):
    """on_prepare comes before the reward-model start is fitted, on_fit_start after it: a
    callback can report a start that takes minutes on large logs."""
    log: list = []
    slow_start(monkeypatch, log)
    b = Booster(n_rounds=2, random_state=0, validation_fraction=None)  # one fit, no refit
    b.fit(synthetic_log.data, callbacks=[Events(log=log)])
    assert b.reward_start_  # the default starts from the reward model
    assert log == [("prepare", 0, 2), ("start",), ("fit_start", 0, 2)]


def test_progress_reports_the_start_once_ready(synthetic_log, monkeypatch, capsys):
    """The start stage is announced before the warm start is fitted and reported once it is
    ready (with its seconds), then rounds are counted from zero."""
    slow_start(monkeypatch, [], seconds=1.05)
    Booster(n_rounds=2, random_state=0, validation_fraction=None).fit(
        synthetic_log.data, callbacks=[Progress(force=True, desc="fitx")]
    )
    err = capsys.readouterr().err
    preparing = "fitx [start] designing the logs, fitting any warm start\n"
    assert preparing in err
    assert re.search(r"fitx \[start\] ready in \d+\.\d s", err)  # 1.05 s or more (busy machine)
    assert err.index(preparing) < err.index("fitx [start] ready") < err.index("fitx [rounds] 1/2")


def test_progress_starts_without_a_preparation(capsys):
    """on_fit_start without on_prepare (a fit outside Booster.fit; here called twice) starts the
    display; its rounds are counted from there."""
    progress = Progress(force=True, desc="probe")
    env = RoundEnv(None, 0, 3, float("nan"), {}, {})
    progress.on_fit_start(env)
    progress.on_fit_start(env)
    progress.on_round_end(RoundEnv(None, 3, 3, 1.0, {"train_objective": -0.5}, {}))
    assert "probe [rounds] 3/3 train_objective=-0.5\n" in capsys.readouterr().err


def test_callbacks_must_be_callbacks(synthetic_log):
    """A non-callback object in callbacks is rejected."""
    with pytest.raises(InvalidParameterError, match=r"callbacks must be opboost.core.callbacks"):
        booster().fit(synthetic_log.data, callbacks=[print])


class ThreeHooks:
    """Has three of the hooks a fit calls, not on_prepare, on_round_begin or load_checkpoint."""

    def __repr__(self):
        return "ThreeHooks()"

    def on_fit_start(self, env):
        pass

    def on_round_end(self, env):
        pass

    def on_fit_end(self, env):
        pass


def test_a_callback_lacking_a_hook_the_fit_calls_is_refused_up_front(synthetic_log):
    """Every hook the fit calls is checked before the fit starts: an object without
    on_prepare is refused by name, not met by an AttributeError in the middle of the fit."""
    with pytest.raises(InvalidParameterError) as exc:
        booster().fit(synthetic_log.data, callbacks=[ThreeHooks()])
    assert str(exc.value) == (
        "Booster.fit: callbacks must be opboost.core.callbacks.Callback objects. Got ThreeHooks(): "
        "it lacks load_checkpoint, on_prepare, on_round_begin; subclass Callback and override "
        "the hooks you need."
    )


def test_callbacks_are_not_mutated_by_engine(synthetic_log):
    """The engine sets no attributes on callbacks (only their own hooks do)."""
    stop = StopAt(at=1)
    before = dict(vars(stop))
    booster().fit(synthetic_log.data, callbacks=[stop])
    assert vars(stop) == before


def test_checkpoint_layout(synthetic_log, tmp_path):
    """Checkpoints keep only the newest round directory, named by LATEST."""
    booster(n_rounds=7).fit(synthetic_log.data, callbacks=[Checkpoint(tmp_path, every=3)])
    assert (tmp_path / "LATEST").read_text() == "round-000007"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["LATEST", "round-000007"]
    assert sorted(p.name for p in (tmp_path / "round-000007").iterdir()) == [
        "policy",
        "scores.npy",
        "state.json",
    ]


@pytest.mark.parametrize(
    "kill_at",
    [
        pytest.param(5, id="killed-after-checkpoint"),
        pytest.param(7, id="killed-between-checkpoints"),
    ],
)
def test_checkpoint_resume_is_bit_identical(synthetic_log, log_factory, tmp_path, kill_at):
    """A fit killed mid-way and resumed from its checkpoint equals an uninterrupted fit."""
    data, eval_log = synthetic_log.data, log_factory(seed=3).data
    X = eval_log.contexts
    full = booster().fit(data, eval_data=eval_log)
    with pytest.raises(KeyboardInterrupt):
        booster().fit(
            data, eval_data=eval_log, callbacks=[Checkpoint(tmp_path, every=5), Kill(at=kill_at)]
        )
    assert (tmp_path / "LATEST").read_text() == "round-000005"
    history = History()
    resumed = booster().fit(
        data, eval_data=eval_log, callbacks=[Checkpoint(tmp_path, every=5), history]
    )
    np.testing.assert_array_equal(resumed.decision_function(X), full.decision_function(X))
    assert resumed.n_rounds_ == full.n_rounds_ == 12
    assert resumed.stop_reason_ == full.stop_reason_
    for key, values in full.history_.items():
        np.testing.assert_array_equal(resumed.history_[key], values)
    np.testing.assert_array_equal(history.history_["round"], np.arange(1, 13))


@pytest.mark.parametrize("warm_start", ["none", "reward_model"])
def test_lightgbm_tree_resumes_to_within_1e_12_of_an_uninterrupted_fit(
    synthetic_log, log_factory, tmp_path, warm_start
):
    """``lightgbm_tree`` reads each round's outputs off LightGBM's running training scores,
    which a resumed fit restarts, so its resumed predictions agree to within 1e-12 (about
    1e-15 measured), not bit for bit as the scikit-learn learners' do (docs/offline.md).
    ``validation_fraction=None``: the rounds alone are compared (a resumed held-out choice:
    tests/unit/test_round_choice.py)."""
    data, eval_log = synthetic_log.data, log_factory(seed=3).data
    X = eval_log.contexts
    params = {"base_learner": "lightgbm_tree", "validation_fraction": None}
    params["warm_start"] = warm_start
    full = booster(**params).fit(data, eval_data=eval_log)
    with pytest.raises(KeyboardInterrupt):
        booster(**params).fit(
            data, eval_data=eval_log, callbacks=[Checkpoint(tmp_path, every=5), Kill(at=7)]
        )
    resumed = booster(**params).fit(
        data, eval_data=eval_log, callbacks=[Checkpoint(tmp_path, every=5)]
    )
    assert resumed.n_rounds_ == full.n_rounds_ == 12
    scale = np.abs(full.decision_function(X)).max()
    np.testing.assert_allclose(
        resumed.decision_function(X), full.decision_function(X), rtol=0, atol=1e-12 * scale
    )
    np.testing.assert_array_equal(resumed.predict(X), full.predict(X))
    for key, values in full.history_.items():
        np.testing.assert_allclose(resumed.history_[key], values, rtol=1e-9, atol=1e-12)


def test_checkpoint_resume_with_early_stopping(synthetic_log, log_factory, tmp_path):
    """EarlyStopping replays the restored history, so it stops at the same round."""
    data, eval_log = synthetic_log.data, log_factory(seed=3).data

    def stopper():
        return EarlyStopping(metric="eval_ips_softmax", patience=3, min_delta=0.002)

    full = booster(n_rounds=40).fit(data, eval_data=eval_log, callbacks=[stopper()])
    assert full.stop_reason_.startswith("patience 3")
    kill = Kill(at=full.n_rounds_ - 1)
    with pytest.raises(KeyboardInterrupt):
        booster(n_rounds=40).fit(
            data, eval_data=eval_log, callbacks=[stopper(), Checkpoint(tmp_path, every=2), kill]
        )
    resumed = booster(n_rounds=40).fit(
        data, eval_data=eval_log, callbacks=[stopper(), Checkpoint(tmp_path, every=2)]
    )
    assert (resumed.n_rounds_, resumed.stop_reason_) == (full.n_rounds_, full.stop_reason_)
    np.testing.assert_array_equal(
        resumed.decision_function(eval_log.contexts), full.decision_function(eval_log.contexts)
    )


def test_checkpoint_of_finished_fit_extends(synthetic_log, tmp_path):
    """Resuming a finished fit with more n_rounds continues it, same as one longer fit."""
    data = synthetic_log.data
    booster(n_rounds=4).fit(data, callbacks=[Checkpoint(tmp_path, every=2)])
    longer = booster(n_rounds=9).fit(data, callbacks=[Checkpoint(tmp_path, every=2)])
    direct = booster(n_rounds=9).fit(data)
    np.testing.assert_array_equal(
        longer.decision_function(data.contexts), direct.decision_function(data.contexts)
    )


def test_checkpoint_from_other_data_is_refused(synthetic_log, log_factory, tmp_path):
    """A checkpoint written for other data raises instead of silently mixing fits."""
    booster(n_rounds=2).fit(synthetic_log.data, callbacks=[Checkpoint(tmp_path, every=1)])
    with pytest.raises(
        InvalidParameterError,
        match=r"written by a fit with other data or "
        r"settings; delete that directory",
    ):
        booster(n_rounds=2).fit(
            log_factory(seed=11).data, callbacks=[Checkpoint(tmp_path, every=1)]
        )


def test_checkpoint_resume_false_starts_afresh(synthetic_log, tmp_path):
    """resume=False ignores an existing checkpoint and overwrites it."""
    data = synthetic_log.data
    booster(n_rounds=3).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])
    b = booster(n_rounds=3, reward_shift=-0.1).fit(
        data, callbacks=[Checkpoint(tmp_path, every=1, resume=False)]
    )
    assert b.n_rounds_ == 3 and (tmp_path / "LATEST").read_text() == "round-000003"


def test_corrupted_checkpoint(synthetic_log, tmp_path):
    """A damaged checkpoint names its directory and how to recover."""
    data = synthetic_log.data
    booster(n_rounds=2).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])
    (tmp_path / "round-000002" / "state.json").write_text("{trunc")
    with pytest.raises(ValueError, match=r"round-000002 is unreadable .* delete"):
        booster(n_rounds=2).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])


def _tamper_selection(directory, change):
    """Apply ``change`` to the held-out choice of the checkpoint in ``directory``: a function
    of (state.json's dict, the round directory)."""
    target = directory / (directory / "LATEST").read_text()
    state = json.loads((target / "state.json").read_text())
    change(state, target)
    (target / "state.json").write_text(json.dumps(state))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param(
            lambda state, target: state.update(selection="x"),
            "state.json's selection is malformed: 'x'",
            id="not-a-dict",
        ),
        pytest.param(
            lambda state, target: state["selection"].update(arrays=["../policy/x"]),
            "state.json names selection arrays ['../policy/x']",
            id="array-outside-the-directory",
        ),
        pytest.param(
            lambda state, target: np.save(target / "selection_scores.npy", np.zeros((3, 2))),
            "selection arrays of mismatched shapes",
            id="mismatched-shapes",
        ),
        pytest.param(
            lambda state, target: state["selection"].update(last=["a", 1, 2, 0.95]),
            "state.json's selection estimates are malformed",
            id="estimates-not-numbers",
        ),
    ],
)
def test_a_tampered_held_out_choice_in_a_checkpoint_is_refused_by_name(
    synthetic_log, tmp_path, change, reason
):
    """The held-out choice's state is read from a checkpoint only when well formed; a file
    from elsewhere names what is wrong and how to recover, and reads nothing outside the
    checkpoint's round directory."""
    data = synthetic_log.data
    params = {"n_rounds": 2, "validation_fraction": 0.25}
    booster(**params).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])
    _tamper_selection(tmp_path, change)
    with pytest.raises(ValueError) as info:
        booster(**params).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])
    message = str(info.value)
    assert message.startswith(f"Checkpoint {tmp_path / 'round-000002'} is unreadable ({reason}")
    assert message.endswith(f"; delete {tmp_path} to start afresh.")


def test_held_out_scores_of_another_shape_are_refused_at_resume(synthetic_log, tmp_path):
    data = synthetic_log.data
    params = {"n_rounds": 2, "validation_fraction": 0.25}
    booster(**params).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])
    target = tmp_path / "round-000002"
    shape = np.load(target / "selection_scores.npy").shape
    for name in ("scores", "start_scores"):
        np.save(target / f"selection_{name}.npy", np.zeros((shape[0] - 1, shape[1])))
    with pytest.raises(InvalidParameterError) as info:
        booster(**params).fit(data, callbacks=[Checkpoint(tmp_path, every=1)])
    assert str(info.value) == (
        f"Booster.fit: the checkpoint's held-out scores have shape {(shape[0] - 1, shape[1])}, "
        f"not {shape} (this fit's held-out rows x actions); delete the checkpoint directory to "
        "start afresh."
    )


def test_early_stopping_keeps_the_best_round(synthetic_log):
    """The fitted policy ends at EarlyStopping's best round, as LightGBM's does: it predicts
    exactly as a fit stopped there, while history_ keeps the patience rounds after it."""
    train, valid = synthetic_log.data.split(0.5, random_state=0)
    stopper = EarlyStopping(metric="eval_snips_argmax", patience=3)
    fitted = booster(n_rounds=40).fit(train, eval_data=valid, callbacks=[stopper])
    best = fitted.best_round_
    values = fitted.history_["eval_snips_argmax"]
    assert fitted.n_rounds_ == best + 3 < 40
    assert values[best - 1] == values.max() > values[best:].max()
    assert fitted.policy_.metadata["n_rounds"] == best
    exact = booster(n_rounds=best).fit(train, eval_data=valid)
    np.testing.assert_array_equal(
        fitted.decision_function(valid.contexts), exact.decision_function(valid.contexts)
    )


class StopBeforeRound(Callback):
    """Stops the fit before round ``at`` + 1 from ``on_round_begin``."""

    name = "stop_before"

    def __init__(self, at: int = 2) -> None:
        self.at = at

    def on_round_begin(self, env: RoundEnv) -> None:
        assert np.isnan(env.alpha)
        if env.round == self.at:
            env.request_stop(f"stopped before round {env.round + 1}")


def test_a_callback_can_stop_before_a_round(synthetic_log):
    """A stop requested in on_round_begin ends the fit before that round is fitted."""
    fitted = booster(n_rounds=10).fit(synthetic_log.data, callbacks=[StopBeforeRound(at=2)])
    assert fitted.n_rounds_ == 2
    assert fitted.stop_reason_ == "stopped before round 3"


class Slow(Callback):
    """Each round takes ``seconds`` more: a long fit."""

    name: ClassVar[str] = "slow"

    def __init__(self, *, seconds: float = 0.1) -> None:
        self.seconds = seconds

    def on_round_end(self, env: RoundEnv) -> None:
        time.sleep(self.seconds)


def test_verbose_shows_the_progress_bar(synthetic_log, capsys):
    """verbose=1: the bar on any stderr (here not a terminal); 0: nothing; a Progress among
    the callbacks replaces the one verbose adds."""
    booster(n_rounds=3, verbose=1).fit(synthetic_log.data)
    assert "boosting:" in capsys.readouterr().err
    booster(n_rounds=3, verbose=0).fit(synthetic_log.data)
    assert capsys.readouterr().err == ""
    booster(n_rounds=3, verbose=True).fit(
        synthetic_log.data, callbacks=[Progress(force=True, desc="mine")]
    )
    err = capsys.readouterr().err
    assert "mine" in err and "boosting" not in err


def test_verbose_auto_shows_the_bar_on_a_terminal_once_the_fit_is_long(
    synthetic_log, monkeypatch, capsys
):
    """The default, "auto", prints nothing off a terminal, nor for a quick fit on one; on a
    terminal, a fit still running after VERBOSE_DELAY seconds shows the bar."""
    import sys

    import opboost.core.booster_checks

    assert Booster().verbose == "auto"
    booster(n_rounds=3).fit(synthetic_log.data, callbacks=[Slow(seconds=0.1)])
    assert capsys.readouterr().err == ""  # not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    booster(n_rounds=3).fit(synthetic_log.data)
    assert capsys.readouterr().err == ""  # a terminal, but well under 10 s
    monkeypatch.setattr(opboost.core.booster_checks, "VERBOSE_DELAY", 0.15)
    booster(n_rounds=6).fit(synthetic_log.data, callbacks=[Slow(seconds=0.1)])
    assert "boosting" in capsys.readouterr().err


def test_verbose_is_checked_and_studies_keep_boosters_silent():
    from opboost.compose.config import parse_config

    with pytest.raises(InvalidParameterError, match=r"The 'verbose' parameter of Booster"):
        Booster(verbose=-1).validate_params()
    raw = {
        "data": {"name": "wine"},
        "algorithms": [{"label": "B", "booster": {"verbose": 1}}],
    }
    with pytest.raises(ConfigError) as exc:
        parse_config(raw, file="c.toml")
    assert str(exc.value) == (
        "c.toml [algorithms[0].booster.verbose]: a study's boosters are silent (the study "
        "shows a progress bar of its trials); drop 'verbose'."
    )
    raw["algorithms"][0]["booster"] = {}
    assert parse_config(raw, file="c.toml").algorithms[0].make_booster().verbose == 0
