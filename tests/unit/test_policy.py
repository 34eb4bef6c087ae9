"""Policy save/load: JSON file and directory, bit-identical scores, clear errors; the
constant policy (the safe fallback of model selection) in the same format."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from action_only_data import action_only_log

from opboost import Booster, LoggedBandit, load_policy
from opboost.api.policy import (
    CONSTANT_FORMAT,
    CONSTANT_FORMAT_VERSION,
    ConstantPolicy,
    Policy,
    manifest_digest,
)
from opboost.compose.trial.labelled_run import staged_rewards


@pytest.fixture(scope="module")
def fitted():
    """A small fitted booster and contexts to score."""
    rng = np.random.default_rng(2)
    n = 200
    data = LoggedBandit(
        rng.normal(size=(n, 4)), rng.integers(0, 4, n), np.full(n, 0.25), rng.random(n), 4
    )
    booster = Booster(base_learner="sklearn_tree", n_rounds=6, random_state=0).fit(data)
    return booster, data.contexts


@pytest.mark.parametrize(
    "name",
    [pytest.param("policy.json", id="json-file"), pytest.param("policy_dir", id="directory")],
)
def test_round_trip_is_bit_identical(fitted, tmp_path, name):
    """Scores, probabilities and metadata survive save/load exactly."""
    booster, X = fitted
    booster.policy_.save(tmp_path / name)
    loaded = load_policy(tmp_path / name)
    np.testing.assert_array_equal(loaded.decision_function(X), booster.decision_function(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), booster.predict_proba(X))
    assert loaded.metadata == booster.policy_.metadata
    assert loaded.metadata["objective"] == "bopl_s"
    assert loaded.metadata["base_learner"] == "sklearn_tree"
    assert loaded.metadata["n_rounds"] == 6 and "opboost_version" in loaded.metadata


def test_directory_layout(fitted, tmp_path):
    """A directory holds policy.json (metadata) and ensemble.txt (the model text)."""
    fitted[0].save(tmp_path / "p")
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["ensemble.txt", "policy.json"]
    manifest = json.loads((tmp_path / "p" / "policy.json").read_text())
    assert manifest["ensemble"]["format"] == "opboost-sklearn-trees"
    assert manifest["ensemble"]["base_learner"] == "sklearn_tree"


def test_truncated_file(fitted, tmp_path):
    """A truncated JSON file names the path and says it is truncated or corrupted."""
    path = tmp_path / "p.json"
    fitted[0].save(path)
    path.write_text(path.read_text()[:200])
    with pytest.raises(
        ValueError,
        match=r"p\.json: not an opboost policy file: invalid JSON .*"
        r"truncated or corrupted",
    ):
        load_policy(path)


def test_corrupted_ensemble_text(fitted, tmp_path):
    """An edited ensemble.txt fails its checksum."""
    fitted[0].save(tmp_path / "p")
    model = tmp_path / "p" / "ensemble.txt"
    model.write_text(model.read_text().replace("0.", "1.", 1))
    with pytest.raises(ValueError, match=r"does not match its SHA-256 checksum"):
        load_policy(tmp_path / "p")


def test_foreign_json(tmp_path):
    """A JSON file not written by Policy.save is rejected as foreign."""
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(
        ValueError,
        match=r"other\.json: not an opboost policy file \(no "
        r"'opboost_policy' key\)",
    ):
        load_policy(path)


def test_binary_garbage(tmp_path):
    """Binary content (e.g. a pickle) is rejected without being unpickled."""
    path = tmp_path / "model.pkl"
    path.write_bytes(b"\x80\x04\x95\xff\x00garbage")
    with pytest.raises(ValueError, match=r"model\.pkl: not an opboost policy file"):
        load_policy(path)


def test_missing_key(fitted, tmp_path):
    """A manifest without its ensemble entry names the missing key."""
    path = tmp_path / "p.json"
    fitted[0].save(path)
    manifest = json.loads(path.read_text())
    del manifest["ensemble"]
    path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"corrupted policy file: missing key 'ensemble'"):
        load_policy(path)


def test_unknown_base_learner(fitted, tmp_path):
    """A policy from an uninstalled base learner names it and the known ones."""
    path = tmp_path / "p.json"
    fitted[0].save(path)
    manifest = json.loads(path.read_text())
    manifest["ensemble"]["base_learner"] = "fancy_tree"
    manifest["manifest_sha256"] = manifest_digest(manifest)  # as the other installation's
    path.write_text(json.dumps(manifest))
    with pytest.raises(
        ValueError,
        match=r"trained with base learner 'fancy_tree': Unknown "
        r"base_learner 'fancy_tree'. Known: .*sklearn_tree",
    ):
        load_policy(path)


def test_future_format_version(fitted, tmp_path):
    """A newer container version asks to upgrade."""
    path = tmp_path / "p.json"
    fitted[0].save(path)
    manifest = json.loads(path.read_text())
    manifest["opboost_policy"] = 99
    path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"format version 99 is not supported.*upgrade"):
        load_policy(path)


def test_directory_without_manifest(tmp_path):
    """An empty directory is not a policy."""
    with pytest.raises(
        ValueError,
        match=r"not an opboost policy directory: it has no "
        r"policy\.json",
    ):
        load_policy(tmp_path)


def test_missing_path(tmp_path):
    """A path that does not exist raises FileNotFoundError naming it."""
    with pytest.raises(FileNotFoundError, match=r"nope\.json: no such policy"):
        load_policy(tmp_path / "nope.json")


def test_save_requires_base_learner_name(fitted, tmp_path):
    """A hand-built Policy without metadata['base_learner'] cannot be saved."""
    policy = Policy(fitted[0].policy_.ensemble, 4)
    with pytest.raises(ValueError, match=r"metadata lacks 'base_learner'"):
        policy.save(tmp_path / "p.json")


def test_predict_is_argmax(fitted):
    """Policy.predict is the argmax of its scores."""
    booster, X = fitted
    policy = booster.policy_
    np.testing.assert_array_equal(policy.predict(X), policy.decision_function(X).argmax(1))
    assert "n_rounds=6" in repr(policy)


# --- the constant policy (the safe fallback) ------------------------------------------------


@pytest.fixture(scope="module")
def fallback():
    """A Booster(safe=True) on logs where only the action matters: it falls back to action 2."""
    booster = Booster(
        n_rounds=10,
        base_learner_params={"num_threads": 1, "num_leaves": 8},
        validation_fraction=0.3,
        safe=True,
        random_state=0,
    ).fit(action_only_log())
    assert booster.fallback_ == "constant"
    return booster, np.random.default_rng(5).normal(size=(9, 3))


@pytest.mark.parametrize(
    "name",
    [pytest.param("fallback.json", id="json-file"), pytest.param("fallback", id="directory")],
)
def test_constant_policy_round_trip(fallback, tmp_path, name):
    """Booster.save of a fallback -> load_policy gives the same ConstantPolicy exactly."""
    booster, X = fallback
    assert booster.save(tmp_path / name) == tmp_path / name
    loaded = load_policy(tmp_path / name)
    assert isinstance(loaded, ConstantPolicy) and isinstance(loaded, Policy)
    assert (loaded.action, loaded.n_actions, loaded.n_rounds) == (2, 4, 0)
    np.testing.assert_array_equal(loaded.predict(X), booster.predict(X))
    np.testing.assert_array_equal(loaded.predict(X), np.full(9, 2))
    np.testing.assert_array_equal(loaded.predict_proba(X), np.eye(4)[np.full(9, 2)])
    np.testing.assert_array_equal(loaded.decision_function(X), booster.decision_function(X))
    assert loaded.metadata == booster.policy_.metadata
    assert loaded.metadata["action"] == 2 and loaded.metadata["fallback"] == "constant"
    assert loaded.metadata["selected_round"] == booster.best_round_
    assert loaded.metadata["base_learner"] == "lightgbm_tree"
    assert repr(loaded) == "ConstantPolicy(action=2, n_actions=4)"
    # and once more: a loaded constant policy saves again to the same content
    again = load_policy(loaded.save(tmp_path / "again.json"))
    assert again.metadata == loaded.metadata and again.action == 2


def test_constant_policy_file_layout(fallback, tmp_path):
    """The container of Policy.save, version 2, ensemble format constant_v1, no base learner."""
    fallback[0].save(tmp_path / "p")
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["ensemble.txt", "policy.json"]
    manifest = json.loads((tmp_path / "p" / "policy.json").read_text())
    assert manifest["opboost_policy"] == CONSTANT_FORMAT_VERSION == 2
    assert manifest["n_actions"] == 4
    assert manifest["ensemble"]["format"] == CONSTANT_FORMAT == "constant_v1"
    assert "base_learner" not in manifest["ensemble"]
    assert manifest["ensemble"]["file"] == "ensemble.txt"
    text = (tmp_path / "p" / "ensemble.txt").read_text()
    assert json.loads(text) == {"action": 2, "n_actions": 4}
    assert manifest["ensemble"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    # learned ensembles keep container version 1, which every opboost reads
    Booster(base_learner="sklearn_tree", n_rounds=1).fit(action_only_log()).save(tmp_path / "q")
    assert json.loads((tmp_path / "q" / "policy.json").read_text())["opboost_policy"] == 1


def test_constant_policy_interface():
    """Built directly: one-hot probabilities, no rounds, and studies' staged rewards work."""
    policy = ConstantPolicy(np.int64(1), 3, {"note": "x"})
    X = np.zeros((4, 2))
    assert policy.metadata == {"note": "x", "action": 1}
    np.testing.assert_array_equal(policy.predict_proba(X), np.eye(3)[[1, 1, 1, 1]])
    np.testing.assert_array_equal(policy.decision_function(X).argmax(1), [1, 1, 1, 1])
    assert policy.predict(X).dtype == np.int64 and policy.n_rounds == 0
    # no rounds: round 0 is the policy itself (action 1, right on rows 1 and 3)
    assert staged_rewards(policy, X, np.array([0, 1, 2, 1]), "multiclass") == [0.5]


