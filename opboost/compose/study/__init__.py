"""Comparative studies: every algorithm x every seed on identical simulated data.

``runner`` (:func:`run_study`, :func:`study_plan`), ``session`` (one running study: what it plans,
resumes and records), ``workers`` (the trials in this process or in worker processes), ``lock``
(one study per output directory), ``errors``, ``outputs`` (the files a study writes),
``results_json`` (the content of results.json), ``report`` and ``report_deployment`` (tables),
``plots``. The names below are those the old module ``opboost.compose.study`` had; they load
lazily.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = [
    "FORMAT",
    "LOCK_NAME",
    "MALFORMED",
    "StudyError",
    "StudyInterrupted",
    "StudyLockedError",
    "TrialKey",
    "assemble",
    "comparable",
    "label_slug",
    "plan_trials",
    "plugins",
    "reported_trials",
    "run_study",
    "stored_timings",
    "study_plan",
    "trial_filenames",
    "versions",
    "write_outputs",
    "write_partial_outputs",
]

_LAZY = {name: "opboost.compose.study.runner" for name in __all__}

__getattr__, __dir__ = lazy_attributes("opboost.compose.study", _LAZY, globals())
