"""Policy files: atomic saves under SIGKILL and concurrent writers, untrusted model text that
used to abort the process, and bounded, regular-file-only reads (issue 20)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import opboost
from opboost.api.data.logged import LoggedBandit
from opboost.api.policy import ConstantPolicy, manifest_digest
from opboost.core.policy_loading import load_policy

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals, symlinks, FIFOs")

N_KILLS = 30
X = np.random.default_rng(7).normal(size=(40, 2))


def _log(seed: int) -> LoggedBandit:
    rng = np.random.default_rng(seed)
    n, k = 120, 3
    return LoggedBandit(
        rng.normal(size=(n, 2)), rng.integers(0, k, n), np.full(n, 1 / k), rng.uniform(size=n), k
    )


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    """Two small fitted LightGBM policies A and B (different data), saved as .json files."""
    root = tmp_path_factory.mktemp("sources")
    out = []
    for name, seed in (("a", 0), ("b", 1)):
        booster = opboost.Booster(
            n_rounds=3, base_learner_params={"num_threads": 1}, random_state=seed
        ).fit(_log(seed))
        out.append(booster.policy_.save(root / f"{name}.json"))
    a, b = (load_policy(p).decision_function(X) for p in out)
    assert not np.allclose(a, b)
    return out


def _which(policy, sources) -> str:
    """'a' or 'b': which source policy ``policy`` predicts like; fails otherwise."""
    scores = policy.decision_function(X)
    for name, src in zip("ab", sources, strict=True):
        if np.array_equal(scores, load_policy(src).decision_function(X)):
            return name
    raise AssertionError("the loaded policy is neither A nor B")


# One launcher process imports opboost (2-3 s on a busy machine) once and forks a fresh
# child per command, so dozens of children cost milliseconds each:
#   "save TARGET": a child that prints "ready PID", then saves A and B alternately into
#                  TARGET as fast as it can (rebuilt from their saved text: no LightGBM);
#   "reap PID":    wait for that (killed) child, print "status EXITCODE";
#   "load PATH":   a child loads PATH with its address space capped at +512 MiB and prints
#                  "ValueError: ..." (exit 3) or "loaded" (exit 0); the launcher prints
#                  "status EXITCODE" (negative: killed by that signal, e.g. -6 for SIGABRT),
#                  killing the child after 20 s ("status timeout").
LAUNCHER = r"""
import json, os, resource, signal, sys, time
import opboost
from opboost.api.policy import Policy
opboost.get_registry()

class Text:
    def __init__(self, spec):
        self.format, self.text = spec["format"], spec["text"]
    def dumps(self):
        return self.text

policies = []
for src in sys.argv[1:]:
    m = json.loads(open(src, encoding="utf-8").read())
    policies.append(Policy(Text(m["ensemble"]), m["n_actions"], m["metadata"]))

