"""The deployment studies of examples/deployment.toml, deployment_catalogue.toml and
deployment_slates.toml (shortened): each runs, writes a non-decreasing cumulative reward
for every trial, its report and plots, and a study killed mid-way resumes to the same
results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from opboost.api.exceptions import OpboostWarning
from opboost.compose.config import load_config
from opboost.compose.study import comparable, run_study

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deployment.toml"
SHORT = [
    "experiment.seeds=[0, 1]",
    "experiment.n_jobs=1",
    "deployment.batch_size=40",
    "deployment.n_batches=3",
    "algorithms[Booster (batches of 100)].booster.n_rounds=10",
]
CATALOGUE = EXAMPLE.with_name("deployment_catalogue.toml")
CATALOGUE_SHORT = [
    "experiment.seeds=[0, 1]",
    "experiment.n_jobs=1",
    "data.n_items=30",
    "data.n_test=300",
    "deployment.batch_size=40",
    "deployment.n_batches=3",
    "algorithms[Booster (batches of 200)].booster.n_rounds=10",
]
SLATES = EXAMPLE.with_name("deployment_slates.toml")
SLATES_SHORT = [
    "experiment.seeds=[0, 1]",
    "experiment.n_jobs=1",
    "data.n_test=200",
    "deployment.batch_size=40",
    "deployment.n_batches=3",
    "algorithms[slate_boost (batches of 300)].policy_learner.n_rounds=5",
]
STUDIES = {
    "digits": (EXAMPLE, SHORT),
    "catalogue": (CATALOGUE, CATALOGUE_SHORT),
    "slates": (SLATES, SLATES_SHORT),
}


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """``name -> (out, results)`` of the uninterrupted short study, run once per module."""
    done = {}

    def run(name):
        if name not in done:
            example, short = STUDIES[name]
            out = tmp_path_factory.mktemp(name)
            done[name] = out, run_study(load_config(example, short), out, progress=False)
        return done[name]

    return run


@pytest.fixture(scope="module")
def reference(studies):
    return studies("digits")


def _non_decreasing_curves(trial: dict) -> tuple[dict, dict]:
    """``trial``'s (curves, metrics) after checking its curves: read at 40, 80 and 120
    interactions, cumulative reward and regret never decreasing from 0."""
    curves = trial["curves"]
    assert curves["interactions"] == [40, 80, 120]
    for key in ("cumulative_reward", "cumulative_regret"):
        assert np.all(np.diff([0.0, *curves[key]]) >= 0), (trial["label"], key)
    return curves, trial["metrics"]


def _has_deployment_plots(out) -> None:
    names = {p.name for p in out.iterdir()}
    assert {"deployment_cumulative_reward.png", "deployment_cumulative_regret.png"} <= names


def test_every_trial_writes_a_non_decreasing_cumulative_reward(reference):
    out, results = reference
    assert len(results["trials"]) == 8 and not results["failed"]
    modes = {}
    for trial in results["trials"]:
        curves, metrics = _non_decreasing_curves(trial)
        assert metrics["cumulative_reward"] == curves["cumulative_reward"][-1]
        assert metrics["cumulative_reward"] + metrics["cumulative_regret"] == 120.0  # 0/1 reward
        assert 0.0 <= metrics["test_reward"] <= 1.0
        modes[trial["label"]] = trial["info"]["deployment"]
    assert modes == {
        "logging policy (fixed)": "fixed",
        "Booster (batches of 100)": "batched",
        "Chen bandit boost": "online",
        "LinUCB": "online",
    }
    booster = [t for t in results["trials"] if t["label"].startswith("Booster")]
    assert all(len(t["timings"]["batch_fit_seconds"]) == 3 for t in booster)
    logging = [t for t in results["trials"] if t["label"].startswith("logging")]
    for fixed, batched in zip(logging, booster, strict=True):  # batch 0: the same logs
        assert fixed["curves"]["cumulative_reward"][0] == batched["curves"]["cumulative_reward"][0]
    md = (out / "results.md").read_text()
    assert "## Deployment: reward collected on the stream" in md
    assert "| Booster (batches of 100) | offline, batched |" in md
    _has_deployment_plots(out)


def test_every_catalogue_trial_writes_a_non_decreasing_cumulative_reward(studies):
    """On the catalogue stream the curves collect the played items' true mean rewards: the
    regret is against each row's best candidate; the logger logs every batch 0."""
    out, results = studies("catalogue")
    assert len(results["trials"]) == 8 and not results["failed"]
    modes = {}
    for trial in results["trials"]:
        curves, metrics = _non_decreasing_curves(trial)
        assert metrics["cumulative_reward"] == curves["cumulative_reward"][-1]
        assert 0.0 < metrics["cumulative_reward"] < 120.0
        assert 0.0 < metrics["test_reward"] < 1.0
        assert trial["info"]["n_items"] == 30 and trial["info"]["n_test"] == 300
        modes[trial["label"]] = trial["info"]["deployment"]
    assert modes == {
        "logging policy (fixed)": "fixed",
        "uniform (fixed)": "fixed",
        "Booster (batches of 200)": "batched",
        "reward model (batches of 200)": "batched",
    }
    by_seed = {}
    for trial in results["trials"]:
        by_seed.setdefault(trial["seed"], {})[trial["label"]] = trial
    for trials in by_seed.values():
        first = {t["curves"]["cumulative_reward"][0] for t in trials.values()}
        assert len(first) == 2  # the logger's batch 0 for all but uniform play
        best = trials["logging policy (fixed)"]
        total = best["metrics"]["cumulative_reward"] + best["metrics"]["cumulative_regret"]
        for trial in trials.values():  # the same rows: the same best reward
            metrics = trial["metrics"]
            assert metrics["cumulative_reward"] + metrics["cumulative_regret"] == pytest.approx(
                total, abs=1e-9
            )
    md = (out / "results.md").read_text()
    assert "World: catalogue (n_items=30, n_candidates=10, d_x=5, d_item=5" in md
    assert "| Booster (batches of 200) | offline, batched |" in md
    _has_deployment_plots(out)


