"""The learned policy: an ensemble of base models with its metadata; scores, softmax and
argmax; save and load without pickle.

File formats (both plain text):

* a single JSON file (path ending in ``.json``)::

    {"opboost_policy": 1, "metadata": {...},
     "ensemble": {"format": ..., "base_learner": ..., "sha256": ..., "text": "..."}}

* a directory holding ``policy.json`` (the same object, with ``"file": "ensemble.txt"``
  instead of ``"text"``) and ``ensemble.txt`` (the ensemble's own text format, e.g. LightGBM
  model text).

``load_policy`` finds the ensemble class through the registry by the base learner's name,
checks the format and the SHA-256 of the ensemble text, and raises ``ValueError`` naming the
path and what is wrong for a corrupted, truncated or foreign file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from opboost.learners.base import Ensemble
from opboost.objectives.base import softmax

__all__ = ["FORMAT_VERSION", "Policy", "load_policy"]

#: Version of the policy container format written by :meth:`Policy.save`.
FORMAT_VERSION = 1
_MANIFEST = "policy.json"
_ENSEMBLE_FILE = "ensemble.txt"


def _json_safe(value: Any) -> Any:
    """Parameters as JSON: scalars, lists and dicts as they are, anything else as its repr."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return repr(value)


class Policy:
    """A fitted ensemble policy over ``n_actions`` actions.

    ``metadata`` (JSON-safe) records at least ``base_learner`` (registry name); the booster
    adds objective, estimator, base learner parameters, opboost version and n_rounds.
    """

    def __init__(
        self, ensemble: Ensemble, n_actions: int, metadata: Mapping[str, Any] | None = None
    ):
        self.ensemble = ensemble
        self.n_actions = int(n_actions)
        self.metadata = _json_safe(dict(metadata or {}))

    @property
    def n_rounds(self) -> int:
        return int(self.ensemble.n_rounds)

    def decision_function(self, X: Any) -> np.ndarray:
        """Ensemble scores F(X), shape (m, K)."""
        return self.ensemble.decision_function(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax policy pi(a | x), shape (m, K); rows sum to 1."""
        return softmax(self.decision_function(X))

    def predict(self, X: Any) -> np.ndarray:
        """Argmax policy: the highest-scoring action per row, shape (m,)."""
        return np.argmax(self.decision_function(X), axis=1)

    def __repr__(self) -> str:
        meta = self.metadata
        return (
            f"Policy(n_actions={self.n_actions}, n_rounds={self.n_rounds}, "
            f"objective={meta.get('objective')!r}, base_learner={meta.get('base_learner')!r})"
        )

    # --- persistence ----------------------------------------------------------------------

    def _manifest(self, text: str) -> dict[str, Any]:
        base_learner = self.metadata.get("base_learner")
        if not base_learner:
            raise ValueError(
                "Policy.save: metadata lacks 'base_learner', the registry name load_policy "
                "uses to find the ensemble class; pass metadata={'base_learner': NAME}."
            )
        return {
            "opboost_policy": FORMAT_VERSION,
            "n_actions": self.n_actions,
            "metadata": self.metadata,
            "ensemble": {
                "format": self.ensemble.format,
                "base_learner": base_learner,
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            },
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the policy to ``path``: one JSON file if it ends in ``.json``, else a
        directory (created if needed) with ``policy.json`` and ``ensemble.txt``."""
        path = Path(path)
        text = self.ensemble.dumps()
        manifest = self._manifest(text)
        if path.suffix == ".json":
            manifest["ensemble"]["text"] = text
            _write_text(path, json.dumps(manifest, indent=1, allow_nan=False))
            return path
        path.mkdir(parents=True, exist_ok=True)
        manifest["ensemble"]["file"] = _ENSEMBLE_FILE
        _write_text(path / _ENSEMBLE_FILE, text)
        _write_text(path / _MANIFEST, json.dumps(manifest, indent=1, allow_nan=False))
        return path


def _write_text(path: Path, text: str) -> None:
    """Write atomically: a killed process leaves the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not an opboost policy {what}: not UTF-8 text.") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path}: not an opboost policy {what}: invalid JSON ({exc}); the file is "
            f"truncated or corrupted."
        ) from exc


def load_policy(path: str | os.PathLike) -> Policy:
    """Load a policy written by :meth:`Policy.save` (a ``.json`` file or a directory)."""
    from opboost.registry import get_registry

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such policy file or directory.")
    manifest_path = path / _MANIFEST if path.is_dir() else path
    if not manifest_path.is_file():
        raise ValueError(f"{path}: not an opboost policy directory: it has no {_MANIFEST}.")
    manifest = _read_json(manifest_path, "file")
    if not isinstance(manifest, dict) or "opboost_policy" not in manifest:
        raise ValueError(
            f"{manifest_path}: not an opboost policy file (no 'opboost_policy' key); it was "
            f"not written by Policy.save."
        )
    if manifest["opboost_policy"] != FORMAT_VERSION:
        raise ValueError(
            f"{manifest_path}: policy format version {manifest['opboost_policy']!r} is not "
            f"supported (this opboost reads version {FORMAT_VERSION}); upgrade opboost."
        )
    try:
        spec = manifest["ensemble"]
        fmt, learner, digest = spec["format"], spec["base_learner"], spec["sha256"]
        n_actions, metadata = int(manifest["n_actions"]), manifest["metadata"]
        if "text" in spec:
            text = spec["text"]
        else:
            text = (manifest_path.parent / Path(spec["file"]).name).read_text(encoding="utf-8")
    except KeyError as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: missing key {exc}.") from exc
    except (OSError, TypeError, ValueError) as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: {exc}.") from exc
    if hashlib.sha256(str(text).encode("utf-8")).hexdigest() != digest:
        raise ValueError(
            f"{path}: the ensemble text does not match its SHA-256 checksum; the file is "
            f"truncated or corrupted. Re-save the policy."
        )
    try:
        ensemble_class = get_registry().get("base_learner", learner).ensemble_class
    except ValueError as exc:
        raise ValueError(
            f"{path}: the policy was trained with base learner {learner!r}: {exc}"
        ) from exc
    if ensemble_class.format != fmt:
        raise ValueError(
            f"{path}: ensemble format {fmt!r} does not match base learner {learner!r}, "
            f"which reads {ensemble_class.format!r}."
        )
    try:
        ensemble = ensemble_class.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: could not load the {fmt} ensemble: {exc}") from exc
    return Policy(ensemble, n_actions, metadata)
