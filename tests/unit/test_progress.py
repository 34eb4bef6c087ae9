"""The progress display of a fit (issue 49.4): one display labelled by stage, plain lines off a
terminal, and a closing summary line built from the fitted booster."""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pytest

from opboost import Booster
from opboost.core.callbacks import Progress
from opboost.core.progress import fit_summary


def _lines(err: str) -> list[str]:
    return [line for line in err.split("\n") if line]


def refit_logs(log_factory):
    """Logs on which the hold-out keeps 2 of 12 rounds, so the fit refits on all of them."""
    return log_factory(n=1000, seed=2).data


def test_plain_lines_off_a_terminal_with_every_stage_and_the_summary(log_factory, capsys):
    """verbose=1 into a non-terminal stderr (a log file): no escape codes or carriage returns,
    the stages in order in one display (the refit does not open a second one), and the last
    line the summary with the fitted booster's numbers."""
    b = Booster(n_rounds=12, random_state=0, validation_fraction=0.25, verbose=1)
    b.fit(refit_logs(log_factory))
    err = capsys.readouterr().err
    assert b.selection_["refit_rounds"] == b.best_round_ > 0  # the refit stage runs rounds
    assert "\x1b[" not in err and "\r" not in err
    lines = _lines(err)
    first = {
        stage: next(i for i, x in enumerate(lines) if x.startswith(f"boosting [{stage}]"))
        for stage in ("start", "rounds", "hold-out", "refit")
    }
    assert first["start"] < first["rounds"] < first["hold-out"] < first["refit"]
    assert lines[0] == "boosting [start] designing the logs, fitting any warm start"
    assert sum(x.startswith("boosting [start] designing") for x in lines) == 1  # one display
    s = b.selection_
    assert (
        f"boosting [hold-out] round {b.best_round_} kept: {s['method']} {s['value']:.4f} "
        f"[{s['low']:.4f}, {s['high']:.4f}] on {s['n_holdout']} held-out rows" in lines
    )
    assert f"boosting [refit] on all the logs for {b.best_round_} rounds" in lines
    assert f"boosting [refit] {b.best_round_}/{b.best_round_} " in "\n".join(lines) + " "
    family = b.reward_start_["family"]
    summary = (
        rf"boosting: done in \d+\.\d s; start reward model \({re.escape(family)}\); "
        rf"{b.best_round_} of {b.n_rounds_} rounds kept; held-out {s['method']} "
        rf"{s['value']:.4f} \[{s['low']:.4f}, {s['high']:.4f}\]; refit on all the logs"
    )
    assert re.fullmatch(summary, lines[-1]), lines[-1]


def test_summary_of_a_fit_without_hold_out(synthetic_log, capsys):
    """From F0 = 0 and without held-out logs: start, rounds and seconds only; a round line
    every ``every`` rounds and on the last."""
    b = Booster(n_rounds=5, random_state=0, warm_start="none", validation_fraction=None)
    b.fit(synthetic_log.data, callbacks=[Progress(force=True, every=2)])
    lines = _lines(capsys.readouterr().err)
    rounds = [x.split()[2] for x in lines if x.startswith("boosting [rounds] ") and "/" in x]
    assert rounds == ["2/5", "4/5", "5/5"]
    assert re.fullmatch(r"boosting: done in \d+\.\d s; start F0 = 0; 5 of 5 rounds kept", lines[-1])
    assert lines[-1] == fit_summary(b, float(lines[-1].split()[3]))


def test_summary_names_a_safe_fallback(synthetic_log):
    """A safe fit that fell back says so (and names the constant action) instead of a refit."""

    fitted = SimpleNamespace(  # a booster's fitted attributes after a fallback
        reward_start_=None,
        n_rounds_=12,
        best_round_=3,
        fallback_="constant",
        selection_={"method": "snips", "value": 0.5, "low": 0.4, "high": 0.6, "constant_action": 2},
    )
    assert fit_summary(fitted, 1.26) == (
        "boosting: done in 1.3 s; start F0 = 0; 3 of 12 rounds kept; held-out snips 0.5000 "
        "[0.4000, 0.6000]; fell back to constant action 2"
    )


def test_one_labelled_bar_on_a_terminal(log_factory, monkeypatch, capsys):
    """On a terminal one tqdm bar, labelled with the stage, is reused through the refit (no
    second bar stacked under it: no cursor-up code), then cleared and followed by the summary."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    b = Booster(n_rounds=12, random_state=0, validation_fraction=0.25, verbose=1)
    b.fit(refit_logs(log_factory))
    err = capsys.readouterr().err
    assert "\x1b[A" not in err
    assert "boosting [rounds]" in err and "boosting [refit]" in err
    assert re.split(r"[\r\n]", err.rstrip("\n"))[-1].startswith("boosting: done in ")
    assert f"{b.best_round_} of {b.n_rounds_} rounds kept" in err


@pytest.mark.parametrize("every", [0, 1.5])
def test_every_is_checked(synthetic_log, every):
    from opboost.api.exceptions import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"The 'every' parameter of Progress"):
        Booster(n_rounds=2, random_state=0).fit(
            synthetic_log.data, callbacks=[Progress(force=True, every=every)]
        )


def test_a_display_reused_after_a_failed_fit_starts_afresh(synthetic_log, capsys):
    """A fit that raised mid-way leaves no state behind: the same Progress shows the next
    fit from its start, once, with its summary."""
    from opboost.core.callbacks import Callback

    class Boom(Callback):
        name = "boom"

        def on_round_end(self, env):
            if env.round == 2:
                raise RuntimeError("boom")

    progress = Progress(force=True)
    params = {"n_rounds": 4, "random_state": 0, "warm_start": "none", "validation_fraction": None}
    with pytest.raises(RuntimeError, match="boom"):
        Booster(**params).fit(synthetic_log.data, callbacks=[progress, Boom()])
    capsys.readouterr()
    Booster(**params).fit(synthetic_log.data, callbacks=[progress])
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == "boosting [start] designing the logs, fitting any warm start"
    assert sum(x.startswith("boosting [start] designing") for x in lines) == 1
    assert re.fullmatch(r"boosting: done in \d+\.\d s; start F0 = 0; 4 of 4 rounds kept", lines[-1])
