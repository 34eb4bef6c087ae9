"""Study edge cases (issue 20): labels that slugify alike, malformed trial files, a
read-only or full output directory, and SIGKILLs at random moments of a study.

Uses the fake plugin of test_study_durability.py (data set "durability_test", policy
learner "exploding_test"), written to disk so that subprocesses load it too.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_study_durability import plugin, plugin_dir, raw_config, study, toml

from opboost.compose.study import LOCK_NAME, comparable

__all__ = ["plugin", "plugin_dir"]  # fixtures used by the tests below


def _numbers(out: Path) -> dict:
    """results.json without timings (what two runs of one study must agree on)."""
    return comparable(json.loads((out / "results.json").read_text()))


def _trial_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "trials").glob("*.json"))}


# --- 1. labels that slugify alike ------------------------------------------------------------


def test_labels_that_slugify_alike_keep_their_own_trial_files(plugin, tmp_path):
    """ "BOPL (fast)" and "BOPL [fast]" (both "BOPL_fast" as a slug) get a trial file each: a
    re-run resumes every trial of both, and results keep both algorithms' numbers."""
    raw = raw_config(
        {"label": "BOPL (fast)", "baseline": "uniform"},
        {"label": "BOPL [fast]", "baseline": "best_constant"},
    )
    first = study(raw, tmp_path, plots=False)
    files = _trial_files(tmp_path)
    assert len(files) == 8, sorted(files)
    labels = sorted(json.loads(b)["result"]["label"] for b in files.values())
    assert labels.count("BOPL (fast)") == labels.count("BOPL [fast]") == 2
    assert "uniform__s0.json" in files and "constant__s1.json" in files  # plain labels: as is
    again = study(raw, tmp_path, plots=False)
    assert again["timings"]["trials_run"] == 0 and again["timings"]["trials_resumed"] == 8
    assert comparable(again) == comparable(first)
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["BOPL (fast)"] == summary["uniform"]
    assert summary["BOPL [fast]"] == summary["constant"]


def test_labels_equal_but_for_case_get_distinct_file_names(plugin, tmp_path):
    """On a case-insensitive file system (macOS, Windows) "fast" and "FAST" would share a
    trial file: their file names differ in more than case, and stay the same on a re-run."""
    raw = raw_config(
        {"label": "fast", "baseline": "uniform"}, {"label": "FAST", "baseline": "best_constant"}
    )
    study(raw, tmp_path, plots=False)
    files = _trial_files(tmp_path)
    assert len({name.casefold() for name in files}) == len(files) == 8
    again = study(raw, tmp_path, plots=False)
    assert again["timings"]["trials_resumed"] == 8 and _trial_files(tmp_path).keys() == files.keys()


def test_temporary_files_of_a_killed_study_are_removed_on_resume(plugin, tmp_path):
    """A study SIGKILLed while writing leaves its unique temporary file behind; the next
    study on that --out (which holds the lock, so nobody else writes there) removes it and
    nothing else."""
    study(raw_config(), tmp_path, plots=False)
    leftovers = [
        tmp_path / "trials" / ".uniform__s0.json.k2x9_a1q.tmp",
        tmp_path / ".results.json.abcd1234.tmp",
        tmp_path / ".results.md.zz_9y8x7.tmp",
    ]
    mine = [tmp_path / "notes.tmp", tmp_path / "trials" / ".keep.tmp"]
    for path in leftovers + mine:
        path.write_text('{"half": ')
    again = study(raw_config(), tmp_path, plots=False)
    assert again["timings"]["trials_resumed"] == 4
    assert not [p for p in leftovers if p.exists()]
    assert all(p.exists() for p in mine)


# --- 2. trial files of the wrong shape --------------------------------------------------------


