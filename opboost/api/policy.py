"""The learned policy: an ensemble of base models with its metadata; scores, softmax and
argmax; crash-safe saving without pickle. Also the constant policy ("always play action a"),
the safe fallback of label-free model selection, saved in the same format. Reading a saved
policy back (which needs the registry to find the ensemble class) is
:func:`opboost.core.policy_loading.load_policy`.

The file formats are described in :mod:`opboost.core.policy_loading`, next to the reader.
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

from opboost.api.data.pairs import ActionSchema
from opboost.api.data.tabular_frames import action_ids_of, encode_frame
from opboost.api.files.atomic import json_params, write_atomic
from opboost.api.files.policy_save import (
    ENSEMBLE_FILE,
    ENSEMBLE_NAME_RE,
    MANIFEST_FILE,
    MAX_MANIFEST_BYTES,
    save_directory,
)
from opboost.api.learner import Ensemble
from opboost.api.numerics.arrays import one_hot
from opboost.api.numerics.softmax import softmax
from opboost.api.serving.catalogue import action_schema_of, catalogue_scores
from opboost.api.serving.exploration import ExplorationMixin
from opboost.api.serving.masks import greedy, mask_scores, serving_mask, top_k
from opboost.api.serving.tie_order import recorded_tie_order

__all__ = [
    "CONSTANT_FORMAT",
    "CONSTANT_FORMAT_VERSION",
    "ENSEMBLE_FILE",
    "ENSEMBLE_NAME_RE",
    "FORMAT_VERSION",
    "MANIFEST_DIGEST",
    "MANIFEST_FILE",
    "MAX_MANIFEST_BYTES",
    "MAX_POLICY_BYTES",
    "SUPPORTED_FORMAT_VERSIONS",
    "ConstantEnsemble",
    "ConstantPolicy",
    "Policy",
    "manifest_digest",
]

#: Version of the policy container format written by :meth:`Policy.save` (learned ensembles).
FORMAT_VERSION = 1
#: Version written by :meth:`ConstantPolicy.save`: version 2 adds the constant ensemble format.
CONSTANT_FORMAT_VERSION = 2
#: Container versions :func:`load_policy` reads.
SUPPORTED_FORMAT_VERSIONS = (1, 2)
#: Ensemble format of a constant policy: the text ``{"action": a, "n_actions": K}``.
CONSTANT_FORMAT = "constant_v1"
#: Largest policy ``.json`` file, or ensemble file, :func:`load_policy` reads (1 GiB).
MAX_POLICY_BYTES = 1 << 30
#: Manifest key of :func:`manifest_digest`; :func:`load_policy` refuses a manifest without it.
MANIFEST_DIGEST = "manifest_sha256"
# Ensemble fields the digest leaves out: the text has its own SHA-256, and a save in place
# switches the file name between the versioned one and ensemble.txt.
_UNDIGESTED = ("text", "file", "size")


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """SHA-256 of everything in a policy manifest that changes behaviour: its canonical JSON
    (sorted keys, no spaces, ASCII) without :data:`MANIFEST_DIGEST` and the ensemble's
    ``text``, ``file`` and ``size``; that is ``n_actions``, the metadata (categories, action
    ids, schemas) and the ensemble's format, base learner and checksum."""
    body = {key: value for key, value in manifest.items() if key != MANIFEST_DIGEST}
    ensemble = body.get("ensemble")
    if isinstance(ensemble, Mapping):
        body["ensemble"] = {k: v for k, v in ensemble.items() if k not in _UNDIGESTED}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _with_digest(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as JSON will read it back (string keys, lists), with its digest."""
    manifest = json.loads(json.dumps(manifest, allow_nan=False))
    manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
    return manifest


class Policy(ExplorationMixin):
    """A fitted ensemble policy over ``n_actions`` actions.

    ``metadata`` (JSON-safe) records at least ``base_learner`` (registry name); the booster adds
    objective, estimator, base learner parameters, opboost version and n_rounds, and ``schema`` for
    logs from a DataFrame (``opboost.api.data.tabular_frames``): a DataFrame ``X`` is then
    encoded with it, and ``predict(X, return_ids=True)`` gives the action ids.

    Deployed with exploration: ``sample(X, epsilon=..., temperature=..., random_state=...)``
    gives actions and their exact propensities, ``action_distribution`` the whole (m, K)
    distribution, ``sample_slate`` slates with per-position propensities
    (``opboost.api.serving.exploration``).
    """

    def __init__(
        self, ensemble: Ensemble, n_actions: int, metadata: Mapping[str, Any] | None = None
    ):
        self.ensemble = ensemble
        self.n_actions = int(n_actions)
        self.metadata = json_params(dict(metadata or {}))

    @property
    def n_rounds(self) -> int:
        return int(self.ensemble.n_rounds)

    @property
    def n_features_in_(self) -> int:
        """The number of context columns of the fit (AttributeError if not recorded)."""
        if "n_features" not in self.metadata:
            raise AttributeError(f"This {type(self).__name__} records no n_features_in_.")
        return int(self.metadata["n_features"])

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The context column names of the fit, when it knew them (a DataFrame's, a schema's
        or ``fit(..., feature_names=...)``), as scikit-learn's attribute of the same name;
        AttributeError otherwise. A DataFrame ``X`` is then matched by column name."""
        names = self.metadata.get("feature_names")
        if names is None:
            raise AttributeError(
                f"This {type(self).__name__} has no feature_names_in_: it was fitted without "
                f"column names."
            )
        return np.asarray(names, dtype=object)

    @property
    def tie_order(self) -> np.ndarray | None:
        """The actions, preferred first, that equal scores go to in ``predict``, ``rank`` and
        epsilon-greedy ``sample`` (metadata ``"tie_order"``, shape (n_actions,); a Booster
        records its logs' actions by their value as constant policies, so where the ensemble
        cannot tell actions apart it plays the better logged one, whatever the id order); None:
        equal scores go to the lower index."""
        return recorded_tie_order(self.metadata, self.n_actions)

    @property
    def action_schema(self) -> ActionSchema | None:
        """The item-feature schema of a policy fitted on candidate pairs (it then scores a
        catalogue given at prediction time: ``action_features=``), else None."""
        return action_schema_of(self.metadata)

    def decision_function(
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """Ensemble scores F(X), shape (m, K); with ``candidates`` (an (m, K) boolean mask,
        dense or sparse: ``opboost.api.serving.masks``) -inf outside each row's candidates.

        A policy fitted on action features
        ([`action_schema`][opboost.api.policy.Policy.action_schema]) scores the catalogue
        ``action_features`` (K', d_a), new items included: shape (m, K'), and ``candidates`` is then
        (m, K') (``opboost.api.serving.catalogue``)."""
        owner = f"{type(self).__name__}.decision_function"
        X = encode_frame(self.metadata, X, owner)
        schema = self.action_schema
        if schema is not None:
            return catalogue_scores(self.ensemble, schema, X, action_features, candidates, owner)
        if action_features is not None:
            raise ValueError(
                f"{owner}: this policy was fitted on {self.n_actions} fixed actions, not on "
                f"action features; drop action_features= (or fit on logs with "
                f"action_features to score new items)."
            )
        scores = self.ensemble.decision_function(X)
        if candidates is None:
            return scores
        return mask_scores(scores, serving_mask(candidates, scores.shape, owner))

    def predict_proba(
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """Softmax policy pi(a | x), shape (m, K); rows sum to 1 (over the candidates only,
        when given)."""
        return softmax(
            self.decision_function(X, candidates=candidates, action_features=action_features)
        )

    def predict(
        self,
        X: Any,
        *,
        candidates: Any = None,
        return_ids: bool = False,
        action_features: Any = None,
    ) -> np.ndarray:
        """Argmax policy: the highest-scoring action (candidate, when given) per row, shape
        (m,), equal scores broken by [`tie_order`][opboost.api.policy.Policy.tie_order]; with
        ``return_ids`` the action ids of the schema's catalogue."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        actions = greedy(scores, self.tie_order)
        return action_ids_of(self.metadata, actions) if return_ids else actions

    def rank(
        self, X: Any, k: int, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """A slate per row: the k highest-scoring distinct actions (candidates, when given),
        best first (equal scores as ``predict`` breaks them), shape (m, k) int64; -1 pads a row
        with fewer than k candidates."""
        scores = self.decision_function(X, candidates=candidates, action_features=action_features)
        return top_k(scores, k, self.tie_order)

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
        directory (created if needed) with ``policy.json`` and ``ensemble.txt``.

        The save is atomic: a process killed at any instant leaves at ``path`` the complete old
        policy or the complete new one, and concurrent saves to the same path never tear a file (see
        ``opboost.api.files.policy_save.save_directory`` for the directory protocol)."""
        path = Path(path)
        text = self.ensemble.dumps()
        manifest = self._manifest(text)
        data = text.encode("utf-8")
        manifest["ensemble"]["size"] = len(data)
        manifest = _with_digest(manifest)
        if path.suffix == ".json":
            manifest["ensemble"]["text"] = text
            write_atomic(path, json.dumps(manifest, indent=1, allow_nan=False))
            return path
        save_directory(path, data, manifest)
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
    selection (``Booster(validation_fraction=..., safe=True)``), a full
    [`Policy`][opboost.api.policy.Policy].

    Scores (m, K) are ``ConstantEnsemble.score`` on ``action`` and 0 elsewhere;
    ``predict_proba`` is exactly one-hot on ``action``; ``predict`` returns ``action`` for every
    row; ``n_rounds`` is 0. ``metadata`` (JSON-safe) gains ``"action"``.
    [`save`][opboost.api.policy.Policy.save] writes the policy container with the ``"constant_v1"``
    ensemble; [`load_policy`][opboost.core.policy_loading.load_policy] reads it. Raises
    ``ValueError`` for a non-integer action, an action outside ``0 .. n_actions-1`` or
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
        """The score of ``action`` in
        [`decision_function`][opboost.api.policy.Policy.decision_function] (0 elsewhere)."""
        return self.ensemble.score

    def predict_proba(
        self, X: Any, *, candidates: Any = None, action_features: Any = None
    ) -> np.ndarray:
        """Exactly one-hot on ``action``, shape (m, K) (with ``candidates``: on ``action``
        where it is a candidate, else on the row's first candidate)."""
        if candidates is not None or action_features is not None:  # the latter raises
            served = self.predict(X, candidates=candidates, action_features=action_features)
            return one_hot(served, self.n_actions)
        out = np.zeros((_n_rows(X), self.n_actions))
        out[:, self.action] = 1.0
        return out

    def predict(
        self,
        X: Any,
        *,
        candidates: Any = None,
        return_ids: bool = False,
        action_features: Any = None,
    ) -> np.ndarray:
        """``action`` (its id with ``return_ids``) for every row, shape (m,); with
        ``candidates``, the row's first candidate where ``action`` is not one."""
        if candidates is not None or action_features is not None:  # the latter raises
            return super().predict(
                X, candidates=candidates, return_ids=return_ids, action_features=action_features
            )
        actions = np.full(_n_rows(X), self.action, dtype=np.int64)
        return action_ids_of(self.metadata, actions) if return_ids else actions

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
