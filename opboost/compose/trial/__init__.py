"""One trial: one algorithm, one seed, on the data every algorithm of that seed shares.

``trial_data`` (the seed's splits and simulated logs), ``run`` (:func:`run_trial`: fit and score
by the true expected reward), ``result`` (what a trial records; scoring a policy), ``stream``
(a deployment study's trial: the algorithm plays the seed's stream), ``plan`` (a study's trials:
keys, file names, search overrides, fingerprints) and ``store`` (the stored trial files a study
resumes from).
"""

from __future__ import annotations

__all__: list[str] = []
