"""The deployment study of examples/deployment.toml (shortened): it runs, writes a
non-decreasing cumulative reward for every trial, its report and plots, and a study killed
mid-way resumes to the same results."""

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


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("deployment")
    config = load_config(EXAMPLE, SHORT)
    return out, run_study(config, out, progress=False)


def test_every_trial_writes_a_non_decreasing_cumulative_reward(reference):
    out, results = reference
    assert len(results["trials"]) == 8 and not results["failed"]
    modes = {}
    for trial in results["trials"]:
        curves, metrics = trial["curves"], trial["metrics"]
        assert curves["interactions"] == [40, 80, 120]
        for key in ("cumulative_reward", "cumulative_regret"):
            assert np.all(np.diff([0.0, *curves[key]]) >= 0), (trial["label"], key)
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
    assert {"deployment_cumulative_reward.png", "deployment_cumulative_regret.png"} <= {
        p.name for p in out.iterdir()
    }


def test_a_killed_deployment_study_resumes_to_the_same_results(reference, tmp_path):
    """`opboost study` is SIGKILLed once its first trial is stored; the same command, run
    again, reuses the stored trials and writes the uninterrupted study's results."""
    _, expected = reference
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "opboost", "study", str(EXAMPLE), "--out", str(out)]
    command += [arg for item in SHORT for arg in ("--set", item)] + ["--no-plots", "--quiet"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(out.glob("trials/*.json")) and proc.poll() is None:
        assert time.monotonic() < deadline, "no trial was stored in 120 s"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL, proc.stderr.read().decode()
    proc.stderr.close()
    stored = list(out.glob("trials/*.json"))
    assert 1 <= len(stored) < 8
    for path in stored:
        assert set(json.loads(path.read_text())) >= {"fingerprint", "result"}
    with pytest.warns(OpboostWarning, match="taking over the stale lock"):
        again = run_study(load_config(EXAMPLE, SHORT), out, progress=False, plots=False)
    assert again["timings"]["trials_resumed"] == len(stored)
    assert comparable(again) == comparable(expected)
