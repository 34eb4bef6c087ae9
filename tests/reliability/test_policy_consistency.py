"""A saved policy is checked against itself at load (issue 52, findings 2-4): edits with
every checksum recomputed that leave the file consistent (a leaf value, a category renamed)
are new models and load; edits that leave it contradicting itself (a category list shorter
than the codes the model's splits use, item columns other than the action schema's, a model
of pairs without its schema, a fixed-action model with one) are refused naming the file,
the field and the two numbers, and so is a manifest without its checksum."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

from opboost.api.policy import manifest_digest
from opboost.core.policy_loading import load_policy

SEED = 52
N_EDITS = 45

INCONSISTENT = (
    "The file contradicts itself (edited after Policy.save wrote it); restore it, or fit and "
    "save the policy again."
)


def _edited(
    source: Path,
    target: Path,
    *,
    manifest: Callable[[dict], None] | None = None,
    model: Callable[[str], str] | None = None,
    digest: bool = True,
) -> Path:
    """A copy of policy directory ``source`` at ``target`` with its model text and manifest
    edited, every checksum recomputed (``digest=False``: manifest_sha256 deleted)."""
    shutil.copytree(source, target)
    header_line, _, text = (target / "ensemble.txt").read_text().partition("\n")
    header = json.loads(header_line)
    if model is not None:
        text = model(text)
        header["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    ensemble = (json.dumps(header) + "\n" + text).encode()
    (target / "ensemble.txt").write_bytes(ensemble)
    body = json.loads((target / "policy.json").read_text())
    body["ensemble"].update(sha256=hashlib.sha256(ensemble).hexdigest(), size=len(ensemble))
    if manifest is not None:
        manifest(body)
    body["manifest_sha256"] = manifest_digest(body)
    if not digest:
        del body["manifest_sha256"]
    (target / "policy.json").write_text(json.dumps(body, indent=1))
    return target


def _set_value(text: str, *, tree: int, key: str, index: int, value: str) -> str:
    """Model text with value ``index`` of array ``key`` of tree ``tree`` set to ``value`` and
    the header's ``tree_sizes`` updated (indices taken modulo the trees and the array)."""
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith(f"{key}=")]
    tree %= len(rows)
    values = lines[rows[tree]][len(key) + 1 :].split(" ")
    values[index % len(values)] = value
    before, lines[rows[tree]] = lines[rows[tree]], f"{key}=" + " ".join(values)
    (sizes_row,) = [i for i, line in enumerate(lines) if line.startswith("tree_sizes=")]
    sizes = [int(v) for v in lines[sizes_row][len("tree_sizes=") :].split(" ")]
    sizes[tree] += len(lines[rows[tree]]) - len(before)
    lines[sizes_row] = "tree_sizes=" + " ".join(map(str, sizes))
    return "\n".join(lines)


def _set_leaf(text: str, *, tree: int, leaf: int, value: float) -> str:
    """Model text with leaf ``leaf`` of tree ``tree`` set to ``value`` (a consistent edit)."""
    return _set_value(text, tree=tree, key="leaf_value", index=leaf, value=repr(value))


def _lightgbm_split_codes(policy: Path) -> dict[int, list[int]]:
    """{model column: codes} of the categorical splits, as LightGBM's own dump reads them
    (thresholds "c0||c1||..." of "==" decisions): the oracle the checks are held to."""
    text = (policy / "ensemble.txt").read_text().partition("\n")[2]
    codes: dict[int, set[int]] = {}
    stack = [
        tree["tree_structure"] for tree in lgb.Booster(model_str=text).dump_model()["tree_info"]
    ]
    while stack:
        node = stack.pop()
        if "split_feature" not in node:
            continue
        if node["decision_type"] == "==":
            codes.setdefault(node["split_feature"], set()).update(
                int(c) for c in str(node["threshold"]).split("||")
            )
        stack += [node["left_child"], node["right_child"]]
    return {column: sorted(c) for column, c in codes.items()}


def _categories(metadata: dict, key: str) -> list:
    """The one category list of ``metadata[key]`` (the table or the action schema)."""
    (pair,) = metadata[key]["categories"]
    return pair[1]


def _codes_message(path: Path, what: str, field: str, codes: list[int], kept: list) -> str:
    entries = "entry" if len(kept) == 1 else "entries"
    return (
        f"{path / 'policy.json'}: inconsistent policy file: the model's categorical splits on "
        f"{what} use codes {', '.join(map(str, codes))} but {field} has {len(kept)} {entries} "
        f"{kept!r}: a code must index the list. {INCONSISTENT}"
    )


