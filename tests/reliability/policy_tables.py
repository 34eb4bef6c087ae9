"""Constants of the reliability tests' saved table policy (``conftest.tabular_policy``), in a
module of their own: a test module importing them from ``conftest`` by name can get another
directory's conftest (pytest imports every ``conftest`` under that one name)."""

#: The catalogue of ``tabular_policy`` (string action ids) and its categorical column.
ACTION_IDS = ["red", "green", "blue"]
CATEGORIES = ["a", "b", "c"]
