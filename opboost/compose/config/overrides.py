"""Command-line overrides of a config: ``--set PATH=VALUE`` applied to the TOML as read, and
the assignment to blame for a :class:`ConfigError` of the changed config."""

from __future__ import annotations

import copy
import re
import tomllib
from typing import Any

from opboost.api.exceptions import ConfigError
from opboost.compose.config.validate import suggest

__all__ = ["apply_overrides", "blame_override", "parse_set_value"]

#: ``algorithms[<index, label or *>]`` at the start of a ``--set`` path.
_ALGO_SELECTOR = re.compile(r"algorithms\[(?P<sel>[^\]]*)\](?:\.(?P<rest>.+))?")


def parse_set_value(text: str) -> Any:
    """A ``--set`` value: a TOML literal (``0.01``, ``[0, 1]``, ``"bopl"``, ``true``,
    ``{ name = "ips" }``); text that is not a TOML literal is taken as a bare string
    (``--set data.name=digits``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _set_path(table: dict[str, Any], parts: list[str], value: Any, where: str) -> None:
    for i, part in enumerate(parts[:-1]):
        inner = table.get(part)
        if inner is None:
            inner = table[part] = {}
        elif isinstance(inner, str):  # a component given by name: becomes { name = ... }
            inner = table[part] = {"name": inner}
        elif not isinstance(inner, dict):
            raise ConfigError(
                f"{where}: {'.'.join(parts[: i + 1])} is {inner!r}, not a table; set it "
                f"whole instead.",
                key=".".join(parts[: i + 1]),
            )
        table = inner
    table[parts[-1]] = value


def _algorithm_indices(raw: dict[str, Any], selector: str, where: str) -> list[int]:
    algorithms = raw.get("algorithms")
    if not isinstance(algorithms, list):
        raise ConfigError(f"{where}: the config has no [[algorithms]].", key="algorithms")
    labels = [
        t.get("label", f"algorithm {i}") if isinstance(t, dict) else None
        for i, t in enumerate(algorithms)
    ]
    sel = selector.strip()
    if sel == "*":
        return list(range(len(algorithms)))
    if sel in labels:
        return [labels.index(sel)]
    if sel.lstrip("-").isdigit():
        index = int(sel)
        if 0 <= index < len(algorithms):
            return [index]
    raise ConfigError(
        f"{where}: no algorithm {sel!r}; use an index 0..{len(algorithms) - 1}, '*' or a "
        f"label ({', '.join(repr(x) for x in labels if x is not None)})."
        f"{suggest(sel, [x for x in labels if x is not None])}",
        key="algorithms",
    )


def apply_overrides(raw: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    """A copy of ``raw`` with each ``--set PATH=VALUE`` of ``assignments`` applied.

    PATH is a dotted key path (``simulation.logging_C``, ``experiment.seeds``); an algorithm
    is selected by ``algorithms[<index>]``, ``algorithms[<label>]`` or ``algorithms[*]``
    (every algorithm that has the path's first key), e.g.
    ``algorithms[BOPL-S].booster.n_rounds=5``. VALUE is parsed by :func:`parse_set_value`.
    Missing tables are created; a component given by name (``objective = "bopl"``) becomes
    a table when one of its parameters is set.
    """
    out = copy.deepcopy(raw)
    for text in assignments:
        where = f"--set {text}"
        path, sep, value_text = text.partition("=")
        path = path.strip()
        if not sep or not path:
            raise ConfigError(
                f"{where}: expected PATH=VALUE, e.g. --set simulation.logging_C=0.01 or "
                f"--set algorithms[0].booster.n_rounds=5."
            )
        value = parse_set_value(value_text.strip())
        match = _ALGO_SELECTOR.fullmatch(path)
        if match:
            rest = match["rest"]
            if not rest:
                raise ConfigError(f"{where}: name a key of the algorithm, e.g. .booster.n_rounds.")
            parts = rest.split(".")
            indices = _algorithm_indices(out, match["sel"], where)
            if match["sel"].strip() == "*":
                indices = [i for i in indices if parts[0] in out["algorithms"][i]]
                if not indices:
                    raise ConfigError(
                        f"{where}: no algorithm has a {parts[0]!r} key.", key="algorithms"
                    )
            for i in indices:
                _set_path(out["algorithms"][i], parts, value, where)
            continue
        parts = path.split(".")
        if any(not p for p in parts):
            raise ConfigError(f"{where}: {path!r} is not a dotted key path.")
        _set_path(out, parts, value, where)
    return out


def _set_key(text: str, raw: dict[str, Any]) -> str:
    """The config key path that ``--set`` ``text`` changes (algorithms by index)."""
    path = text.partition("=")[0].strip()
    match = _ALGO_SELECTOR.fullmatch(path)
    if not match:
        return path
    sel = match["sel"].strip()
    labels = [t.get("label", f"algorithm {i}") for i, t in enumerate(raw.get("algorithms", []))]
    index = labels.index(sel) if sel in labels else sel
    return f"algorithms[{index}]" + (f".{match['rest']}" if match["rest"] else "")


def blame_override(exc: ConfigError, assignments: list[str], raw: dict[str, Any]) -> str | None:
    """The ``--set`` assignment responsible for ``exc`` (the last one whose key path is the
    error's key, a parent or a child of it), or None."""
    if not exc.key:
        return None
    for text in reversed(assignments):
        key = _set_key(text, raw)
        star = key.startswith("algorithms[*]")
        if star:  # algorithms[*].x matches algorithms[<i>].x
            key = re.sub(r"^algorithms\[\*\]", "", key)
            err = re.sub(r"^algorithms\[\d+\]", "", exc.key)
        else:
            err = exc.key
        if (
            err == key
            or err.startswith(key + ".")
            or key.startswith(err + ".")
            or (key.startswith(err + "["))
        ):
            return text
    return None