NO_SCHEMA = (
    "the model scores (context, item) pairs (2 item column(s) after its 2 context column(s)) "
    "but the metadata has no 'action_schema', which designs the pairs of the catalogue served"
)
GRAFTED = (
    "metadata action_schema describes 2 item column(s) but the model scores 3 fixed actions, "
    "not (context, item) pairs"
)


def _inconsistent(path: Path, detail: str) -> str:
    return f"{path / 'policy.json'}: inconsistent policy file: {detail}. {INCONSISTENT}"


def _no_digest(path: Path) -> str:
    return (
        f"{path / 'policy.json'}: policy file without manifest_sha256, the checksum of its "
        f"n_actions and metadata that Policy.save writes into every policy file: the field was "
        f"deleted or the file was not written by Policy.save. Restore the file, or fit the "
        f"policy and save it again (policy.save(path))."
    )


# --- each finding ----------------------------------------------------------------------


def test_a_category_list_shorter_than_the_split_codes_is_refused(tabular_policy, tmp_path):
    """Finding 2: the list of column "c" cut to one entry while the model's splits use codes
    up to 2 loaded and served one action to every row; now it is refused naming the file,
    the column, the codes and the list's length."""
    codes = _lightgbm_split_codes(tabular_policy)[1]  # column 1 of the table: "c"
    assert codes[-1] >= 1
    target = _edited(
        tabular_policy,
        tmp_path / "short",
        manifest=lambda m: _categories(m["metadata"], "schema").__delitem__(slice(1, None)),
    )
    kept = _categories(json.loads((target / "policy.json").read_text())["metadata"], "schema")
    message = _codes_message(target, "column 'c'", "its metadata schema category list", codes, kept)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_policy(target)


def test_a_shortened_item_category_list_is_refused(catalogue_policy, tmp_path):
    """The same check on an item column: the colour list cut below the codes the splits on
    the item column "colour" (model column 2 + 1: after the 2 contexts and "price") use."""
    codes = _lightgbm_split_codes(catalogue_policy)[3]
    assert codes[-1] >= 1
    target = _edited(
        catalogue_policy,
        tmp_path / "short",
        manifest=lambda m: _categories(m["metadata"], "action_schema").__delitem__(slice(1, None)),
    )
    kept = _categories(
        json.loads((target / "policy.json").read_text())["metadata"], "action_schema"
    )
    field = "its action_schema category list"
    message = _codes_message(target, "item column 'colour'", field, codes, kept)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_policy(target)


def test_a_split_on_an_action_beyond_n_actions_is_refused(tabular_policy, tmp_path):
    """The stacked design's action column (model column 2, after "x" and "c") is split on
    codes below the policy's 3 actions; a bitset edited to name action 5 is refused."""
    text = (tabular_policy / "ensemble.txt").read_text().partition("\n")[2]
    tree = text[text.index("Tree=0") :].split("\n\n")[0]
    fields = dict(line.split("=", 1) for line in tree.split("\n")[1:])
    nodes = zip(fields["split_feature"].split(), fields["decision_type"].split(), strict=True)
    node = next(i for i, (f, t) in enumerate(nodes) if f == "2" and int(t) & 1)
    threshold = int(float(fields["threshold"].split()[node]))
    word = int(fields["cat_boundaries"].split()[threshold])
    edit = functools.partial(_set_value, tree=0, key="cat_threshold", index=word, value="32")
    target = _edited(tabular_policy, tmp_path / "action5", model=edit)
    codes = ", ".join(map(str, _lightgbm_split_codes(target)[2]))
    assert codes.endswith("5")
    detail = (
        f"the model's categorical splits on the action column use codes {codes} but the "
        f"action list (n_actions) has 3 entries: a code must index the list"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(_inconsistent(target, detail))}$"):
        load_policy(target)


def test_item_columns_other_than_the_action_schema_are_refused(catalogue_policy, tmp_path):
    """Finding 3: action_schema.n_features 2 -> 3 on a model of 2 item columns loaded
    without complaint; now refused naming the field and both numbers."""
    target = _edited(
        catalogue_policy,
        tmp_path / "wide",
        manifest=lambda m: m["metadata"]["action_schema"].update(n_features=3),
    )
    detail = (
        "metadata action_schema.n_features is 3 but the model reads 2 item column(s) after "
        "its 2 context column(s)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(_inconsistent(target, detail))}$"):
        load_policy(target)


def test_a_model_of_pairs_without_its_action_schema_is_refused(catalogue_policy, tmp_path):
    """Finding 3: without action_schema the policy loaded, then asked both to drop
    action_features= (with them) and to pass the catalogue (without); now refused at load."""
    target = _edited(
        catalogue_policy, tmp_path / "bare", manifest=lambda m: m["metadata"].pop("action_schema")
    )
    with pytest.raises(ValueError, match=f"^{re.escape(_inconsistent(target, NO_SCHEMA))}$"):
        load_policy(target)