def test_malformed_trial_files_are_rerun_with_a_note_naming_them(plugin, tmp_path, capsys):
    """Stored trial files that are valid JSON of the wrong shape (a list, an object without
    the record's keys, a record whose result lacks keys or has values of the wrong type, a
    truncated file) are not a traceback: each is named on stderr, its trial re-runs, the
    intact ones are resumed and the results equal an undisturbed study's."""
    raw = raw_config(seeds=(0, 1, 2, 3, 4))
    study(raw, tmp_path, plots=False)
    reference = _numbers(tmp_path)
    trials = tmp_path / "trials"

    def record(name: str, **changes) -> str:
        """The stored record of ``name`` with ``changes`` ("result__metrics": result's
        metrics; the value KeyError deletes the key)."""
        obj = json.loads((trials / name).read_text())
        for path, value in changes.items():
            *parents, last = path.split("__")
            target = obj
            for p in parents:
                target = target[p]
            if value is KeyError:
                del target[last]
            else:
                target[last] = value
        return json.dumps(obj)

    broken = {
        "uniform__s0.json": "[]",
        "uniform__s1.json": '{"foo": 1}',
        "uniform__s2.json": record("uniform__s2.json", result__metrics=KeyError),
        "uniform__s3.json": record("uniform__s3.json", data_hash=5),
        "uniform__s4.json": record("uniform__s4.json", versions=[]),
        "constant__s0.json": record("constant__s0.json", result__metrics={"test_reward": "x"}),
        "constant__s1.json": record("constant__s1.json", result="done"),
        "constant__s2.json": record("constant__s2.json", result__seed="2"),
        "constant__s3.json": '{"fingerprint": "abc", "result": {"lab',
    }
    for name, text in broken.items():
        (trials / name).write_text(text)
    capsys.readouterr()
    again = study(raw, tmp_path, plots=False)
    err = capsys.readouterr().err
    assert again["timings"]["trials_run"] == len(broken)
    assert again["timings"]["trials_resumed"] == 10 - len(broken)
    assert "not a complete trial record" in err
    for name in broken:
        assert name in err, (name, err)
    assert _numbers(tmp_path) == reference
    for name in broken:  # rewritten as complete records
        assert set(json.loads((trials / name).read_text())) >= {"fingerprint", "result"}


# --- 3. read-only or full output directory ----------------------------------------------------


def _fail_writes(monkeypatch, error: OSError, after: int = 0) -> list[Path]:
    """Every checked atomic write of a study after the first ``after`` raises ``error`` (as a
    read-only or full disk would; tests run as root, where chmod does not stop writes)."""
    import opboost.compose.study.outputs as study_module

    real = study_module._write_text
    attempted: list[Path] = []

    def write(path: Path, text: str) -> None:
        attempted.append(Path(path))
        if len(attempted) > after:
            raise type(error)(error.errno, error.strerror, str(path))
        real(path, text)

    monkeypatch.setattr(study_module, "_write_text", write)
    return attempted


