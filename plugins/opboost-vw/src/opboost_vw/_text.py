"""Vowpal Wabbit text examples for K actions with action-dependent features (ADF).

One multi-line example per context: a ``shared`` line with the context's nonzero features in
namespace ``s`` (feature j named ``j``), then one line per action with the single feature
``a<k>`` in namespace ``a``. With ``-q sa`` every context feature is crossed with the action
indicator, i.e. one linear cost model per action plus per-action biases.

On a catalogue with item features (:func:`item_lines`), an action's line holds the item's
features in namespace ``a`` instead: numeric column j as ``f<j>:<value>``, categorical column
j as the indicator ``c<j>=<code>``; ``-q sa`` then crosses every context feature with every
item feature, so items never seen in training are scored from their features.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np

__all__ = ["action_lines", "item_lines", "load_workspace", "save_workspace", "shared_line"]


def shared_line(x: np.ndarray) -> str:
    """The ``shared |s j:v ...`` line of context ``x`` (d,); zero features are left out."""
    idx = np.flatnonzero(x)
    return "shared |s " + " ".join(f"{j}:{x[j]:.9g}" for j in idx)


def action_lines(n_actions: int, labelled: int | None = None, label: str = "") -> list[str]:
    """The K action lines; action ``labelled`` carries ``label`` (``"0:cost:prob"``)."""
    return [f"{label} |a a{k}" if k == labelled else f"|a a{k}" for k in range(n_actions)]


def item_lines(features: np.ndarray, categorical: tuple[int, ...] = ()) -> list[str]:
    """One ``|a ...`` line per item of ``features`` (n_items, d_a): numeric columns as
    ``f<j>:<value>`` (zeros left out), the ``categorical`` columns' codes as ``c<j>=<code>``."""
    features = np.asarray(features, dtype=np.float64)
    is_code = np.zeros(features.shape[1], dtype=bool)
    is_code[list(categorical)] = True
    lines = []
    for row in features:
        parts = [
            f"c{j}={int(v)}" if is_code[j] else f"f{j}:{v:.9g}"
            for j, v in enumerate(row)
            if is_code[j] or v != 0.0
        ]
        lines.append("|a " + " ".join(parts))
    return lines


def save_workspace(workspace: Any) -> bytes:
    """A Vowpal Wabbit model's bytes (its own binary format, no pickle)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.vw")
        workspace.save(path)
        with open(path, "rb") as handle:
            return handle.read()


def load_workspace(args: list[str], model: bytes) -> Any:
    """A Workspace with command line ``args`` continuing from the model bytes ``model``.

    ``--random_seed`` is left out: the model stores the seed VW derived from it (``--bag``
    stores a different one), and VW refuses disagreeing values.
    """
    from vowpalwabbit import Workspace

    if "--random_seed" in args:
        at = args.index("--random_seed")
        args = args[:at] + args[at + 2 :]

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.vw")
        with open(path, "wb") as handle:
            handle.write(model)
        return Workspace(arg_list=[*args, "-i", path])