def test_every_slate_trial_writes_a_non_decreasing_cumulative_reward(studies):
    """On the slate stream the curves collect each impression's true expected clicks; the
    regret is against the attractiveness ranking; the logger logs every batch 0."""
    out, results = studies("slates")
    assert len(results["trials"]) == 4 and not results["failed"]
    for trial in results["trials"]:
        _, metrics = _non_decreasing_curves(trial)
        assert 0.0 < metrics["test_reward"] < 3.0  # expected clicks of 3 positions
        assert trial["info"]["slate_size"] == 3
    learned = [t for t in results["trials"] if t["label"].startswith("slate_boost")]
    assert [t["info"]["deployment"] for t in learned] == ["batched", "batched"]
    assert all(len(t["timings"]["batch_fit_seconds"]) == 3 for t in learned)
    logging = [t for t in results["trials"] if t["label"].startswith("logging")]
    for fixed, batched in zip(logging, learned, strict=True):  # batch 0: the same logs
        assert fixed["curves"]["cumulative_reward"][0] == batched["curves"]["cumulative_reward"][0]
    assert (
        "World: slates (n_items=20, n_candidates=8, slate_size=3"
        in (out / "results.md").read_text()
    )


@pytest.mark.parametrize("name", list(STUDIES))
def test_a_killed_deployment_study_resumes_to_the_same_results(studies, name, tmp_path):
    """`opboost study` is SIGKILLed once its first trial is stored; the same command, run
    again, reuses the stored trials and writes the uninterrupted study's results."""
    _, expected = studies(name)
    example, short = STUDIES[name]
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "opboost", "study", str(example), "--out", str(out)]
    command += [arg for item in short for arg in ("--set", item)] + ["--no-plots", "--quiet"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(out.glob("trials/*.json")) and proc.poll() is None:
        assert time.monotonic() < deadline, "no trial was stored in 120 s"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL, proc.stderr.read().decode()
    proc.stderr.close()
    stored = list(out.glob("trials/*.json"))
    assert 1 <= len(stored) < len(expected["trials"])
    for path in stored:
        assert set(json.loads(path.read_text())) >= {"fingerprint", "result"}
    with pytest.warns(OpboostWarning, match="taking over the stale lock"):
        again = run_study(load_config(example, short), out, progress=False, plots=False)
    assert again["timings"]["trials_resumed"] == len(stored)
    assert comparable(again) == comparable(expected)
