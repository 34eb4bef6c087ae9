"""Study durability: nothing lost, nothing crashes, nothing silently wrong.

A fake plugin (written to a temporary directory as a real distribution, so spawned worker
processes and subprocesses load it too) provides the data set "durability_test", whose
contents follow $OPBOOST_DURABILITY_DATA_SEED, and the policy learner "exploding_test",
which sleeps ``seconds`` (touching a file in $OPBOOST_DURABILITY_MARKS when it starts) and
raises at fit when ``explode``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from opboost.api.exceptions import OpboostWarning
from opboost.compose.config import parse_config
from opboost.compose.study import LOCK_NAME, StudyError, StudyLockedError, run_study

PLUGIN = """
import os
import time
from typing import ClassVar

import numpy as np

from opboost.api.dataset import Dataset, SupervisedData
from opboost.api.hookspecs import hookimpl
from opboost.api.policy_learner import PolicyLearner


class DurabilityData(Dataset):
    name: ClassVar[str] = "durability_test"
    task: ClassVar[str] = "multiclass"
    bundled: ClassVar[bool] = True

    def __init__(self, *, n_samples: int = 300) -> None:
        self.n_samples = n_samples

    def load(self, data_dir=None):
        rng = np.random.default_rng(int(os.environ.get("OPBOOST_DURABILITY_DATA_SEED", "0")))
        X = rng.normal(size=(self.n_samples, 4))
        y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5).astype(np.int64)
        return SupervisedData(self.name, X, y, "multiclass", 3)


class Exploding(PolicyLearner):
    name: ClassVar[str] = "exploding_test"

    def __init__(self, *, explode: bool = True, seconds: float = 0.0) -> None:
        self.explode = explode
        self.seconds = seconds

    def fit(self, data):
        marks = os.environ.get("OPBOOST_DURABILITY_MARKS")
        if marks:
            open(os.path.join(marks, f"started-{os.getpid()}"), "w").close()
        time.sleep(self.seconds)
        if self.explode:
            raise RuntimeError("exploding_test blew up on purpose")
        self.n_actions_ = data.n_actions
        return self

    def decision_function(self, X):
        return np.zeros((X.shape[0], self.n_actions_))


@hookimpl
def opboost_register_datasets():
    return [DurabilityData]


@hookimpl
def opboost_register_policy_learners():
    return [Exploding]
"""


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("durability_plugin")
    (root / "opboost_durability_test_plugin.py").write_text(PLUGIN)
    info = root / "opboost_durability_test-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: opboost-durability-test\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[opboost]\ndurability_test = opboost_durability_test_plugin\n"
    )
    return root


@pytest.fixture
def plugin(plugin_dir, monkeypatch):
    """The fake plugin installed for this test (and the worker processes it spawns)."""
    from opboost.core.registry import reset_registry

    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.delenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.setenv("OPBOOST_DURABILITY_DATA_SEED", "0")
    reset_registry()
    yield plugin_dir
    reset_registry()


def raw_config(*extra: dict, seeds=(0, 1)) -> dict:
    return {
        "data": {"name": "durability_test"},
        "simulation": {"log_fraction": 0.2},
        "experiment": {"seeds": list(seeds)},
        "algorithms": [
            {"label": "uniform", "baseline": "uniform"},
            {"label": "constant", "baseline": "best_constant"},
            *extra,
        ],
    }


def sleepy(label: str, seconds: float, explode: bool = False) -> dict:
    return {
        "label": label,
        "policy_learner": {"name": "exploding_test", "seconds": seconds, "explode": explode},
    }


def study(raw: dict, out, **kwargs):
    kwargs.setdefault("n_jobs", 1)
    return run_study(parse_config(raw, file="durability.toml"), out, progress=False, **kwargs)


def toml(path: Path, algorithms: str, seeds=(0, 1)) -> Path:
    path.write_text(
        '[data]\nname = "durability_test"\n\n[simulation]\nlog_fraction = 0.2\n\n'
        f"[experiment]\nseeds = {list(seeds)}\n\n"
        '[[algorithms]]\nlabel = "uniform"\nbaseline = "uniform"\n\n' + textwrap.dedent(algorithms)
    )
    return path


# --- 2. one study per output directory --------------------------------------------------------


@pytest.mark.slow
def test_concurrent_studies_on_one_out_dir_second_refuses(plugin, tmp_path, capsys):
    """While a study runs on --out, a second run_study (and `opboost study`) on the same
    directory is refused with the directory, the owner's pid and what to do if it is dead;
    the first study finishes normally and releases the lock."""
    from opboost.compose.cli import main

    out = tmp_path / "out"
    first: dict = {}
    runner = threading.Thread(
        target=lambda: first.update(results=study(raw_config(sleepy("slow", 0.6)), out))
    )
    runner.start()
    try:
        deadline = time.monotonic() + 10
        while not (out / LOCK_NAME).is_file() and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(StudyLockedError) as info:
            study(raw_config(), out)
        message = str(info.value)
        assert str(out) in message and f"pid {os.getpid()}" in message
        assert "no longer running" in message and f"delete {out / LOCK_NAME}" in message
        path = toml(tmp_path / "s.toml", "")
        assert main(["study", str(path), "--out", str(out), "--no-plots", "--quiet"]) == 2
        assert "in use by another opboost study" in capsys.readouterr().err
    finally:
        runner.join()
    assert first["results"]["timings"]["trials_run"] == 6
    assert not (out / LOCK_NAME).exists()


@pytest.mark.skipif(os.name == "nt", reason="POSIX flock")
def test_refusal_names_a_holder_that_has_not_written_its_record_yet(tmp_path):
    """Race: a holder has taken the flock but not yet written its pid (it does so right
    after). The refused study waits for the record instead of reporting "pid unknown"."""
    import fcntl

    from opboost.compose.study.lock import StudyLock

    path = tmp_path / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, file still empty
    record = {"pid": 424242, "host": "the-holder", "started": "just now"}
    writer = threading.Timer(0.2, lambda: path.write_text(json.dumps(record) + "\n"))
    writer.start()
    try:
        with pytest.raises(StudyLockedError, match=r"pid 424242 on the-holder, started just now"):
            StudyLock(tmp_path).acquire()
    finally:
        writer.join()
        os.close(fd)


def test_stale_lock_of_a_dead_process_is_taken_over(plugin, tmp_path):
    """A lock left by a process that no longer exists (on this host) is taken over with a
    warning, and the study runs."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out"
    out.mkdir()
    owner = {"pid": dead.pid, "host": socket.gethostname(), "started": "yesterday"}
    (out / LOCK_NAME).write_text(json.dumps(owner))
    with pytest.warns(OpboostWarning, match=rf"stale lock .*pid {dead.pid}"):
        results = study(raw_config(), out, plots=False)
    assert results["timings"]["trials_run"] == 4
    assert not (out / LOCK_NAME).exists()