def test_a_fixed_action_model_with_an_action_schema_is_refused(
    tabular_policy, catalogue_policy, tmp_path
):
    """The converse: the action schema of another policy added to a model of 3 fixed
    actions (it would then be served as a catalogue model) is refused."""
    schema = json.loads((catalogue_policy / "policy.json").read_text())["metadata"]
    target = _edited(
        tabular_policy,
        tmp_path / "grafted",
        manifest=lambda m: m["metadata"].update(action_schema=schema["action_schema"]),
    )
    with pytest.raises(ValueError, match=f"^{re.escape(_inconsistent(target, GRAFTED))}$"):
        load_policy(target)


def test_a_recorded_context_width_other_than_the_models_is_refused(tabular_policy, tmp_path):
    """metadata n_features (the policy's n_features_in_) must be the model's context width."""
    target = _edited(
        tabular_policy, tmp_path / "width", manifest=lambda m: m["metadata"].update(n_features=5)
    )
    detail = "metadata n_features is 5 but the model reads 2 context column(s)"
    with pytest.raises(ValueError, match=f"^{re.escape(_inconsistent(target, detail))}$"):
        load_policy(target)


def test_consistent_edits_load_as_new_models(tabular_policy, catalogue_policy, tmp_path):
    """A changed leaf value and renamed categories, checksums recomputed, are new models:
    they load and serve (the renamed category by its new name)."""
    import pandas as pd
    from policy_tables import item_table

    def rename(key: str, new: str) -> Callable[[dict], None]:
        return lambda m: _categories(m["metadata"], key).__setitem__(0, new)

    leaf = _edited(
        tabular_policy,
        tmp_path / "leaf",
        model=functools.partial(_set_leaf, tree=0, leaf=0, value=0.25),
    )
    assert (leaf / "ensemble.txt").read_text() != (tabular_policy / "ensemble.txt").read_text()
    frame = pd.DataFrame({"x": [0.5, -1.0], "c": ["a", "b"]})
    load_policy(leaf).predict(frame, return_ids=True)
    renamed = _edited(tabular_policy, tmp_path / "renamed", manifest=rename("schema", "paris"))
    ids = load_policy(renamed).predict(frame.assign(c=["paris", "b"]), return_ids=True)
    assert list(ids) == list(load_policy(tabular_policy).predict(frame, return_ids=True))
    items = item_table()
    recoloured = _edited(
        catalogue_policy, tmp_path / "recoloured", manifest=rename("action_schema", "navy")
    )
    served = load_policy(recoloured).predict(
        np.zeros((3, 2)), action_features=items.replace({"colour": {"blue": "navy"}})
    )
    original = load_policy(catalogue_policy).predict(np.zeros((3, 2)), action_features=items)
    np.testing.assert_array_equal(served, original)


# --- random edits, loaded in a child process -------------------------------------------

# The child loads each policy directory listed in the JSON file argv[1] and serves with it
# (inputs in the categories its own metadata lists), printing one JSON line per policy:
# ["ok", ""], ["ValueError", message] or ["OTHER", "<type>: message"].
CHILD = r"""
import json, sys
import numpy as np, pandas as pd
import opboost
for path in json.load(open(sys.argv[1])):
    try:
        policy = opboost.load_policy(path)
        meta = policy.metadata
        if "action_schema" in meta:
            (pair,) = meta["action_schema"]["categories"]
            items = pd.DataFrame({"price": [1.0, 2.0, 3.0], "colour": (pair[1] * 3)[:3]})
            policy.predict(np.zeros((4, 2)), action_features=items)
        else:
            (pair,) = meta["schema"]["categories"]
            frame = pd.DataFrame({"x": [0.5, -1.0, 2.0, 0.1], "c": (pair[1] * 4)[:4]})
            policy.predict(frame, return_ids=True)
        answer = ["ok", ""]
    except ValueError as exc:
        answer = ["ValueError", str(exc)]
    except Exception as exc:
        answer = ["OTHER", f"{type(exc).__name__}: {exc}"]
    print(json.dumps(answer), flush=True)
"""


