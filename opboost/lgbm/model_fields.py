"""The parts of LightGBM model text around the trees, checked in the grammar LightGBM reads.

:func:`check_features` checks the header's feature names and feature infos as ``DumpModel``
splits them; :func:`check_tail` what follows ``end of trees``: LightGBM's own sections (the
``parameters:`` lines in the ``[name: value]`` form ``GetLoadedParam`` indexes without bounds
checks: a line without ``:`` was a SIGSEGV) and the Python package's ``pandas_categorical``
line. Both raise ``ValueError`` naming the problem (used by
:func:`opboost.lgbm.model_text.check_model_text`).
"""

from __future__ import annotations

import json
import math
import re

__all__ = ["FLOAT_RE", "check_features", "check_tail"]

FLOAT_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?")
# A feature name: no white space and none of the characters DumpModel's JSON would break on
# (LightGBM refuses the same ones in training data: '"', ',', ':', '[', ']', '{', '}').
_FEATURE_NAME_RE = re.compile(r'[^\x00-\x20"\\,:\[\]{}]+')
# feature_infos entries: "none" (unused), "[min:max]" (numeric) or "c0:c1:..." (categories)
_INFO_RANGE_RE = re.compile(r"\[([^:\]]+):([^:\]]+)\]")
_INFO_CATEGORIES_RE = re.compile(r"-?[0-9]{1,10}(:-?[0-9]{1,10})*")
# A line of the parameters section, as LightGBM's Config::ToString writes it. GetLoadedParam
# reads the part after the first ':' unchecked, and pastes the value into JSON unescaped.
_PARAM_RE = re.compile(r'\[([a-z][a-z0-9_]*): ([^"\\\x00-\x1f]*)\]')
_NON_FINITE = {"nan", "inf", "infinity"}


def check_features(names: list[str], infos: list[str]) -> None:
    """Feature names DumpModel can write as JSON keys; each feature info "none", "[min:max]"
    of two finite numbers, or a non-empty ':'-list of integer categories (DumpModel splits
    them on ':' and reads both halves of a range unchecked)."""
    for j, name in enumerate(names):
        if not _FEATURE_NAME_RE.fullmatch(name):
            raise ValueError(f"header: feature_names[{j}]={name[:40]!r} is not a feature name")
    for j, info in enumerate(infos):
        if info == "none" or _INFO_CATEGORIES_RE.fullmatch(info):
            continue
        bounds = _INFO_RANGE_RE.fullmatch(info)
        if not bounds or not all(_finite(b) for b in bounds.groups()):
            raise ValueError(
                f"header: feature_infos[{j}]={info[:40]!r} is not 'none', '[min:max]' or "
                f"categories 'c0:c1:...'"
            )


def _finite(token: str) -> bool:
    return bool(FLOAT_RE.fullmatch(token)) and math.isfinite(float(token))


def check_tail(tail: str) -> None:
    """What follows ``end of trees``: LightGBM's blank-line separated sections as it writes
    them (``feature_importances:``, one ``parameters:`` section ending in ``end of
    parameters``) and the Python package's last line ``pandas_categorical:<JSON>``; nothing
    else (no ``parser:`` section: opboost never writes one)."""
    lines = tail.split("\n")
    if lines[-1] != "":
        raise ValueError("the model text must end with a newline")
    section, seen = None, set()
    for number, line in enumerate(lines[:-1], start=1):
        where = f"line {number} after 'end of trees'"
        if section == "parameters:":
            if line == "end of parameters":
                section = None
            elif line:
                _check_parameter(line, where)
        elif line.startswith("pandas_categorical:"):
            if number != len(lines) - 1:
                raise ValueError(f"{where}: pandas_categorical must be the last line")
            _check_pandas_categorical(line[len("pandas_categorical:") :], where)
        elif line in ("feature_importances:", "parameters:"):
            if line in seen:
                raise ValueError(f"{where}: a second {line!r} section")
            seen.add(line)
            section = line
        elif section == "feature_importances:" and re.fullmatch(r"[^=]+=[0-9]{1,20}", line):
            continue
        elif line:
            raise ValueError(f"{where}: unexpected text {line[:60]!r}")
        else:
            section = None
    if section == "parameters:":
        raise ValueError("the parameters section has no 'end of parameters' line")


def _check_parameter(line: str, where: str) -> None:
    """A ``[name: value]`` line that GetLoadedParam turns into valid JSON."""
    match = _PARAM_RE.fullmatch(line)
    if not match:
        raise ValueError(
            f"{where}: parameter line {line[:60]!r} is not '[name: value]' (LightGBM "
            f"indexes the part after ':' unchecked)"
        )
    tokens = re.split(r"[ ,]", match.group(2).lower())
    if any(token.lstrip("+-") in _NON_FINITE for token in tokens):
        raise ValueError(f"{where}: parameter {match.group(1)} has a non-finite value")


def _check_pandas_categorical(value: str, where: str) -> None:
    """null, or a list of lists of category values (what lightgbm's Python package writes)."""
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = ...
    ok = parsed is None or (
        isinstance(parsed, list)
        and all(
            isinstance(cats, list) and all(isinstance(c, str | int | float) for c in cats)
            for cats in parsed
        )
    )
    if not ok:
        raise ValueError(f"{where}: pandas_categorical must be null or lists of categories")