def test_atomic_writes_use_unique_temporary_files(plugin, tmp_path, monkeypatch):
    """Two writers of the same file never share a temporary file: every temporary name
    differs and none is left behind."""
    import opboost.compose.study.outputs as study_module

    names: list[str] = []
    real = os.replace

    def spy(src, dst):
        names.append(os.path.basename(src))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    study(raw_config(), tmp_path / "a", plots=False)
    study_module._write_json(tmp_path / "a" / "x.json", {"a": 1})
    study_module._write_json(tmp_path / "a" / "x.json", {"a": 2})
    assert len(names) == len(set(names)) >= 9
    assert "x.json.tmp" not in names
    assert not [p for p in (tmp_path / "a").rglob("*.tmp")]


# --- 3. results are written, whatever they contain --------------------------------------------


def test_non_finite_config_values_are_written_as_null_with_a_note(plugin, tmp_path):
    """logging_C = inf and confidence = nan (values that run) no longer crash the writing of
    results.json after every trial ran: they are written as null and listed in non_finite."""
    config = parse_config(raw_config(), file="durability.toml")
    config.simulation["logging_C"] = math.inf  # as if the config had let them through
    config.experiment["confidence"] = math.nan
    results = run_study(config, tmp_path, n_jobs=1, progress=False, plots=False)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["config"]["simulation"]["logging_C"] is None
    assert saved["config"]["experiment"]["confidence"] is None
    paths = {n["path"]: n["value"] for n in saved["non_finite"]}
    assert paths["config.simulation.logging_C"] == "inf"
    assert paths["config.experiment.confidence"] == "nan"
    assert len(saved["trials"]) == len(results["trials"]) == 4
    assert (tmp_path / "results.md").is_file() and (tmp_path / "results.csv").is_file()


def test_summary_writer_failure_keeps_every_trial_and_resumes(plugin, tmp_path, monkeypatch):
    """When writing results.md fails, the error names it and the trials directory, the other
    outputs and every per-trial file are written, and a re-run resumes every trial."""
    import opboost.compose.study.report

    def broken(*args, **kwargs):
        raise RuntimeError("no space left on device (simulated)")

    with monkeypatch.context() as m:
        m.setattr(opboost.compose.study.report, "markdown_table", broken)
        with pytest.raises(StudyError) as info:
            study(raw_config(), tmp_path, plots=False)
    message = str(info.value)
    assert "results.md" in message and "no space left on device" in message
    assert str(tmp_path / "trials") in message and "re-run" in message
    assert len(list((tmp_path / "trials").glob("*.json"))) == 4
    assert (tmp_path / "results.json").is_file()
    again = study(raw_config(), tmp_path, plots=False)
    assert again["timings"]["trials_run"] == 0 and again["timings"]["trials_resumed"] == 4
    assert (tmp_path / "results.md").is_file()


