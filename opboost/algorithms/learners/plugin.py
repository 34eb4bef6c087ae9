"""Built-in base learners, registered through the same hook a third-party plugin uses.

The LightGBM learner is imported lazily (inside the hook), so importing this module loads
neither scikit-learn's trees nor lightgbm.
"""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_base_learners():
    from opboost.algorithms.learners.sklearn import (
        SklearnClassifier,
        SklearnRegressor,
        SklearnStump,
        SklearnTree,
        SklearnTreeClassifier,
    )

    classes = [
        SklearnTree,
        SklearnStump,
        SklearnTreeClassifier,
        SklearnRegressor,
        SklearnClassifier,
    ]
    try:
        from opboost.algorithms.learners.lightgbm_classifier import LightGBMTreeClassifier
        from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
    except ModuleNotFoundError as exc:  # module not in this build, or lightgbm missing
        if exc.name not in (
            "opboost.algorithms.learners.lightgbm_tree",
            "opboost.algorithms.learners.lightgbm_classifier",
            "lightgbm",
        ):
            raise
    else:
        classes += [LightGBMTree, LightGBMTreeClassifier]
    return classes