class _Edits:
    """Seeded random edits of the two saved policies, each written to ``out/case<n>``:
    (policy directory, the message its load must raise; None for a consistent edit)."""

    def __init__(self, tabular: Path, catalogue: Path, out: Path) -> None:
        self.tabular, self.catalogue, self.out = tabular, catalogue, out
        self.rng = np.random.default_rng(SEED)
        self.codes = {
            "schema": _lightgbm_split_codes(tabular)[1],  # column "c"
            "action_schema": _lightgbm_split_codes(catalogue)[3],  # item column "colour"
        }
        metadata = json.loads((catalogue / "policy.json").read_text())["metadata"]
        self.action_schema = metadata["action_schema"]

    def _either(self) -> Path:
        return self.tabular if self.rng.random() < 0.5 else self.catalogue

    def _leaf(self, case: int, *, digest: bool = True) -> Path:
        tree, leaf = (int(v) for v in self.rng.integers(0, 1000, 2))
        value = float(self.rng.normal())
        model = functools.partial(_set_leaf, tree=tree, leaf=leaf, value=value)
        return _edited(self._either(), self.out / f"case{case}", model=model, digest=digest)

    def leaf_value(self, case: int) -> tuple[Path, str | None]:
        return self._leaf(case), None

    def rename(self, case: int, key: str) -> tuple[Path, str | None]:
        at = int(self.rng.integers(0, 3))

        def edit(manifest: dict) -> None:
            _categories(manifest["metadata"], key)[at] = f"renamed{case}"

        source = self.tabular if key == "schema" else self.catalogue
        return _edited(source, self.out / f"case{case}", manifest=edit), None

    def shorten(self, case: int, key: str) -> tuple[Path, str | None]:
        codes = self.codes[key]
        length = int(self.rng.integers(1, codes[-1] + 1))  # below the largest code used

        def edit(manifest: dict) -> None:
            del _categories(manifest["metadata"], key)[length:]

        source = self.tabular if key == "schema" else self.catalogue
        path = _edited(source, self.out / f"case{case}", manifest=edit)
        kept = _categories(json.loads((path / "policy.json").read_text())["metadata"], key)
        if key == "schema":
            what, field = "column 'c'", "its metadata schema category list"
        else:
            what, field = "item column 'colour'", "its action_schema category list"
        return path, _codes_message(path, what, field, codes, kept)

    def item_columns(self, case: int) -> tuple[Path, str | None]:
        width = int(self.rng.choice([1, 3, 4, 7]))

        def edit(manifest: dict) -> None:
            manifest["metadata"]["action_schema"]["n_features"] = width

        path = _edited(self.catalogue, self.out / f"case{case}", manifest=edit)
        detail = (
            f"metadata action_schema.n_features is {width} but the model reads 2 item "
            f"column(s) after its 2 context column(s)"
        )
        return path, _inconsistent(path, detail)

    def drop_schema(self, case: int) -> tuple[Path, str | None]:
        def edit(manifest: dict) -> None:
            del manifest["metadata"]["action_schema"]

        path = _edited(self.catalogue, self.out / f"case{case}", manifest=edit)
        return path, _inconsistent(path, NO_SCHEMA)

    def graft_schema(self, case: int) -> tuple[Path, str | None]:
        def edit(manifest: dict) -> None:
            manifest["metadata"]["action_schema"] = self.action_schema

        path = _edited(self.tabular, self.out / f"case{case}", manifest=edit)
        return path, _inconsistent(path, GRAFTED)

    def drop_digest(self, case: int) -> tuple[Path, str | None]:
        path = self._leaf(case, digest=False)
        return path, _no_digest(path)

    def cases(self, n: int) -> list[tuple[Path, str | None]]:
        """``n`` edits cycling through 3 consistent kinds and 6 inconsistent ones."""
        kinds = [
            self.leaf_value,
            functools.partial(self.rename, key="schema"),
            functools.partial(self.rename, key="action_schema"),
            functools.partial(self.shorten, key="schema"),
            functools.partial(self.shorten, key="action_schema"),
            self.item_columns,
            self.drop_schema,
            self.graft_schema,
            self.drop_digest,
        ]
        return [kinds[case % len(kinds)](case) for case in range(n)]


def test_random_edits_load_when_consistent_and_are_refused_when_not(
    tabular_policy, catalogue_policy, tmp_path
):
    """45 seeded edits (leaf values and category names changed: consistent; category lists
    cut below the codes used, item columns changed, the action schema dropped or grafted,
    manifest_sha256 deleted: inconsistent), loaded and served in a child process: it is not
    killed by a signal, the consistent edits load and serve, the others raise ValueError
    with the exact message."""
    cases = _Edits(tabular_policy, catalogue_policy, tmp_path).cases(N_EDITS)
    listing = tmp_path / "cases.json"
    listing.write_text(json.dumps([str(path) for path, _ in cases]))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(listing)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert child.returncode >= 0, f"killed by signal {-child.returncode}: {child.stderr[-2000:]}"
    assert child.returncode == 0, child.stderr[-2000:]
    answers = [json.loads(line) for line in child.stdout.splitlines() if line.startswith('["')]
    expected = [["ok", ""] if message is None else ["ValueError", message] for _, message in cases]
    assert answers == expected