# --- 4. a failing trial loses nothing else ----------------------------------------------------


@pytest.mark.slow
def test_failing_trial_with_n_jobs_2_keeps_every_other_trial(plugin, tmp_path, capsys):
    """`opboost study --n-jobs 2` where one algorithm raises at fit: every other trial is
    kept and written, the failures are recorded with their traceback and marked in
    results.md, the command exits 1; a re-run retries only the failed trials."""
    from opboost.compose.cli import main

    path = toml(
        tmp_path / "s.toml",
        """
        [[algorithms]]
        label = "boom"
        policy_learner = { name = "exploding_test", explode = true }

        [[algorithms]]
        label = "fine"
        policy_learner = { name = "exploding_test", explode = false, seconds = 0.3 }
        """,
    )
    out = tmp_path / "out"
    code = main(["study", str(path), "--out", str(out), "--n-jobs", "2", "--no-plots", "--quiet"])
    assert code == 1
    assert "2 trial(s) failed" in capsys.readouterr().err
    saved = json.loads((out / "results.json").read_text())
    assert [(f["label"], f["seed"]) for f in saved["failed"]] == [("boom", 0), ("boom", 1)]
    boom = [t for t in saved["trials"] if t["label"] == "boom"]
    assert all(t["failed"] and "blew up on purpose" in t["error"] for t in boom)
    assert all("RuntimeError" in t["traceback"] for t in boom)
    assert saved["summary"]["fine"]["test_reward"]["n"] == 2
    assert saved["summary"]["uniform"]["test_reward"]["n"] == 2
    stored = sorted(p.name for p in (out / "trials").glob("*.json"))
    assert stored == ["fine__s0.json", "fine__s1.json", "uniform__s0.json", "uniform__s1.json"]
    md = (out / "results.md").read_text()
    assert "| boom | policy |" in md and "**2 FAILED**" in md and "## Failed trials" in md
    assert "blew up on purpose" in md
    again = study(
        parse_config_file(path)["raw"], out, plots=False
    )  # still failing: only 2 trials run
    assert again["timings"]["trials_run"] == 2 and again["timings"]["trials_resumed"] == 4


def parse_config_file(path: Path) -> dict:
    from opboost.compose.config import load_config

    return {"raw": load_config(path).raw}


# --- 5. changed data or versions are not silently reused ----------------------------------------


def test_changed_data_contents_rerun_trials(plugin, tmp_path, monkeypatch, capsys):
    """Same data set name and parameters, different contents: the stored trials are re-run
    (and the study says why), not reused. Trial files record the data hash and versions;
    a trial stored under other library versions is re-run too."""
    raw = raw_config()
    first = study(raw, tmp_path, plots=False)
    assert first["timings"]["trials_run"] == 4
    before = json.loads((tmp_path / "trials" / "uniform__s0.json").read_text())
    assert study(raw, tmp_path, plots=False)["timings"]["trials_resumed"] == 4
    capsys.readouterr()

    monkeypatch.setenv("OPBOOST_DURABILITY_DATA_SEED", "1")  # new contents, same spec
    changed = study(raw, tmp_path, plots=False)
    assert changed["timings"]["trials_run"] == 4 and changed["timings"]["trials_resumed"] == 0
    assert "re-running 4 stored trial(s)" in capsys.readouterr().err
    assert changed["trials"] != first["trials"]
    record = json.loads((tmp_path / "trials" / "uniform__s0.json").read_text())
    assert len(record["data_hash"]) == 64 and record["data_hash"] != before.get("data_hash")
    assert {"opboost", "numpy", "lightgbm", "scikit-learn", "river"} <= set(record["versions"])
    assert record["versions"]["plugin opboost-durability-test"] == "1.0"

    path = tmp_path / "trials" / "constant__s1.json"
    old = json.loads(path.read_text())
    old["versions"]["numpy"] = "0.0.1"
    path.write_text(json.dumps(old))
    again = study(raw, tmp_path, plots=False)
    assert again["timings"]["trials_run"] == 1
    assert "library versions changed (numpy 0.0.1 ->" in capsys.readouterr().err


UNRELATED = """
from typing import ClassVar

from opboost.api.hookspecs import hookimpl
from opboost_durability_test_plugin import Exploding


class Unrelated(Exploding):
    name: ClassVar[str] = "unrelated_test"


@hookimpl
def opboost_register_policy_learners():
    return [Unrelated]
"""


