"""Constants of the reliability tests' saved policies (``conftest.tabular_policy`` and
``conftest.catalogue_policy``), in a module of their own: a test module importing them from
``conftest`` by name can get another directory's conftest (pytest imports every ``conftest``
under that one name)."""

#: The catalogue of ``tabular_policy`` (string action ids) and its categorical column.
ACTION_IDS = ["red", "green", "blue"]
CATEGORIES = ["a", "b", "c"]
#: The item colours of ``catalogue_policy``'s catalogue (a categorical item column).
COLOURS = ["red", "green", "blue"]


def item_table():
    """``catalogue_policy``'s catalogue: 6 items, a numeric "price" and a categorical "colour"."""
    import pandas as pd

    return pd.DataFrame(
        {"price": [1.0, 2.5, 0.5, 4.0, 3.0, 1.5], "colour": COLOURS + COLOURS[::-1]}
    )
