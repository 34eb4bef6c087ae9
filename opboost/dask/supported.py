"""What a distributed fit (:mod:`opboost.dask.boosting`) supports: the Booster's settings,
callbacks and components it refuses, each with the fix."""

from __future__ import annotations

from typing import Any

from opboost.api.data.logged import check_data
from opboost.api.engine import FitSettings
from opboost.api.exceptions import InvalidParameterError

__all__ = ["check_components", "check_options"]


def check_options(settings: FitSettings, eval_data: Any, callbacks: Any) -> None:
    """Refuse what the distributed fit cannot do: a held-out selection, a warm start,
    checkpoints; check ``eval_data``."""
    unsupported = [
        ("validation_fraction", None, "hold out logs yourself and pass them as eval_data"),
        ("warm_start", None, "start from F_0 = 0 (warm_start=None)"),
    ]
    for name, default, fix in unsupported:
        if getattr(settings, name) != default:
            raise InvalidParameterError(
                f"The {name!r} parameter of Booster is not supported by the distributed fit "
                f"(DaskLoggedBandit). Got {getattr(settings, name)!r}; {fix}."
            )
    if eval_data is not None:
        check_data(eval_data, "eval_data")
    for cb in callbacks:
        if cb.writes_checkpoints:
            raise InvalidParameterError(
                f"Booster.fit: the callback {type(cb).__name__} checkpoints the fit state, "
                f"which the distributed fit keeps on the workers; checkpoints are not "
                f"supported there. Drop it (Progress, History and EarlyStopping work)."
            )


def check_components(objective: Any, estimator: Any, learner: Any) -> None:
    """Refuse a learner other than ``lightgbm_dask_tree`` and an objective or estimator that
    needs more than per-row terms."""
    from opboost.dask.lightgbm_dask_tree import LightGBMDaskTree

    if not isinstance(learner, LightGBMDaskTree):
        raise InvalidParameterError(
            f"Booster.fit: data is a DaskLoggedBandit, which only the 'lightgbm_dask_tree' base "
            f"learner fits (on the workers); got base learner {learner.name!r}. Use "
            f"base_learner='lightgbm_dask_tree', or gather small data with "
            f"data.to_logged_bandit() for an in-memory learner."
        )
    for component, why, fix in (
        (
            objective,
            "its risk or gradient needs statistics of all rows at once, not sums over "
            "partitions (Objective.row_local is False)",
            "an objective of per-row terms such as 'bopl_s' or 'bopl'",
        ),
        (
            estimator,
            "it needs per-row training coefficients, each from its own row (Estimator."
            "row_local is False)",
            "'ips' or 'truncated_ips'",
        ),
    ):
        if not component.row_local:
            raise InvalidParameterError(
                f"The {component.kind} {component.name!r} is not supported by the distributed "
                f"fit: {why}. Use {fix}."
            )