def _write_constant(path, text, *, n_actions=4, metadata=None):
    """A constant policy file with the given ensemble text and matching checksums."""
    manifest = {
        "opboost_policy": 2,
        "n_actions": n_actions,
        "metadata": {} if metadata is None else metadata,
        "ensemble": {
            "format": "constant_v1",
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "text": text,
        },
    }
    manifest["manifest_sha256"] = manifest_digest(manifest)
    path.write_text(json.dumps(manifest))
    return path


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        (
            '{"action": 7, "n_actions": 4}',
            {},
            r"p\.json: could not load the constant policy: action 7 is out of range: it must "
            r"be in 0 \.\. 3 \(n_actions=4\)\.",
        ),
        (
            '{"action": -1, "n_actions": 4}',
            {},
            r"p\.json: could not load the constant policy: action -1 is out of range",
        ),
        (
            '{"action": 1.5, "n_actions": 4}',
            {},
            r"p\.json: could not load the constant policy: action must be an integer\. "
            r"Got 1\.5\.",
        ),
        (
            '{"action": "2", "n_actions": 4}',
            {},
            r"p\.json: could not load the constant policy: action must be an integer\. "
            r"Got '2'\.",
        ),
        (
            '{"action": true, "n_actions": 4}',
            {},
            r"could not load the constant policy: action must be an integer\. Got True\.",
        ),
        (
            '{"action": 0, "n_actions": 0}',
            {"n_actions": 0},
            r"p\.json: corrupted policy file: n_actions must be an integer >= 1\. Got 0\.",
        ),
        (
            '{"action": 0, "n_actions": 4}',
            {"n_actions": "4"},
            r"p\.json: corrupted policy file: n_actions must be an integer >= 1\. Got '4'\.",
        ),
        (
            '{"action": 0, "n_actions": 0}',
            {},
            r"could not load the constant policy: n_actions must be an integer >= 1\. Got 0\.",
        ),
        (
            '{"action": 2, "n_actions": 3}',
            {},
            r"p\.json: corrupted policy file: the constant policy's text has n_actions=3 but "
            r"the manifest has n_actions=4\.",
        ),
        (
            '{"action": 2, "n_actions": 4}',
            {"metadata": {"action": 1}},
            r"p\.json: corrupted policy file: metadata action 1 does not match the constant "
            r"policy's action 2\.",
        ),
        (
            '{"n_actions": 4}',
            {},
            r"p\.json: could not load the constant policy: missing key 'action'",
        ),
        (
            "[2]",
            {},
            r"p\.json: could not load the constant policy: not constant_v1 text: expected a "
            r"JSON object",
        ),
    ],
    ids=[
        "action-too-large",
        "action-negative",
        "action-float",
        "action-string",
        "action-bool",
        "no-actions",
        "n-actions-string",
        "text-no-actions",
        "n-actions-mismatch",
        "metadata-mismatch",
        "no-action",
        "not-an-object",
    ],
)
def test_bad_constant_policy_files(tmp_path, text, kwargs, message):
    """Checksummed but bad values are rejected with the path and the bad value."""
    path = _write_constant(tmp_path / "p.json", text, **kwargs)
    with pytest.raises(ValueError, match=message):
        load_policy(path)


def test_edited_constant_action_fails_checksum(fallback, tmp_path):
    """Editing the action in ensemble.txt (without re-saving) fails the SHA-256 check."""
    fallback[0].save(tmp_path / "p")
    text = tmp_path / "p" / "ensemble.txt"
    text.write_text(text.read_text().replace('"action": 2', '"action": 1'))
    with pytest.raises(ValueError, match=r"p: the ensemble text does not match its SHA-256"):
        load_policy(tmp_path / "p")


@pytest.mark.parametrize(
    ("action", "n_actions", "message"),
    [
        (3, 3, r"ConstantPolicy: action 3 is out of range: it must be in 0 \.\. 2"),
        (0.0, 3, r"ConstantPolicy: action must be an integer\. Got 0\.0\."),
        (0, 0, r"ConstantPolicy: n_actions must be an integer >= 1\. Got 0\."),
    ],
)
def test_constant_policy_rejects_bad_arguments(action, n_actions, message):
    with pytest.raises(ValueError, match=message):
        ConstantPolicy(action, n_actions)
