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

#: The names the old module opboost.compose.study had -> the module under opboost.compose
#: that defines each.
_HOMES = {
    "FORMAT": "study.results_json",
    "LOCK_NAME": "study.lock",
    "MALFORMED": "trial.store",
    "StudyError": "study.errors",
    "StudyInterrupted": "study.errors",
    "StudyLockedError": "study.errors",
    "TrialKey": "trial.plan",
    "assemble": "study.results_json",
    "comparable": "study.results_json",
    "label_slug": "trial.plan",
    "plan_trials": "trial.plan",
    "plugins": "study.results_json",
    "reported_trials": "study.outputs",
    "run_study": "study.runner",
    "stored_timings": "trial.store",
    "study_plan": "study.runner",
    "trial_filenames": "trial.plan",
    "versions": "study.results_json",
    "write_outputs": "study.outputs",
    "write_partial_outputs": "study.outputs",
}

__all__ = sorted(_HOMES)

_LAZY = {name: f"opboost.compose.{module}" for name, module in _HOMES.items()}

__getattr__, __dir__ = lazy_attributes("opboost.compose.study", _LAZY, globals())