def test_read_only_out_is_a_clean_error_naming_it_and_keeps_trials(
    plugin, tmp_path, monkeypatch, capsys
):
    """`opboost study` on a read-only --out (the lock cannot be created, nothing can be
    written) prints `opboost: error: ...` naming the directory and exits 2, no traceback;
    the trials stored there before are untouched and a later writable run resumes them."""
    from opboost.compose.cli import main

    out = tmp_path / "out"
    path = toml(tmp_path / "s.toml", "")
    assert main(["study", str(path), "--out", str(out), "--no-plots", "--quiet"]) == 0
    before = _trial_files(out)
    assert len(before) == 2
    bigger = toml(
        tmp_path / "more.toml", '[[algorithms]]\nlabel = "c"\nbaseline = "best_constant"\n'
    )
    capsys.readouterr()
    real_open = os.open

    def read_only_open(file, flags, *args, **kwargs):
        if str(file).endswith(LOCK_NAME) and flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os, "open", read_only_open)
        _fail_writes(m, PermissionError(errno.EACCES, "Permission denied"))
        code = main(["study", str(bigger), "--out", str(out), "--no-plots", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("opboost: error:") and str(out) in err and "Permission denied" in err
    assert "Traceback" not in err
    assert _trial_files(out) == before

    # the lock could be taken but no file written (read-only trials/): same clean error
    with monkeypatch.context() as m:
        _fail_writes(m, PermissionError(errno.EACCES, "Permission denied"))
        code = main(["study", str(bigger), "--out", str(out), "--no-plots", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("opboost: error:") and "Traceback" not in err
    assert str(out / "trials") in err and "Permission denied" in err
    assert _trial_files(out) == before
    assert main(["study", str(bigger), "--out", str(out), "--no-plots", "--quiet"]) == 0
    assert "2 trials run, 2 resumed" in capsys.readouterr().out


def test_disk_full_during_study_is_a_clean_error_and_keeps_finished_trials(
    plugin, tmp_path, monkeypatch, capsys
):
    """The disk fills up (ENOSPC) after two trial files: `opboost study` prints `opboost:
    error: ...` naming the file that could not be written and exits 2; the two stored
    trials are complete and a re-run resumes them and gives an undisturbed study's numbers."""
    from opboost.compose.cli import main

    path = toml(tmp_path / "s.toml", '[[algorithms]]\nlabel = "c"\nbaseline = "best_constant"\n')
    reference = tmp_path / "reference"
    assert main(["study", str(path), "--out", str(reference), "--no-plots", "--quiet"]) == 0
    out = tmp_path / "out"
    capsys.readouterr()
    with monkeypatch.context() as m:
        attempted = _fail_writes(m, OSError(errno.ENOSPC, "No space left on device"), after=2)
        code = main(["study", str(path), "--out", str(out), "--no-plots", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("opboost: error:") and "No space left on device" in err
    assert str(attempted[2]) in err and "Traceback" not in err
    stored = _trial_files(out)
    assert len(stored) == 2
    assert all(set(json.loads(b)) >= {"fingerprint", "result"} for b in stored.values())
    assert not (out / LOCK_NAME).exists()
    assert main(["study", str(path), "--out", str(out), "--no-plots", "--quiet"]) == 0
    assert "2 trials run, 2 resumed" in capsys.readouterr().out
    assert _numbers(out) == _numbers(reference)


# --- 4. SIGKILL at random moments -------------------------------------------------------------

# One launcher process imports opboost once and forks a child per command, so that each
# study costs no import time:
#   "study CONFIG OUT": a child runs `opboost study CONFIG --out OUT`; the launcher prints
#                       "pid PID" at once;
#   "reap PID":         wait for that child, print "status EXITCODE" (-9: SIGKILLed).
LAUNCHER = r"""
import os, sys
import opboost
from opboost.compose.cli import main
import opboost.compose.study.runner, opboost.compose.trial.run
import opboost.compose.trial.trial_data, opboost.compose.study.report
opboost.get_registry()

print("launcher ready", flush=True)
for line in sys.stdin:
    command, *args = line.split()
    if command == "reap":
        _, status = os.waitpid(int(args[0]), 0)
        print("status", os.waitstatus_to_exitcode(status), flush=True)
        continue
    pid = os.fork()
    if pid == 0:
        try:
            log = os.open(args[1] + ".log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os._exit(main(["study", args[0], "--out", args[1], "--no-plots", "--quiet"]))
        except BaseException:
            os._exit(99)
    print("pid", pid, flush=True)
"""


class Launcher:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.readline() == "launcher ready"

    def readline(self) -> str:
        line = self.proc.stdout.readline()
        assert line, "the launcher died"
        return line.rstrip("\n")

    def send(self, *words: object) -> str:
        self.proc.stdin.write(" ".join(map(str, words)) + "\n")
        self.proc.stdin.flush()
        return self.readline()

    def study(self, config: Path, out: Path) -> int:
        return int(self.send("study", config, out).split()[1])

    def reap(self, pid: int) -> int:
        return int(self.send("reap", pid).split()[1])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a launcher process")
def test_study_sigkilled_at_random_moments_always_resumes_to_same_results(plugin, tmp_path):
    """12 times: `opboost study` (9 trials, ~1 s) is SIGKILLed after a random delay between
    0.2 s and 80% of the shorter of two uninterrupted runs. Every stored trial file then loads
    as a complete record, the re-run exits 0, leaves no temporary file and writes the same
    results.json numbers as the uninterrupted study."""
    config = toml(
        tmp_path / "s.toml",
        """
        [[algorithms]]
        label = "constant"
        baseline = "best_constant"

        [[algorithms]]
        label = "slow (0.15 s)"
        policy_learner = { name = "exploding_test", explode = false, seconds = 0.15 }
        """,
        seeds=(0, 1, 2),
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin), env.get("PYTHONPATH", "")])
    env.pop("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", None)
    rng = random.Random(20)
    launcher = Launcher(env)
    try:
        durations = []  # the shorter of two runs: a load spike must not push kills past the end
        for name in ("reference", "reference2"):
            started = time.monotonic()
            assert launcher.reap(launcher.study(config, tmp_path / name)) == 0
            durations.append(time.monotonic() - started)
        reference, duration = tmp_path / "reference", min(durations)
        expected = _numbers(reference)
        killed = partial = 0
        for i in range(12):
            out = tmp_path / f"out{i}"
            pid = launcher.study(config, out)
            time.sleep(rng.uniform(0.2, max(0.3, 0.8 * duration)))
            os.kill(pid, signal.SIGKILL)
            status = launcher.reap(pid)
            killed += status == -signal.SIGKILL
            assert status in (0, -signal.SIGKILL), (status, Path(f"{out}.log").read_text())
            if (out / "trials").is_dir():
                partial += 0 < len(_trial_files(out)) < 9
                for name, data in _trial_files(out).items():
                    record = json.loads(data)  # complete JSON, the record's shape
                    assert set(record) >= {"fingerprint", "result", "versions"}, name
            status = launcher.reap(launcher.study(config, out))
            assert status == 0, Path(f"{out}.log").read_text()
            assert _numbers(out) == expected
            assert not [p.name for p in out.rglob("*.tmp")]
            assert not (out / LOCK_NAME).exists()
        assert killed >= 10, f"only {killed} of 12 studies were still running when killed"
        assert partial >= 3, f"only {partial} of 12 kills left some but not all trials"
    finally:
        launcher.close()
