"""A small ARFF reader for MULAN/MEKA multilabel files: dense rows and sparse ``{i v,...}`` rows.

:func:`read_arff` parses the header (relation, attribute names and types) line by line --
headers are short -- and the data section in bulk with pandas: dense rows through
``read_csv``, sparse rows by splitting every ``index value`` pair at once into a CSR matrix.
Numeric attributes are read as floats; a nominal attribute ``{v0, v1, ...}`` becomes the code
of its value (``{0,1}`` -> 0/1), so the multilabel label columns come out as 0/1.

Label columns are told apart from features by :func:`meka_label_count` (MEKA writes
``-C n`` into the relation: the first ``n`` attributes are labels, ``-C -n`` the last ``n``)
or by the label names of a MULAN XML file (:func:`mulan_label_names`).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["ArffData", "meka_label_count", "mulan_label_names", "read_arff"]

_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.+)$", re.IGNORECASE)


@dataclass(frozen=True, eq=False)
class ArffData:
    """Parsed ARFF file: ``values`` is (n, m) float (dense array or CSR), one column per
    attribute in ``names``; ``nominal`` maps a nominal attribute's name to its declared values."""

    relation: str
    names: list[str]
    nominal: dict[str, list[str]]
    values: Any
    sparse: bool

    def column_index(self, names: list[str], path: Path) -> np.ndarray:
        """Column positions of ``names``; ValueError naming ``path`` if one is missing."""
        where = {n: i for i, n in enumerate(self.names)}
        missing = [n for n in names if n not in where]
        if missing:
            raise ValueError(f"{path}: attributes {missing} not found in the ARFF header.")
        return np.array([where[n] for n in names], dtype=np.int64)


def _unquote(token: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token


def _parse_header(lines: list[str], path: Path) -> tuple[str, list[str], dict[str, list[str]], int]:
    """(relation, names, nominal values, index of the first data line)."""
    relation, names, nominal = "", [], {}
    for number, raw in enumerate(lines):
        line = raw.strip()
        lower = line.lower()
        if not line or line.startswith("%"):
            continue
        if lower.startswith("@relation"):
            relation = _unquote(line[len("@relation") :])
        elif lower.startswith("@attribute"):
            match = _ATTRIBUTE.match(line)
            if match is None:
                raise ValueError(f"{path}:{number + 1}: cannot parse attribute line {line!r}.")
            name, kind = _unquote(match.group(1)), match.group(2).strip()
            names.append(name)
            if kind.startswith("{"):
                nominal[name] = [_unquote(v) for v in kind.strip("{}").split(",")]
            elif kind.split()[0].lower() not in ("numeric", "real", "integer"):
                raise ValueError(
                    f"{path}:{number + 1}: attribute {name!r} has type {kind!r}; only numeric "
                    f"and nominal attributes are supported."
                )
        elif lower.startswith("@data"):
            return relation, names, nominal, number + 1
    raise ValueError(f"{path}: no @data section found; is this an ARFF file?")


def _nominal_codes(column: pd.Series, levels: list[str]) -> np.ndarray:
    """Codes of nominal ``column`` values within ``levels`` (NaN for '?' or unknown)."""
    codes = pd.Categorical(column.astype(str).str.strip().str.strip("'\""), categories=levels).codes
    out = codes.astype(np.float64)
    out[codes < 0] = np.nan
    return out


def _read_dense(body: str, names: list[str], nominal: dict[str, list[str]]) -> np.ndarray:
    frame = pd.read_csv(
        io.StringIO(body),
        header=None,
        names=names,
        comment="%",
        na_values="?",
        skipinitialspace=True,
        dtype=str,
        skip_blank_lines=True,
    )
    out = np.empty(frame.shape, dtype=np.float64)
    for j, name in enumerate(names):  # a loop over columns, not rows
        column = frame[name]
        if name in nominal:
            out[:, j] = _nominal_codes(column, nominal[name])
        else:
            out[:, j] = pd.to_numeric(column, errors="raise").to_numpy(dtype=np.float64)
    return out


def _read_sparse(
    lines: pd.Series, names: list[str], nominal: dict[str, list[str]], path: Path
) -> sp.csr_matrix:
    """Rows ``{i v, j w, ...}`` (0-based attribute indices) -> (n, m) CSR.

    The entries of all rows are parsed at once by pandas' C reader (one entry per line);
    the row of each entry comes from the entry count of each row.
    """
    inner = np.char.strip(np.char.strip(lines.to_numpy(dtype=str)), "{} ")
    counts = np.char.count(inner, ",") + (np.char.str_len(inner) > 0)
    body = "\n".join(inner[counts > 0].tolist()).replace(",", "\n")
    parts = pd.read_csv(
        io.StringIO(body),
        sep=" ",
        header=None,
        names=["index", "value"],
        dtype=str,
        skipinitialspace=True,
        skip_blank_lines=False,
    )
    if len(parts) != counts.sum() or parts["value"].isna().any():
        raise ValueError(f"{path}: a sparse row entry is not 'index value'.")
    rows = np.repeat(np.arange(len(inner)), counts)
    cols = pd.to_numeric(parts["index"]).to_numpy(dtype=np.int64)
    if len(cols) and (cols.min() < 0 or cols.max() >= len(names)):
        raise ValueError(
            f"{path}: sparse attribute index {int(cols.max())} out of range for "
            f"{len(names)} attributes."
        )
    raw = parts["value"].str.strip("'\"")
    values = np.array(pd.to_numeric(raw, errors="coerce"), dtype=np.float64)
    # Nominal values are codes, not the written value; levels "0", "1", ... code as themselves.
    nominal_cols = np.array(
        [n in nominal and nominal[n] != [str(i) for i in range(len(nominal[n]))] for n in names]
    )
    if nominal_cols[cols].any():
        for j in np.unique(cols[nominal_cols[cols]]):  # one pass per nominal column present
            mask = cols == j
            values[mask] = _nominal_codes(raw[mask], nominal[names[j]])
    return sp.csr_matrix((values, (rows, cols)), shape=(len(inner), len(names)))


def read_arff(path: str | Path) -> ArffData:
    """Parse an ARFF file (dense or sparse rows) into :class:`ArffData`."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    relation, names, nominal, start = _parse_header(lines, path)
    data = pd.Series(lines[start:], dtype=str)
    data = data[(data.str.strip() != "") & ~data.str.lstrip().str.startswith("%")]
    data = data.reset_index(drop=True)
    sparse = bool(len(data)) and data.iloc[0].lstrip().startswith("{")
    if sparse:
        values = _read_sparse(data, names, nominal, path)
    else:
        values = _read_dense("\n".join(data.tolist()), names, nominal)
        if values.shape[1] != len(names):
            raise ValueError(
                f"{path}: rows have {values.shape[1]} values but {len(names)} attributes."
            )
    return ArffData(relation, names, nominal, values, sparse)


def meka_label_count(relation: str) -> int | None:
    """MEKA's ``-C n`` in a relation name: n > 0 first n attributes, n < 0 the last |n|."""
    match = re.search(r"-C\s+(-?\d+)", relation)
    return int(match.group(1)) if match else None


def mulan_label_names(path: str | Path) -> list[str]:
    """Label names of a MULAN XML label file, in file order."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    return [el.attrib["name"] for el in root.iter() if el.tag.endswith("label")]
