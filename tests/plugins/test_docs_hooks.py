"""docs/plugins.md documents every hook with its exact signature."""

from __future__ import annotations

import inspect
from pathlib import Path

from opboost.api import hookspecs

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def test_every_hook_is_documented_with_signature():
    """Each hookspec appears in docs/plugins.md as `name(args)` with its kind."""
    text = DOC.read_text()
    for kind, hook_name in hookspecs.HOOKS.items():
        signature = inspect.signature(getattr(hookspecs, hook_name))
        params = ", ".join(signature.parameters)
        assert f"`{hook_name}({params})`" in text, hook_name
        assert f"`{kind}`" in text, kind
