"""The in-memory fit, split by responsibility: the engine and the one owner of the fit's state
(``memory``), the warm start (``warm_start``) and checkpoint fingerprint/restored/snapshot
(``checkpoint``), which return what changes for the fit to assign, and the fit on candidate
sets (``slot_fit``). Label-free round selection is :mod:`opboost.core.selection`."""
