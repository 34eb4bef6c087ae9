"""Files: crash-safe writes, bounded reads and JSON-safe values (``atomic``), a policy's save
protocol (``policy_save``) and the table schema a saved policy carries (``saved_schema``).
The package imports no interface of the SDK, and no part of the plugin contract: import its
names by their module paths. Names load lazily."""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = ["TooLarge", "fsync_dir", "json_params", "json_safe", "read_regular", "write_atomic"]

_LAZY = {name: "opboost.api.files.atomic" for name in __all__}

__getattr__, __dir__ = lazy_attributes("opboost.api.files", _LAZY, globals())
