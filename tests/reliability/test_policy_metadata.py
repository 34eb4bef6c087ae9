"""policy.json's metadata: every byte that changes behaviour is covered by the manifest
checksum, and a schema that cannot serve fails at load, naming what is wrong (issue 40:
reversed categories loaded and returned other action ids; a shortened catalogue failed only
at predict time)."""

from __future__ import annotations

import json
import random
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from policy_tables import CATEGORIES

from opboost.api.policy import manifest_digest
from opboost.core.policy_loading import load_policy

FRAME = pd.DataFrame({"x": [0.5, -1.0, 2.0, 0.1, 0.3, -0.2], "c": [*CATEGORIES, *CATEGORIES]})


def _copy(source, tmp_path, edit, *, digest: bool):
    """A copy of the policy directory whose manifest is ``edit(manifest)``; with ``digest``
    its manifest_sha256 recomputed, as whoever edits a file on purpose would."""
    target = tmp_path / "edited"
    shutil.copytree(source, target)
    manifest = json.loads((target / "policy.json").read_text())
    edit(manifest)
    if digest:
        manifest["manifest_sha256"] = manifest_digest(manifest)
    (target / "policy.json").write_text(json.dumps(manifest, indent=1))
    return target


def _reverse_categories(manifest):
    manifest["metadata"]["schema"]["categories"][0][1].reverse()


def test_reversed_categories_fail_the_manifest_checksum(tabular_policy, tmp_path):
    """The categories decide the codes a DataFrame is encoded with: reversing them without
    the checksum is refused at load."""
    target = _copy(tabular_policy, tmp_path, _reverse_categories, digest=False)
    message = (
        f"{target / 'policy.json'}: corrupted policy file: its n_actions, metadata or ensemble "
        f"description do not match manifest_sha256 (a byte changed after Policy.save wrote "
        f"it). Restore the file or save the policy again."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_policy(target)


def test_one_byte_edits_of_the_metadata_never_load_with_other_predictions(tabular_policy, tmp_path):
    """40 seeded one-byte changes in policy.json's metadata: each fails to load (ValueError)
    or loads a policy that returns the same action ids as the original."""
    expected = load_policy(tabular_policy).predict(FRAME, return_ids=True)
    text = (tabular_policy / "policy.json").read_bytes()
    start, end = text.index(b'"metadata"'), text.index(b'"ensemble"')
    rng = random.Random(40)
    changed = []
    for case in range(40):
        at = rng.randrange(start, end)
        byte = rng.choice([b for b in b"abcxyz0123456789.-" if b != text[at]])
        target = tmp_path / f"case{case}"
        shutil.copytree(tabular_policy, target)
        (target / "policy.json").write_bytes(text[:at] + bytes([byte]) + text[at + 1 :])
        try:
            ids = load_policy(target).predict(FRAME, return_ids=True)
        except ValueError:
            continue
        if not np.array_equal(ids, expected):
            changed.append((case, at, chr(byte)))
    assert changed == []


def test_shortened_action_ids_fail_at_load_naming_them(tabular_policy, tmp_path):
    """A catalogue shorter than the policy's actions, checksum recomputed, fails at load."""
    target = _copy(
        tabular_policy,
        tmp_path,
        lambda m: m["metadata"]["schema"]["action_ids"].pop(),
        digest=True,
    )
    message = (
        f"{target / 'policy.json'}: corrupted policy file: metadata schema has 2 action ids "
        f"(2 distinct) but the policy has 3 actions; re-save the policy."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_policy(target)


def test_manifest_without_a_digest_is_refused(tabular_policy, tmp_path):
    """Every file Policy.save writes has manifest_sha256 (opboost was never released without
    it): a manifest without it, whatever else was edited, is refused naming the file and the
    field and saying how to get a policy file again (issue 52, finding 4)."""
    target = _copy(tabular_policy, tmp_path, lambda m: m.pop("manifest_sha256"), digest=False)
    message = (
        f"{target / 'policy.json'}: policy file without manifest_sha256, the checksum of its "
        f"n_actions and metadata that Policy.save writes into every policy file: the field was "
        f"deleted or the file was not written by Policy.save. Restore the file, or fit the "
        f"policy and save it again (policy.save(path))."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_policy(target)
