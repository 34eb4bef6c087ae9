"""The learned policy: an ensemble of base models with its metadata; scores, softmax and
argmax; save and load without pickle. Also the constant policy ("always play action a"), the
safe fallback of label-free model selection, saved and loaded in the same format.

File formats (both plain text):

* a single JSON file (path ending in ``.json``)::

    {"opboost_policy": 1, "n_actions": K, "metadata": {...},
     "ensemble": {"format": ..., "base_learner": ..., "sha256": ..., "text": "..."}}

* a directory holding ``policy.json`` (the same object, with ``"file": "ensemble.txt"``
  instead of ``"text"``) and ``ensemble.txt`` (the ensemble's own text format, e.g. LightGBM
  model text).

``sha256`` is the SHA-256 of the ensemble text. ``load_policy`` finds the ensemble class
through the registry by the base learner's name, checks the format and the checksum, and
raises ``ValueError`` naming the path and what is wrong for a corrupted, truncated or foreign
file.

Constant policies (:class:`ConstantPolicy`) use the same container, version 2, with the
ensemble format ``"constant_v1"``, no base learner, and as text the tiny JSON object
``{"action": a, "n_actions": K}``::

    {"opboost_policy": 2, "n_actions": 4,
     "metadata": {"action": 2, "fallback": "constant", "selected_round": 7, ...},
     "ensemble": {"format": "constant_v1", "sha256": ..., "text": "{\\"action\\": 2, ...}"}}

The metadata keeps the action and the selection record of the fit that fell back (the
learned policy's metadata with ``selected_round`` and ``fallback``). ``load_policy`` returns a
:class:`ConstantPolicy` for such a file, needs no base learner plugin for it, and rejects a
non-integer action, an action outside ``0 .. K-1``, ``n_actions < 1`` or an action that
disagrees with the manifest or the metadata. Learned ensembles are still written as version 1
(which has no constant format), so any opboost reads them; an opboost that reads only
version 1 refuses a constant policy file with "upgrade opboost".
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.learners.base import Ensemble
from opboost.objectives.base import softmax

__all__ = [
    "CONSTANT_FORMAT",
    "CONSTANT_FORMAT_VERSION",
    "FORMAT_VERSION",
    "SUPPORTED_FORMAT_VERSIONS",
    "ConstantEnsemble",
    "ConstantPolicy",
    "Policy",
    "load_policy",
]

#: Version of the policy container format written by :meth:`Policy.save` (learned ensembles).
FORMAT_VERSION = 1
#: Version written by :meth:`ConstantPolicy.save`: version 2 adds the constant ensemble format.
CONSTANT_FORMAT_VERSION = 2
#: Container versions :func:`load_policy` reads.
SUPPORTED_FORMAT_VERSIONS = (1, 2)
#: Ensemble format of a constant policy: the text ``{"action": a, "n_actions": K}``.
CONSTANT_FORMAT = "constant_v1"
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


# --- the constant policy ------------------------------------------------------------------


def _check_constant(action: Any, n_actions: Any) -> tuple[int, int]:
    """(action, n_actions) as ints; ValueError naming the bad value otherwise."""
    integral = isinstance(n_actions, numbers.Integral) and not isinstance(n_actions, bool)
    if not integral or n_actions < 1:
        raise ValueError(f"n_actions must be an integer >= 1. Got {n_actions!r}.")
    if not isinstance(action, numbers.Integral) or isinstance(action, bool):
        raise ValueError(f"action must be an integer. Got {action!r}.")
    if not 0 <= action < n_actions:
        raise ValueError(
            f"action {action!r} is out of range: it must be in 0 .. {int(n_actions) - 1} "
            f"(n_actions={int(n_actions)})."
        )
    return int(action), int(n_actions)


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


class ConstantEnsemble(Ensemble):
    """The zero-round "ensemble" of a :class:`ConstantPolicy`: score :attr:`score` on
    ``action`` and 0 on every other action. Serialised as ``{"action": a, "n_actions": K}``
    (format ``"constant_v1"``); it needs no base learner to load."""

    format: ClassVar[str] = CONSTANT_FORMAT
    #: Score of the action; softmax gives it probability 1 - O(K e^-50).
    score: ClassVar[float] = 50.0

    def __init__(self, action: int, n_actions: int) -> None:
        self.action, self.n_actions = _check_constant(action, n_actions)
        self.n_rounds = 0

    def decision_function(self, X: Any) -> np.ndarray:
        out = np.zeros((_n_rows(X), self.n_actions))
        out[:, self.action] = self.score
        return out

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """No rounds: yields nothing."""
        return iter(())

    def dumps(self) -> str:
        return json.dumps({"action": self.action, "n_actions": self.n_actions})

    @classmethod
    def loads(cls, text: str) -> ConstantEnsemble:
        try:
            obj = json.loads(text)
        except (TypeError, json.JSONDecodeError):
            obj = None
        if not isinstance(obj, dict):
            raise ValueError(
                f"not {CONSTANT_FORMAT} text: expected a JSON object such as "
                f'{{"action": 0, "n_actions": 2}}. Got {str(text)[:80]!r}.'
            )
        missing = [key for key in ("action", "n_actions") if key not in obj]
        if missing:
            raise ValueError(f"missing key {missing[0]!r} in {str(text)[:80]!r}.")
        return cls(obj["action"], obj["n_actions"])


class ConstantPolicy(Policy):
    """The policy that always plays ``action`` out of ``n_actions``: the safe fallback of a
    selection (``Booster(validation_fraction=..., safe=True)``), a full :class:`Policy`.

    Scores (m, K) are :attr:`ConstantEnsemble.score` on ``action`` and 0 elsewhere;
    ``predict_proba`` is exactly one-hot on ``action``; ``predict`` returns ``action`` for every
    row; ``n_rounds`` is 0. ``metadata`` (JSON-safe) gains ``"action"``. :meth:`save` writes
    the policy container with the ``"constant_v1"`` ensemble; :func:`load_policy` reads it.
    Raises ``ValueError`` for a non-integer action, an action outside ``0 .. n_actions-1`` or
    ``n_actions < 1``.
    """

    def __init__(
        self, action: int, n_actions: int, metadata: Mapping[str, Any] | None = None
    ) -> None:
        try:
            ensemble = ConstantEnsemble(action, n_actions)
        except ValueError as exc:
            raise ValueError(f"ConstantPolicy: {exc}") from None
        meta = {**dict(metadata or {}), "action": ensemble.action}
        super().__init__(ensemble, ensemble.n_actions, meta)

    @property
    def action(self) -> int:
        """The action played for every context."""
        return self.ensemble.action

    @property
    def score(self) -> float:
        """The score of ``action`` in :meth:`decision_function` (0 elsewhere)."""
        return self.ensemble.score

    def predict_proba(self, X: Any) -> np.ndarray:
        """Exactly one-hot on ``action``, shape (m, K)."""
        out = np.zeros((_n_rows(X), self.n_actions))
        out[:, self.action] = 1.0
        return out

    def predict(self, X: Any) -> np.ndarray:
        """``action`` for every row, shape (m,)."""
        return np.full(_n_rows(X), self.action, dtype=np.int64)

    def _manifest(self, text: str) -> dict[str, Any]:
        return {
            "opboost_policy": CONSTANT_FORMAT_VERSION,
            "n_actions": self.n_actions,
            "metadata": self.metadata,
            "ensemble": {
                "format": CONSTANT_FORMAT,
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            },
        }

    def __repr__(self) -> str:
        return f"ConstantPolicy(action={self.action}, n_actions={self.n_actions})"


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


def _supported(version: Any) -> bool:
    return type(version) is int and version in SUPPORTED_FORMAT_VERSIONS


def load_policy(path: str | os.PathLike) -> Policy:
    """Load a policy written by :meth:`Policy.save` (a ``.json`` file or a directory): a
    :class:`Policy`, or a :class:`ConstantPolicy` for a constant policy's file."""
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
    if not _supported(manifest["opboost_policy"]):
        versions = " and ".join(str(v) for v in SUPPORTED_FORMAT_VERSIONS)
        raise ValueError(
            f"{manifest_path}: policy format version {manifest['opboost_policy']!r} is not "
            f"supported (this opboost reads versions {versions}); upgrade opboost."
        )
    try:
        spec = manifest["ensemble"]
        fmt, digest = spec["format"], spec["sha256"]
        learner = None if fmt == CONSTANT_FORMAT else spec["base_learner"]
        n_actions, metadata = manifest["n_actions"], manifest["metadata"]
        if "text" in spec:
            text = spec["text"]
        else:
            text = (manifest_path.parent / Path(spec["file"]).name).read_text(encoding="utf-8")
    except KeyError as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: missing key {exc}.") from exc
    except (OSError, TypeError, ValueError) as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: {exc}.") from exc
    integral = isinstance(n_actions, numbers.Integral) and not isinstance(n_actions, bool)
    if not integral or n_actions < 1:
        raise ValueError(
            f"{manifest_path}: corrupted policy file: n_actions must be an integer >= 1. "
            f"Got {n_actions!r}."
        )
    if not isinstance(metadata, dict):
        raise ValueError(
            f"{manifest_path}: corrupted policy file: metadata must be a JSON object. "
            f"Got {metadata!r:.80}."
        )
    if hashlib.sha256(str(text).encode("utf-8")).hexdigest() != digest:
        raise ValueError(
            f"{path}: the ensemble text does not match its SHA-256 checksum; the file is "
            f"truncated or corrupted. Re-save the policy."
        )
    if fmt == CONSTANT_FORMAT:
        return _load_constant(path, text, n_actions, metadata)
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


def _load_constant(path: Path, text: str, n_actions: int, metadata: dict) -> ConstantPolicy:
    """The :class:`ConstantPolicy` of a checksummed ``constant_v1`` text, checked."""
    try:
        ensemble = ConstantEnsemble.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: could not load the constant policy: {exc}") from exc
    if ensemble.n_actions != n_actions:
        raise ValueError(
            f"{path}: corrupted policy file: the constant policy's text has "
            f"n_actions={ensemble.n_actions} but the manifest has n_actions={n_actions}."
        )
    if "action" in metadata and metadata["action"] != ensemble.action:
        raise ValueError(
            f"{path}: corrupted policy file: metadata action {metadata['action']!r} does not "
            f"match the constant policy's action {ensemble.action}."
        )
    return ConstantPolicy(ensemble.action, n_actions, metadata)