def test_only_the_plugins_a_trial_uses_can_rerun_it(plugin, tmp_path, monkeypatch, capsys):
    """Installing a plugin that no stored trial uses re-runs none of them: a trial records
    only the plugins whose components it names (here the data set's), and a trial that uses
    the new plugin records it too; a change of a plugin a trial uses still re-runs it."""
    from opboost.compose.study import versions
    from opboost.core.registry import reset_registry

    raw = raw_config()
    assert study(raw, tmp_path / "out", plots=False)["timings"]["trials_run"] == 4
    installed = tmp_path / "site"
    info = installed / "opboost_unrelated_test-0.1.0.dist-info"
    info.mkdir(parents=True)
    (installed / "opboost_unrelated_test_plugin.py").write_text(UNRELATED)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: opboost-unrelated-test\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[opboost]\nunrelated_test = opboost_unrelated_test_plugin\n"
    )
    monkeypatch.syspath_prepend(str(installed))
    reset_registry()
    assert versions()["plugin opboost-unrelated-test"] == "0.1.0"
    capsys.readouterr()
    again = study(raw, tmp_path / "out", plots=False)
    assert again["timings"]["trials_run"] == 0 and again["timings"]["trials_resumed"] == 4
    assert "re-running" not in capsys.readouterr().err
    record = json.loads((tmp_path / "out" / "trials" / "uniform__s0.json").read_text())
    assert record["versions"]["plugin opboost-durability-test"] == "1.0"
    assert not [name for name in record["versions"] if name.startswith("plugin opboost-unrel")]

    raw = raw_config(
        {"label": "new", "policy_learner": {"name": "unrelated_test", "explode": False}}
    )
    grown = study(raw, tmp_path / "out", plots=False)
    assert grown["timings"]["trials_run"] == 2 and grown["timings"]["trials_resumed"] == 4
    record = json.loads((tmp_path / "out" / "trials" / "new__s0.json").read_text())
    assert record["versions"]["plugin opboost-unrelated-test"] == "0.1.0"

    path = tmp_path / "out" / "trials" / "constant__s1.json"
    old = json.loads(path.read_text())
    old["versions"]["plugin opboost-durability-test"] = "0.9"
    path.write_text(json.dumps(old))
    capsys.readouterr()
    assert study(raw, tmp_path / "out", plots=False)["timings"]["trials_run"] == 1
    assert (
        "because library versions changed (plugin opboost-durability-test 0.9 -> 1.0): "
        "constant__s1.json." in capsys.readouterr().err
    )


# --- 6. worker processes die with the study --------------------------------------------------


def _children(pid: int) -> list[int]:
    """Worker processes (multiprocessing spawn) whose parent is ``pid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = next(int(line.split()[1]) for line in status.splitlines() if line[:5] == "PPid:")
        if ppid == pid and b"spawn_main" in cmdline:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_the_study(plugin, tmp_path):
    """Two `opboost study --n-jobs 2` runs (at the same time, to save time), one SIGKILLed
    and one SIGTERMed while a worker runs a 60 s trial: within a few seconds no worker of
    either survives, and the SIGTERMed study exits with status 143."""
    path = toml(
        tmp_path / "s.toml",
        """
        [[algorithms]]
        label = "slow"
        policy_learner = { name = "exploding_test", explode = false, seconds = 60 }
        """,
        seeds=(0,),
    )
    code = "import sys; from opboost.compose.cli import main; sys.exit(main(sys.argv[1:]))"
    runs = {}
    try:
        for sig in (signal.SIGKILL, signal.SIGTERM):
            marks = tmp_path / f"marks-{sig.name}"
            marks.mkdir()
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([str(plugin), env.get("PYTHONPATH", "")])
            env["OPBOOST_DURABILITY_MARKS"] = str(marks)
            out = tmp_path / f"out-{sig.name}"
            args = ["study", str(path), "--out", str(out), "--n-jobs", "2", "--quiet"]
            runs[sig] = (subprocess.Popen([sys.executable, "-c", code, *args], env=env), marks)
        deadline = time.monotonic() + 25
        for proc, marks in runs.values():  # wait until the slow trial runs in a worker
            while not list(marks.iterdir()) and time.monotonic() < deadline:
                assert proc.poll() is None, "the study ended early"
                time.sleep(0.05)
        workers = {sig: _children(proc.pid) for sig, (proc, _) in runs.items()}
        for sig, (proc, _) in runs.items():
            assert len(workers[sig]) == 2, workers
            proc.send_signal(sig)
        for proc, _ in runs.values():
            proc.wait(timeout=15)
        every = [w for ws in workers.values() for w in ws]
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in every) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = {sig.name: [w for w in ws if _alive(w)] for sig, ws in workers.items()}
        for w in [w for ws in survivors.values() for w in ws]:  # never leave them behind
            os.kill(w, signal.SIGKILL)
        assert not any(survivors.values()), f"workers survived the study: {survivors}"
        assert runs[signal.SIGTERM][0].returncode == 128 + signal.SIGTERM
    finally:
        for proc, _ in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
