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

import contextlib
import errno
import hashlib
import json
import numbers
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.api.files import fsync_dir, json_params, write_atomic
from opboost.api.learner import Ensemble
from opboost.api.objective import softmax

__all__ = [
    "CONSTANT_FORMAT",
    "CONSTANT_FORMAT_VERSION",
    "FORMAT_VERSION",
    "MAX_MANIFEST_BYTES",
    "MAX_POLICY_BYTES",
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
#: Largest policy ``.json`` file, or ensemble file, :func:`load_policy` reads (1 GiB).
MAX_POLICY_BYTES = 1 << 30
#: Largest ``policy.json`` of the directory form (metadata only) :func:`load_policy` reads.
MAX_MANIFEST_BYTES = 64 << 20
# Ensemble file names a manifest may reference: "ensemble.txt", or the versioned name that
# Policy.save uses while it replaces an existing policy ("ensemble-<16 hex>.txt").
_ENSEMBLE_NAME_RE = re.compile(r"^ensemble(-[0-9a-f]{16})?\.txt$")
# Temporary files of Policy.save: ".<target name>.<16 hex>.tmp".
_TEMP_RE = re.compile(r"^\.(ensemble(-[0-9a-f]{16})?\.txt|policy\.json)\.[0-9a-f]{16}\.tmp$")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not block
_O_BINARY = getattr(os, "O_BINARY", 0)


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
        self.metadata = json_params(dict(metadata or {}))

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
        directory (created if needed) with ``policy.json`` and ``ensemble.txt``.

        The save is atomic: a process killed at any instant leaves at ``path`` the complete
        old policy or the complete new one, and concurrent saves to the same path never tear
        a file (see :func:`_save_directory` for the directory protocol)."""
        path = Path(path)
        text = self.ensemble.dumps()
        manifest = self._manifest(text)
        data = text.encode("utf-8")
        manifest["ensemble"]["size"] = len(data)
        if path.suffix == ".json":
            manifest["ensemble"]["text"] = text
            write_atomic(path, json.dumps(manifest, indent=1, allow_nan=False))
            return path
        _save_directory(path, data, manifest)
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


# --- writing -------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the directory for the duration (POSIX; elsewhere no lock):
    saves into one directory run one after the other, across threads and processes. The
    kernel drops the lock of a killed process."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _referenced_file(directory: Path) -> str | None:
    """The ensemble file name the directory's current manifest references (None if none)."""
    try:
        spec = json.loads(_read_regular(directory / _MANIFEST, MAX_MANIFEST_BYTES))["ensemble"]
        name = spec["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) and _ENSEMBLE_NAME_RE.match(name) else None


def _remove_leftovers(directory: Path) -> None:
    """Remove what killed saves left behind: temporary files, and versioned ensemble files
    the current manifest does not reference. Called with the directory locked, so no other
    save is running."""
    keep = _referenced_file(directory)
    for entry in directory.iterdir():
        name = entry.name
        versioned = name != _ENSEMBLE_FILE and _ENSEMBLE_NAME_RE.match(name) and name != keep
        if _TEMP_RE.match(name) or versioned:
            with contextlib.suppress(OSError):
                entry.unlink()


def _save_fresh(path: Path, data: bytes, manifest_text: str) -> bool:
    """Build the policy in a sibling staging directory and rename it to ``path`` (atomic).
    False when ``path`` appeared meanwhile (another writer): the caller saves in place."""
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    while True:
        staging = parent / f".{path.name}.{secrets.token_hex(8)}.new"
        try:
            os.mkdir(staging)
        except FileExistsError:  # pragma: no cover
            continue
        break
    try:
        write_atomic(staging / _ENSEMBLE_FILE, data)
        write_atomic(staging / _MANIFEST, manifest_text)
        try:
            os.rename(staging, path)  # fails if path exists and is not an empty directory
        except OSError:
            if not path.exists():
                raise
            shutil.rmtree(staging, ignore_errors=True)
            return False
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(parent)
    return True


def _save_directory(path: Path, data: bytes, manifest: dict[str, Any]) -> None:
    """Save the directory form so that at every instant ``path`` holds a complete policy.

    * ``path`` absent: write ``ensemble.txt`` and ``policy.json`` (each fsynced) into a
      sibling staging directory ``.<name>.<random>.new``, then rename it to ``path``. A kill
      before the rename leaves no policy at ``path`` (there was none) and a hidden staging
      directory.
    * ``path`` an existing directory, locked (``flock``) against other saves:

      1. write the new ensemble as ``ensemble-<sha256[:16]>.txt``, then atomically replace
         ``policy.json`` by the new manifest referencing it. Until this replace the old
         manifest and the untouched old ``ensemble.txt`` are the old policy; after it, the
         new one.
      2. atomically replace ``ensemble.txt`` by the new text, then ``policy.json`` by the
         new manifest referencing ``ensemble.txt`` (both states are the new policy), and
         remove the versioned file.

      Every file is written to a unique temporary name, fsynced and ``os.replace``-d; the
      directory is fsynced after each rename. Leftovers of a killed save (temporary files,
      an unreferenced versioned file) are removed by the next save. Other files in the
      directory are never touched.
    """
    ensemble = manifest["ensemble"]

    def manifest_text(file: str) -> str:
        return json.dumps(
            {**manifest, "ensemble": {**ensemble, "file": file}}, indent=1, allow_nan=False
        )

    if not os.path.lexists(path) and _save_fresh(path, data, manifest_text(_ENSEMBLE_FILE)):
        return
    if not path.is_dir():
        raise FileExistsError(f"{path}: exists and is not a directory; cannot save a policy.")
    with _locked(path):
        _remove_leftovers(path)
        versioned = f"ensemble-{ensemble['sha256'][:16]}.txt"
        write_atomic(path / versioned, data)
        write_atomic(path / _MANIFEST, manifest_text(versioned))  # the switch to the new policy
        write_atomic(path / _ENSEMBLE_FILE, data)
        write_atomic(path / _MANIFEST, manifest_text(_ENSEMBLE_FILE))
        _remove_leftovers(path)
        fsync_dir(path)


# --- reading -------------------------------------------------------------------------------


def _read_regular(path: Path, limit: int, *, follow: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``; ValueError for a symbolic link
    (unless ``follow``), a device, FIFO or directory, or a file longer than ``limit``."""
    if not follow and os.path.islink(path):
        raise ValueError(
            f"{path}: is a symbolic link; a policy directory may hold only regular files."
        )
    flags = os.O_RDONLY | _O_NONBLOCK | _O_BINARY | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(
                f"{path}: is a symbolic link; a policy directory may hold only regular files."
            ) from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path}: not a regular file; refusing to read it as a policy.")
        if info.st_size > limit:
            raise _TooLarge(
                f"{path}: {info.st_size} bytes, more than the {limit} bytes allowed here."
            )
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise _TooLarge(f"{path}: more than the {limit} bytes allowed here (it grew).")
    return data


def _read_json(path: Path, what: str, limit: int, *, follow: bool = False) -> Any:
    return _parse_json(_read_regular(path, limit, follow=follow), path, what)


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


class _TooLarge(ValueError):
    """A file is longer than the bytes allowed for it."""


_LOAD_ATTEMPTS = 5  # re-reads when a concurrent save replaced the files mid-load


def _read_ensemble_file(manifest_path: Path, spec: dict) -> str:
    """The ensemble text of the directory form: a regular file (no symbolic link) named by
    the manifest, of exactly the declared ``size`` (at most :data:`MAX_POLICY_BYTES` when the
    manifest, written by an older opboost, declares none)."""
    name, declared = spec["file"], spec.get("size")
    if not isinstance(name, str) or not _ENSEMBLE_NAME_RE.match(name):
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
        raw = _read_regular(file, MAX_POLICY_BYTES if declared is None else declared)
    except FileNotFoundError as exc:
        raise _Torn(f"{file}: missing ({exc.strerror})") from exc
    except _TooLarge as exc:
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
    manifest_path = path / _MANIFEST
    if not os.path.lexists(manifest_path):
        raise ValueError(f"{path}: not an opboost policy directory: it has no {_MANIFEST}.")
    for attempt in range(_LOAD_ATTEMPTS):
        before = _read_regular(manifest_path, MAX_MANIFEST_BYTES)
        manifest = _parse_json(before, manifest_path, "file")
        try:
            return manifest_path, manifest, _manifest_text(path, manifest_path, manifest, before)
        except _Torn:
            try:
                changed = _read_regular(manifest_path, MAX_MANIFEST_BYTES) != before
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
    """Load a policy written by :meth:`Policy.save` (a ``.json`` file or a directory): a
    :class:`Policy`, or a :class:`ConstantPolicy` for a constant policy's file.

    Reads only regular files (inside a directory: no symbolic links), at most
    :data:`MAX_POLICY_BYTES` (:data:`MAX_MANIFEST_BYTES` for a directory's ``policy.json``)
    and exactly the ensemble size the manifest declares; checks the SHA-256, the format and
    that the ensemble scores ``n_actions`` actions. Raises ``ValueError`` naming the path and
    what is wrong; never reads past these bounds."""
    from opboost.registry import get_registry

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such policy file or directory.")
    try:
        manifest_path, manifest, text = _read_policy(path)
    except _Torn as exc:
        raise ValueError(str(exc)) from exc
    try:
        spec = manifest["ensemble"]
        fmt = spec["format"]
        learner = None if fmt == CONSTANT_FORMAT else spec["base_learner"]
        n_actions, metadata = manifest["n_actions"], manifest["metadata"]
    except KeyError as exc:
        raise ValueError(f"{manifest_path}: corrupted policy file: missing key {exc}.") from exc
    except TypeError as exc:
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
    width = getattr(ensemble, "n_actions", None)
    if width is not None and width != n_actions:
        raise ValueError(
            f"{path}: corrupted policy file: the manifest has n_actions={n_actions} but the "
            f"{fmt} ensemble scores {width} actions."
        )
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
