"""The in-memory fit, split by responsibility: the engine state (``memory``), the warm start
(``warm_start``), checkpoint fingerprint/restore/snapshot (``checkpoint``) and what a fitted
policy records (``metadata``). Label-free round selection is :mod:`opboost.core.selection`."""
