"""Policy save/load: JSON file and directory, bit-identical scores, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from opboost import Booster, LoggedBandit, load_policy
from opboost.policy import Policy


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
