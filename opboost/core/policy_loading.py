"""Loading saved policies: bounded, validated reads that never execute code from the file.

:func:`load_policy` reads what :meth:`opboost.api.policy.Policy.save` writes (the formats
are below), finds the ensemble class through the registry by the
base learner's name, checks the format and the checksum, and raises ``ValueError`` naming
the path and what is wrong for a corrupted, truncated or foreign file. The policy classes
live in :mod:`opboost.api.policy`.

File formats (both plain text):

* a single JSON file (path ending in ``.json``)::

    {"opboost_policy": 1, "n_actions": K, "metadata": {...},
     "ensemble": {"format": ..., "base_learner": ..., "sha256": ..., "text": "..."},
     "manifest_sha256": ...}

* a directory holding ``policy.json`` (the same object, with ``"file": "ensemble.txt"``
  instead of ``"text"``) and ``ensemble.txt`` (the ensemble's own text format, e.g. LightGBM
  model text).

``sha256`` is the SHA-256 of the ensemble text; ``manifest_sha256`` (top level) the SHA-256
of the manifest's canonical JSON without it and without the ensemble's text, file and size
(:func:`opboost.api.policy.manifest_digest`): it covers every byte that changes behaviour
besides the ensemble text (``n_actions``, the metadata with its categories and action ids).
A manifest without it is refused (every file Policy.save writes has it). The metadata's
table schema is checked against the model (columns, one id per action), and the model against
the metadata (:func:`opboost.api.files.model_consistency.check_model_consistency`: its context
and item columns, the action schema a model of pairs needs, the category codes its splits use).

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
from pathlib import Path
from typing import Any

from opboost.api.files.atomic import TooLarge, read_regular
from opboost.api.files.model_consistency import check_model_consistency
from opboost.api.files.saved_schema import check_saved_schema
from opboost.api.policy import (
    CONSTANT_FORMAT,
    ENSEMBLE_NAME_RE,
    MANIFEST_DIGEST,
    MANIFEST_FILE,
    MAX_MANIFEST_BYTES,
    MAX_POLICY_BYTES,
    SUPPORTED_FORMAT_VERSIONS,
    ConstantEnsemble,
    ConstantPolicy,
    Policy,
    manifest_digest,
)
from opboost.api.serving.catalogue import action_schema_of
from opboost.api.serving.tie_order import recorded_tie_order

__all__ = ["load_policy"]

# --- reading -------------------------------------------------------------------------------


def _read_json(path: Path, what: str, limit: int, *, follow: bool = False) -> Any:
    return _parse_json(read_regular(path, limit, follow=follow), path, what)


def _parse_json(raw: bytes, path: Path, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not an opboost policy {what}: not UTF-8 text.") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path}: not an opboost policy {what}: invalid JSON ({exc}); the file is "
            f"truncated or corrupted."
        ) from exc


def _supported(version: Any) -> bool:
    return type(version) is int and version in SUPPORTED_FORMAT_VERSIONS


class _Torn(ValueError):
    """The ensemble file disagrees with the manifest (missing, other size, other checksum):
    corruption, or a concurrent save replaced it between the two reads."""


_LOAD_ATTEMPTS = 5  # re-reads when a concurrent save replaced the files mid-load


def _read_ensemble_file(manifest_path: Path, spec: dict) -> str:
    """The ensemble text of the directory form: a regular file (no symbolic link) named by
    the manifest, of exactly the declared ``size`` (at most :data:`MAX_POLICY_BYTES` when the
    manifest, written by an older opboost, declares none)."""
    name, declared = spec["file"], spec.get("size")
    if not isinstance(name, str) or not ENSEMBLE_NAME_RE.match(name):
        raise ValueError(f"the ensemble file name {name!r} is not allowed (ensemble.txt)")
    if declared is not None and (
        not isinstance(declared, int) or isinstance(declared, bool) or declared < 0
    ):
        raise ValueError(f"the ensemble size must be an integer >= 0. Got {declared!r}")
    if declared is not None and declared > MAX_POLICY_BYTES:
        raise ValueError(
            f"the ensemble declares {declared} bytes, more than MAX_POLICY_BYTES={MAX_POLICY_BYTES}"
        )
    file = manifest_path.parent / name
    try:
        raw = read_regular(file, MAX_POLICY_BYTES if declared is None else declared)
    except FileNotFoundError as exc:
        raise _Torn(f"{file}: missing ({exc.strerror})") from exc
    except TooLarge as exc:
        if declared is None:
            raise
        raise _Torn(f"{file}: longer than the {declared} bytes its manifest declares") from exc
    if declared is not None and len(raw) != declared:
        raise _Torn(
            f"{file}: {len(raw)} bytes but its manifest declares {declared}; the file is "
            f"truncated or replaced"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not UTF-8 text") from exc


def _read_policy(path: Path) -> tuple[Path, dict, str]:
    """(manifest path, manifest, ensemble text) of a policy file or directory, checked
    against the manifest's size and SHA-256; a directory is re-read when a concurrent save
    replaced its files between the reads of the manifest and the ensemble."""
    if not path.is_dir():
        manifest = _read_json(path, "file", MAX_POLICY_BYTES, follow=True)
        return path, manifest, _manifest_text(path, path, manifest, None)
    manifest_path = path / MANIFEST_FILE
    if not os.path.lexists(manifest_path):
        raise ValueError(f"{path}: not an opboost policy directory: it has no {MANIFEST_FILE}.")
    for attempt in range(_LOAD_ATTEMPTS):
        before = read_regular(manifest_path, MAX_MANIFEST_BYTES)
        manifest = _parse_json(before, manifest_path, "file")
        try:
            return manifest_path, manifest, _manifest_text(path, manifest_path, manifest, before)
        except _Torn:
            try:
                changed = read_regular(manifest_path, MAX_MANIFEST_BYTES) != before
            except (OSError, ValueError):
                changed = True
            if not changed or attempt == _LOAD_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _manifest_text(path: Path, manifest_path: Path, manifest: Any, raw: bytes | None) -> str:
    """The checksummed ensemble text a manifest describes (inline or in its file)."""
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
        digest = spec["sha256"]
        if "text" in spec:
            text = spec["text"]
            size = spec.get("size")
            if size is not None and (
                not isinstance(text, str) or len(text.encode("utf-8")) != size
            ):
                raise ValueError(f"the ensemble text does not have the declared {size!r} bytes")
        else:
            text = _read_ensemble_file(manifest_path, spec)
    except KeyError as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: missing key {exc}.") from exc
    except _Torn as exc:
        raise _Torn(f"{manifest_path}: corrupted policy file: {exc}.") from exc
    except (OSError, TypeError, ValueError) as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: {exc}.") from exc
    if hashlib.sha256(str(text).encode("utf-8")).hexdigest() != digest:
        raise _Torn(
            f"{path}: the ensemble text does not match its SHA-256 checksum; the file is "
            f"truncated or corrupted. Re-save the policy."
        )
    return str(text)


def load_policy(path: str | os.PathLike) -> Policy:
    """Load a policy written by [`Policy.save`][opboost.api.policy.Policy.save] (a ``.json`` file or
    a directory): a [`Policy`][opboost.api.policy.Policy], or a
    [`ConstantPolicy`][opboost.api.policy.ConstantPolicy] for a constant policy's file.

    Reads only regular files (inside a directory: no symbolic links), at most
    ``MAX_POLICY_BYTES`` (``MAX_MANIFEST_BYTES`` for a directory's ``policy.json``)
    and exactly the ensemble size the manifest declares; checks the SHA-256s (a manifest
    without ``manifest_sha256`` is refused), the format, that the ensemble scores
    ``n_actions`` actions and that the model agrees with the metadata (columns, action schema,
    category codes). Raises ``ValueError`` naming the path and what is wrong; never reads past
    these bounds."""
    from opboost.core.registry import get_registry

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such policy file or directory.")
    try:
        manifest_path, manifest, text = _read_policy(path)
    except _Torn as exc:
        raise ValueError(str(exc)) from exc
    fmt, learner, n_actions, metadata = _manifest_fields(manifest_path, manifest)
    if fmt == CONSTANT_FORMAT:
        policy = _load_constant(path, text, n_actions, metadata)
        _check_metadata(manifest_path, metadata, None, n_actions)
        return policy
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
    width = getattr(ensemble, "n_actions", None)
    if width is not None and width != n_actions:
        raise ValueError(
            f"{path}: corrupted policy file: the manifest has n_actions={n_actions} but the "
            f"{fmt} ensemble scores {width} actions."
        )
    _check_metadata(manifest_path, metadata, getattr(ensemble, "n_features", None), n_actions)
    try:
        check_model_consistency(metadata, ensemble, n_actions)
    except ValueError as exc:
        raise ValueError(
            f"{manifest_path}: inconsistent policy file: {exc}. The file contradicts itself "
            f"(edited after Policy.save wrote it); restore it, or fit and save the policy again."
        ) from exc
    return Policy(ensemble, n_actions, metadata)


def _check_metadata(
    manifest_path: Path, metadata: dict, n_features: int | None, n_actions: int
) -> None:
    """The table schema, item-feature schema and tie order a policy serves with, checked at
    load."""
    try:
        check_saved_schema(metadata, n_features, n_actions)
        action_schema_of(metadata)
        recorded_tie_order(metadata, n_actions)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{manifest_path}: corrupted policy file: {exc}; re-save the policy."
        ) from exc


def _manifest_fields(manifest_path: Path, manifest: Any) -> tuple[str, Any, int, dict]:
    """(ensemble format, base learner name or None, n_actions, metadata) of a manifest."""
    try:
        spec = manifest["ensemble"]
        fmt = spec["format"]
        learner = None if fmt == CONSTANT_FORMAT else spec["base_learner"]
        n_actions, metadata = manifest["n_actions"], manifest["metadata"]
    except KeyError as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: missing key {exc}.") from exc
    except TypeError as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: {exc}.") from exc
    if MANIFEST_DIGEST not in manifest:
        raise ValueError(
            f"{manifest_path}: policy file without {MANIFEST_DIGEST}, the checksum of its "
            f"n_actions and metadata that Policy.save writes into every policy file: the field "
            f"was deleted or the file was not written by Policy.save. Restore the file, or "
            f"fit the policy and save it again (policy.save(path))."
        )
    if manifest[MANIFEST_DIGEST] != _digest(manifest):
        raise ValueError(
            f"{manifest_path}: corrupted policy file: its n_actions, metadata or ensemble "
            f"description do not match {MANIFEST_DIGEST} (a byte changed after Policy.save "
            f"wrote it). Restore the file or save the policy again."
        )
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
    return fmt, learner, n_actions, metadata


def _digest(manifest: dict) -> str | None:
    """The manifest's :func:`manifest_digest`; None when it holds what JSON cannot (NaN)."""
    try:
        return manifest_digest(manifest)
    except ValueError:
        return None


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
