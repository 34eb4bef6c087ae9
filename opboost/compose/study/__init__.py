"""Comparative studies: every algorithm x every seed on identical simulated data.

``runner`` (:func:`run_study`, :func:`study_plan`), ``session`` (one running study: what it plans,
resumes and records), ``workers`` (the trials in this process or in worker processes), ``lock``
(one study per output directory), ``errors``, ``outputs`` (the files a study writes),
``results_json`` (the content of results.json), ``report`` and ``report_deployment`` (tables),
``plots``. The names below are those the old module ``opboost.compose.study`` had.
"""

from __future__ import annotations

from opboost.compose.study.errors import StudyError, StudyInterrupted, StudyLockedError
from opboost.compose.study.lock import LOCK_NAME
from opboost.compose.study.outputs import reported_trials, write_outputs, write_partial_outputs
from opboost.compose.study.results_json import FORMAT, assemble, comparable, plugins, versions
from opboost.compose.study.runner import run_study, study_plan
from opboost.compose.trial.plan import TrialKey, label_slug, plan_trials, trial_filenames
from opboost.compose.trial.store import MALFORMED, stored_timings

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
