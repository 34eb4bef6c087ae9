"""One trial: one algorithm, one seed, on the data every algorithm of that seed shares.

``plan`` (a study's trials: keys, file names, search overrides, fingerprints, each trial
resolved once into a ``ResolvedTrial`` of one kind), the data of a seed (``trial_data`` for a
data set's splits and simulated logs, ``logs_data`` for the user's logs, ``world_data`` for a
simulated world), ``run`` (:func:`~opboost.compose.trial.run.run_resolved`: the runner of the
trial's kind), one module per kind's runner (``labelled_run``, ``logs_run``, ``stream``,
``catalogue_run``, ``slate_run``), ``result`` (what a trial records; scoring a policy) and
``store`` (the stored trial files a study resumes from).
"""

from __future__ import annotations

__all__: list[str] = []
