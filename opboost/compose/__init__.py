"""Composition: experiment configs, hyper-parameter search, trials, studies, reports and the
``opboost`` command line. Builds on every other layer; nothing below imports it."""