def load(path):
    pages = int(open("/proc/self/statm").read().split()[0])
    cap = pages * os.sysconf("SC_PAGE_SIZE") + (512 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        opboost.load_policy(path)
    except ValueError as exc:
        print("ValueError:", str(exc).replace(chr(10), " "), flush=True)
        return 3
    print("loaded", flush=True)
    return 0

print("launcher ready", flush=True)
for line in sys.stdin:
    command, arg = line.rstrip(chr(10)).split(" ", 1)
    if command == "reap":
        _, status = os.waitpid(int(arg), 0)
        print("status", os.waitstatus_to_exitcode(status), flush=True)
        continue
    pid = os.fork()
    if pid == 0:
        try:
            if command == "save":
                print("ready", os.getpid(), flush=True)
                while True:
                    for p in policies:
                        p.save(arg)
            os._exit(load(arg))
        except BaseException as exc:
            print("child raised", type(exc).__name__, exc, flush=True)
            os._exit(1)
    if command == "load":
        deadline = time.monotonic() + 20
        while not (done := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < deadline:
            time.sleep(0.01)
        if done[0]:
            print("status", os.waitstatus_to_exitcode(done[1]), flush=True)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            print("status timeout", flush=True)
"""


class Launcher:
    def __init__(self, sources):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *map(str, sources)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.readline() == "launcher ready"

    def readline(self) -> str:
        line = self.proc.stdout.readline()
        assert line, "the launcher died"
        return line.rstrip("\n")

    def send(self, command: str, arg) -> None:
        self.proc.stdin.write(f"{command} {arg}\n")
        self.proc.stdin.flush()

    def load(self, path) -> tuple[str, str]:
        """(last output line of the child, its exit status)."""
        self.send("load", path)
        lines = []
        while not (line := self.readline()).startswith("status "):
            lines.append(line)
        return (lines[-1] if lines else ""), line.split(" ", 1)[1]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def launcher(policies):
    launcher = Launcher(policies)
    yield launcher
    launcher.close()


@pytest.mark.slow
def test_save_directory_killed_mid_save_leaves_old_or_new_policy(policies, launcher, tmp_path):
    """SIGKILL at a random instant of repeated directory saves over an existing policy, 30
    times: the directory always loads as A or B (the old code replaced ensemble.txt, then
    policy.json: a kill between them left a checksum error), and the next save cleans up."""
    target = tmp_path / "policy"
    load_policy(policies[0]).save(target)
    rng = random.Random(20)
    seen = set()
    # N_KILLS kills within the first 30 ms of saving, then (on a slow machine, where those may
    # all land before the first save completes) longer delays until both policies were seen
    delays = [rng.uniform(0.0, 0.03) for _ in range(N_KILLS)]
    delays += [0.05 * 1.5**i for i in range(12)]
    for count, delay in enumerate(delays):
        if count >= N_KILLS and seen == {"a", "b"}:
            break
        launcher.send("save", target)
        word, pid = launcher.readline().split()
        assert word == "ready"
        threading.Event().wait(delay)
        os.kill(int(pid), signal.SIGKILL)
        launcher.send("reap", pid)
        assert launcher.readline() == f"status {-signal.SIGKILL}"
        seen.add(_which(load_policy(target), policies))
    assert seen == {"a", "b"}
    load_policy(policies[1]).save(target)  # removes what killed saves left behind
    assert sorted(p.name for p in target.iterdir()) == ["ensemble.txt", "policy.json"]
    assert _which(load_policy(target), policies) == "b"
    assert [p.name for p in tmp_path.iterdir()] == ["policy"]  # no staging directories


def _race(writers, reader=None, seconds_limit=60):
    """Run writer callables (and a reader) in threads; return the exceptions they raised."""
    errors: list[BaseException] = []
    done = threading.Event()

    def guard(fn):
        try:
            fn()
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=guard, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    if reader is not None:
        r = threading.Thread(target=guard, args=(lambda: reader(done),))
        r.start()
    for t in threads:
        t.join(seconds_limit)
    done.set()
    if reader is not None:
        r.join(seconds_limit)
    return errors


@pytest.mark.slow
@pytest.mark.parametrize("form", ["policy.json", "policy_dir"])
def test_concurrent_saves_to_one_path_never_raise_nor_tear(policies, tmp_path, form):
    """Two threads saving A and B to the same path while a third loads it: no writer raises
    (the old fixed '<file>.tmp' name made os.replace fail with FileNotFoundError), every load
    is A or B, and the final file loads."""
    a, b = (load_policy(p) for p in policies)
    target = tmp_path / form
    a.save(target)
    loads = []

    def writer(policy):
        return lambda: [policy.save(target) for _ in range(60)]

    def reader(done):
        while not done.is_set():
            loads.append(_which(load_policy(target), policies))

    errors = _race([writer(a), writer(b)], reader)
    assert errors == []
    assert loads and set(loads) <= {"a", "b"}
    _which(load_policy(target), policies)
    assert not [p for p in target.parent.rglob("*") if p.name.endswith((".tmp", ".new"))]


# --- untrusted model text --------------------------------------------------------------


def _edited(source: Path, target: Path, edit) -> Path:
    """A .json policy whose LightGBM model text is ``edit(model)``, with both checksums (the
    ensemble header's and the manifest's) recomputed as an attacker would."""
    manifest = json.loads(source.read_text())
    first, _, model = manifest["ensemble"]["text"].partition("\n")
    header = json.loads(first)
    model = edit(model)
    header["sha256"] = hashlib.sha256(model.encode()).hexdigest()
    text = json.dumps(header) + "\n" + model
    manifest["ensemble"].update(text=text, sha256=hashlib.sha256(text.encode()).hexdigest())
    manifest["ensemble"].pop("size", None)
    manifest["manifest_sha256"] = manifest_digest(manifest)
    target.write_text(json.dumps(manifest))
    return target


def _first_line_of(model: str, key: str, new: str) -> str:
    start = model.index(f"\n{key}=") + 1
    end = model.index("\n", start)
    return model[:start] + new + model[end:]


def _drop_second_tree(model: str) -> str:
    start, end = model.index("Tree=1\n"), model.index("Tree=2\n")
    return model[:start] + model[end:].replace("Tree=2\n", "Tree=1\n", 1)


def _fewer_leaf_values(model: str) -> str:
    start = model.index("\nleaf_value=") + 1
    line = model[start : model.index("\n", start)]
    return model.replace(line, line.rsplit(" ", 1)[0], 1)


def _first_value(model: str, key: str, new: str) -> str:
    """Replace the first value of the first ``key=`` line."""
    start = model.index(f"\n{key}=") + len(key) + 2
    end = min(model.index(" ", start), model.index("\n", start))
    return model[:start] + new + model[end:]


EDITS = {
    "num_leaves_400": lambda m: _first_line_of(m, "num_leaves", "num_leaves=400"),
    "split_feature_99999": lambda m: _first_value(m, "split_feature", "99999"),
    "leaf_value_fewer_values": _fewer_leaf_values,
    "leaf_value_nan": lambda m: _first_value(m, "leaf_value", "nan"),
    "missing_tree_block": _drop_second_tree,
    "tree_sizes_too_large": lambda m: _first_line_of(m, "tree_sizes", "tree_sizes=99999 1 1"),
    "child_cycle": lambda m: _first_value(m, "left_child", "0"),
    "max_feature_idx_wrong": lambda m: _first_line_of(m, "max_feature_idx", "max_feature_idx=9"),
    # issue 40: LightGBM's GetLoadedParam reads past a parameter line without ':' (SIGSEGV)
    "parameter_line_without_colon": lambda m: m.replace("[data: ]", "[", 1),
    "parameter_line_only_colon": lambda m: m.replace("[data: ]", ":", 1),
    "feature_info_without_colon": lambda m: _first_line_of(
        m, "feature_infos", "feature_infos=[1 [2 [3"
    ),
    "parser_section": lambda m: m.replace("end of parameters\n", "end of parameters\nparser:\n"),
}


def test_edited_model_text_with_recomputed_checksums_raises_instead_of_aborting(
    policies, launcher, tmp_path
):
    """Structurally broken LightGBM text with valid checksums: a ValueError naming the
    problem, in a child process, not SIGABRT or SIGSEGV inside LightGBM (or a silent load)."""
    failures = []
    for name, edit in EDITS.items():
        out, status = launcher.load(_edited(policies[0], tmp_path / f"{name}.json", edit))
        if status != "3" or not out.startswith("ValueError:") or "Corrupted" not in out:
            failures.append((name, status, out[-300:]))
    assert failures == []


def test_valid_model_text_passes_the_structural_check(policies):
    """The validator accepts what LightGBM writes (fitted trees, categorical splits)."""
    load_policy(policies[0])
    load_policy(policies[1])


# --- bounded, regular-file-only reads ---------------------------------------------------


def _constant_dir(tmp_path: Path) -> Path:
    return ConstantPolicy(1, 3).save(tmp_path / "p")


def test_symlinked_ensemble_to_dev_zero_is_refused_not_read(launcher, tmp_path):
    """ensemble.txt -> /dev/zero: a quick ValueError (it used to read until memory ran out;
    here the child's address space is capped and it is killed after 20 s)."""
    target = _constant_dir(tmp_path)
    (target / "ensemble.txt").unlink()
    (target / "ensemble.txt").symlink_to("/dev/zero")
    out, status = launcher.load(target)
    assert (status, out) == ("3", out) and "symbolic link" in out


def test_symlinked_files_in_policy_directory_are_refused(tmp_path):
    """Even a symlink to a valid copy is refused, for policy.json and ensemble.txt alike."""
    target = _constant_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("ensemble.txt", "policy.json"):
        (target / name).rename(elsewhere / name)
        (target / name).symlink_to(elsewhere / name)
        with pytest.raises(ValueError, match=rf"{name}: is a symbolic link"):
            load_policy(target)
        (target / name).unlink()
        (elsewhere / name).rename(target / name)
    assert load_policy(target).action == 1


def test_fifo_as_ensemble_is_refused_without_blocking(launcher, tmp_path):
    """A FIFO in place of ensemble.txt is not a regular file: refused, never opened blocking."""
    target = _constant_dir(tmp_path)
    (target / "ensemble.txt").unlink()
    os.mkfifo(target / "ensemble.txt")
    out, status = launcher.load(target)
    assert status == "3" and "not a regular file" in out


def test_huge_ensemble_without_declared_size_is_refused_unread(launcher, tmp_path):
    """An old-style manifest (no size) with a 1 GiB + 1 byte ensemble: refused from its size
    alone (MAX_POLICY_BYTES), within +512 MiB of address space (it used to be read whole)."""
    target = _constant_dir(tmp_path)
    manifest = json.loads((target / "policy.json").read_text())
    del manifest["ensemble"]["size"]
    (target / "policy.json").write_text(json.dumps(manifest))
    with open(target / "ensemble.txt", "r+b") as fh:
        fh.truncate((1 << 30) + 1)  # sparse
    out, status = launcher.load(target)
    assert status == "3" and f"more than the {1 << 30} bytes" in out


def test_ensemble_longer_than_declared_size_is_refused(tmp_path):
    """The manifest declares the ensemble's bytes; a longer file is refused unread."""
    target = _constant_dir(tmp_path)
    manifest = json.loads((target / "policy.json").read_text())
    size = (target / "ensemble.txt").stat().st_size
    assert manifest["ensemble"]["size"] == size
    with open(target / "ensemble.txt", "ab") as fh:
        fh.write(b" " * 100)
    with pytest.raises(ValueError, match=rf"longer than the {size} bytes its manifest declares"):
        load_policy(target)


def test_policy_json_larger_than_limit_is_refused(policies, tmp_path, monkeypatch):
    """The single-file form is capped at MAX_POLICY_BYTES, checked before reading."""
    monkeypatch.setattr(opboost.core.policy_loading, "MAX_POLICY_BYTES", 1000)
    with pytest.raises(ValueError, match=r"bytes, more than the 1000 bytes allowed"):
        load_policy(policies[0])


def test_manifest_n_actions_disagreeing_with_model_width_is_refused(policies, tmp_path):
    """n_actions in the manifest (not covered by the checksum) must match the model's output
    width; a 3-action model with n_actions=4 used to load and mislabel actions."""
    manifest = json.loads(policies[0].read_text())
    manifest["n_actions"] = 4
    manifest["manifest_sha256"] = manifest_digest(manifest)
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"n_actions=4 but the lightgbm_text_v1 ensemble scores 3"):
        load_policy(path)
