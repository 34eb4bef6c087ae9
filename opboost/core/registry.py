"""The plugin registry: finds components by kind and name.

The registry is built lazily on first use, never at import: hook specs, then every plugin of
the ``opboost`` entry-point group, loaded by pluggy (``load_setuptools_entrypoints``, one
entry point at a time so that a broken one is skipped alone). The built-ins are the entry
points of the opboost distribution itself, declared in its pyproject.toml exactly as a third
party declares its own; they load first and are marked ``builtin``.

Environment variables:

``OPBOOST_DISABLE_PLUGIN_AUTOLOAD=1``
    load no third-party entry points: only built-ins are available.
``OPBOOST_DISABLED_PLUGINS=a,b``
    block the named plugins (entry-point names, or built-in module names).
``OPBOOST_TRACE_PLUGINS=1``
    print each hook call and what it returned to stderr.

A plugin that fails while it is imported or registered, or whose hook raises (any exception,
or ``SystemExit``; ``KeyboardInterrupt`` still interrupts), is skipped with a
[`PluginLoadWarning`][opboost.core.registry.PluginLoadWarning] naming the entry point, its
distribution and the switch that disables it; the built-ins and the other plugins load as usual. A
plugin whose hooks return invalid classes or clash with another plugin's names is still an error.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

import pluggy

from opboost.api import hookspecs
from opboost.api.component import KINDS, Component
from opboost.api.exceptions import InvalidParameterError, OpboostWarning, PluginError

__all__ = [
    "BUILTIN_DISTRIBUTION",
    "ENTRY_POINT_GROUP",
    "PluginInfo",
    "PluginLoadWarning",
    "Registry",
    "UnknownComponentError",
    "available",
    "get_registry",
    "make",
    "reset_registry",
]

ENTRY_POINT_GROUP = "opboost"

#: The distribution whose entry points are the built-in plugins.
BUILTIN_DISTRIBUTION = "opboost"

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class UnknownComponentError(PluginError, ValueError):
    """No component of ``kind`` is registered under ``name``."""

    def __init__(self, message: str, *, kind: str, name: str, known: list[str]):
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.known = known


class PluginLoadWarning(OpboostWarning, PluginError):
    """A plugin failed to import, register or run a hook and was skipped.

    Also a [`PluginError`][opboost.api.exceptions.PluginError]: with warnings turned into errors
    (``python -W error::opboost.api.exceptions.OpboostWarning``) a failing plugin stops the
    registry build as before."""


def _skip_plugin(message: str) -> None:
    warnings.warn(PluginLoadWarning(message), stacklevel=3)


@dataclass(frozen=True)
class PluginInfo:
    """One registered plugin: where it came from and what it provides."""

    name: str
    distribution: str
    version: str
    builtin: bool
    components: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """``"distribution version"``, as error messages and listings show it."""
        return f"{self.distribution} {self.version}"


def _opboost_version() -> str:
    try:
        return importlib.metadata.version("opboost")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


class Registry:
    """Components by kind and name, with the plugin that provided each."""

    def __init__(self, manager: pluggy.PluginManager, plugins: list[PluginInfo]):
        self.manager = manager
        self._plugins = plugins
        #: (kind, name) -> how to get it, for components a plugin cannot provide here.
        self.unavailable: dict[tuple[str, str], str] = {}
        self._components: dict[str, dict[str, tuple[type[Component], PluginInfo]]] = {
            kind: {} for kind in KINDS
        }

    # --- building -----------------------------------------------------------------------

    def _add(self, kind: str, cls: Any, plugin: PluginInfo) -> None:
        where = f"plugin {plugin.name!r} ({plugin.source})"
        if not (isinstance(cls, type) and issubclass(cls, Component)):
            raise PluginError(
                f"{where} returned {cls!r} from {hookspecs.HOOKS[kind]}; hooks must return "
                f"classes derived from opboost.api.component.Component."
            )
        if cls.kind != kind:
            raise PluginError(
                f"{where} returned {cls.__name__} (kind {cls.kind!r}) from "
                f"{hookspecs.HOOKS[kind]}, which registers kind {kind!r}."
            )
        if not _NAME_RE.match(cls.name or ""):
            raise PluginError(
                f"{where}: {cls.__name__}.name is {cls.name!r}; component names must be "
                f"snake_case (lowercase letters, digits and underscores)."
            )
        taken = self._components[kind].get(cls.name)
        if taken is not None and taken[0] is not cls:
            other = taken[1]
            raise PluginError(
                f"Duplicate {kind} name {cls.name!r}: provided by plugin {other.name!r} "
                f"({other.source}) and by plugin {plugin.name!r} ({plugin.source}). "
                f"Uninstall one, or block it with OPBOOST_DISABLED_PLUGINS={plugin.name}."
            )
        self._components[kind][cls.name] = (cls, plugin)

    # --- lookup -------------------------------------------------------------------------

    def get(self, kind: str, name: str) -> type[Component]:
        """The class registered as ``name`` for ``kind``; raise with the known names if none."""
        self._check_kind(kind)
        entry = self._components[kind].get(name)
        if entry is None:
            raise self._unknown(kind, name)
        return entry[0]

    def names(self, kind: str) -> list[str]:
        """Sorted names of the components of ``kind``."""
        self._check_kind(kind)
        return sorted(self._components[kind])

    def provider(self, kind: str, name: str) -> PluginInfo:
        """The plugin that provides ``name`` of ``kind``."""
        self.get(kind, name)
        return self._components[kind][name][1]

    @property
    def plugins(self) -> list[PluginInfo]:
        """Every registered plugin, built-ins first."""
        return list(self._plugins)

    def _check_kind(self, kind: str) -> None:
        if kind not in self._components:
            raise InvalidParameterError(
                f"Unknown plugin kind {kind!r}. Known kinds: {', '.join(KINDS)}."
            )

    def _unknown(self, kind: str, name: str) -> UnknownComponentError:
        known = self.names(kind)
        listed = ", ".join(f"{n} ({self._components[kind][n][1].source})" for n in known) or "none"
        message = f"Unknown {kind} {name!r}. Known: {listed}."
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.6)
        if close:
            message += " Did you mean " + " or ".join(repr(c) for c in close) + "?"
        hint = self.unavailable.get((kind, name))
        if hint is not None:
            message += f" {name!r} needs what is not installed here: {hint}."
        else:
            message += (
                f" A {kind} from a plugin package appears once that package is installed "
                f"(and not blocked by OPBOOST_DISABLED_PLUGINS); `opboost plugins` lists the "
                f"loaded plugins."
            )
        return UnknownComponentError(message, kind=kind, name=name, known=known)


# --- construction ------------------------------------------------------------------------


def _blocked() -> set[str]:
    raw = os.environ.get("OPBOOST_DISABLED_PLUGINS", "")
    return {part.strip() for part in raw.split(",") if part.strip()}


def _entry_points() -> list[tuple[importlib.metadata.EntryPoint, importlib.metadata.Distribution]]:
    """The ``opboost`` entry points, one per name, the built-in distribution's first."""
    seen: set[str] = set()
    found = []
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP and ep.name not in seen:
                seen.add(ep.name)
                found.append((ep, dist))
    found.sort(key=lambda pair: _dist_name(pair[1]) != BUILTIN_DISTRIBUTION)
    return found


def _dist_name(dist: importlib.metadata.Distribution) -> str:
    return dist.metadata["Name"] or "?"


def _load(pm: pluggy.PluginManager, ep: importlib.metadata.EntryPoint, where: str) -> bool:
    """Import and register one entry point through pluggy; False (with a warning naming the
    plugin and how to disable it) when it fails, so one broken plugin never stops opboost."""
    disable = (
        f"Reinstall or uninstall it, or disable it with OPBOOST_DISABLED_PLUGINS={ep.name} "
        f"(or every third-party plugin with OPBOOST_DISABLE_PLUGIN_AUTOLOAD=1)."
    )
    try:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP, name=ep.name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"Invalid opboost plugin {where}: {exc}") from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a plugin's import must not stop opboost, not even exit()
        _skip_plugin(
            f"Could not load the opboost plugin {where}: {type(exc).__name__}: {exc}. "
            f"Skipped it; the other plugins are available. {disable}"
        )
        return False
    return pm.get_plugin(ep.name) is not None


def _call_hooks(pm: pluggy.PluginManager, infos: dict[str, PluginInfo]) -> list[tuple]:
    """(kind, classes, plugin info) from every hook implementation, in registration order;
    a third-party hook that raises is skipped with a warning, a built-in's is an error."""
    trace = _env_flag("OPBOOST_TRACE_PLUGINS")
    results = []
    for kind, hook_name in hookspecs.HOOKS.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            info = infos[impl.plugin_name]
            try:
                classes = list(impl.function() or [])
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                if info.builtin:
                    raise PluginError(
                        f"Hook {hook_name} of plugin {info.name!r} ({info.source}) raised "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                _skip_plugin(
                    f"Hook {hook_name} of the opboost plugin {info.name!r} ({info.source}) "
                    f"raised {type(exc).__name__}: {exc}. Skipped its {kind} components. "
                    f"Disable the plugin with OPBOOST_DISABLED_PLUGINS={info.name}."
                )
                continue
            if trace:
                print(f"opboost: {info.name}.{hook_name}() -> {classes}", file=sys.stderr)
            results.append((kind, classes, info))
    return results


def _build() -> Registry:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    blocked = _blocked()
    for name in blocked:
        pm.set_blocked(name)
    autoload = not _env_flag("OPBOOST_DISABLE_PLUGIN_AUTOLOAD")
    loaded: list[PluginInfo] = []
    for ep, dist in _entry_points():
        builtin = _dist_name(dist) == BUILTIN_DISTRIBUTION
        if ep.name in blocked or not (builtin or autoload):
            continue
        where = f"entry point {ep.name!r} = {ep.value!r} of {_dist_name(dist)} {dist.version}"
        if _load(pm, ep, where):
            loaded.append(PluginInfo(ep.name, _dist_name(dist), dist.version, builtin))
    if not any(info.builtin for info in loaded) and not blocked:
        raise PluginError(
            "opboost's built-in plugins are not registered: the opboost distribution's entry "
            "points were not found. Install the package (pip install -e . in a source tree)."
        )
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"{exc}. Hook implementations must be named after a spec in opboost.api.hookspecs: "
            f"{', '.join(hookspecs.HOOKS.values())}."
        ) from exc
    results = _call_hooks(pm, {info.name: info for info in loaded})
    provided: dict[str, dict[str, tuple[str, ...]]] = {info.name: {} for info in loaded}
    for kind, classes, info in results:
        provided[info.name][kind] = tuple(getattr(c, "name", repr(c)) for c in classes)
    infos = [
        PluginInfo(i.name, i.distribution, i.version, i.builtin, provided[i.name]) for i in loaded
    ]
    registry = Registry(pm, infos)
    for entries in pm.hook.opboost_unavailable_components():
        for kind, name, hint in entries or ():
            registry.unavailable.setdefault((str(kind), str(name)), str(hint))
    by_name = {info.name: info for info in infos}
    for kind, classes, info in results:
        for cls in classes:
            registry._add(kind, cls, by_name[info.name])
    return registry


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, built on first call and cached."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _build()
    return _REGISTRY


def reset_registry() -> None:
    """Forget the cached registry (after installing a plugin, or in tests)."""
    global _REGISTRY
    _REGISTRY = None
    importlib.invalidate_caches()


def available(kind: str) -> list[str]:
    """Sorted names of the registered components of ``kind``."""
    return get_registry().names(kind)


def make(kind: str, name: str, **params: Any) -> Component:
    """Instantiate the component ``name`` of ``kind`` with ``params``."""
    cls = get_registry().get(kind, name)
    try:
        return cls(**params)
    except TypeError as exc:
        valid = sorted(cls._get_param_names())
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise InvalidParameterError(
                f"The {kind} {name!r} ({cls.__name__}) has no parameter "
                f"{', '.join(repr(u) for u in unknown)}. Valid parameters: "
                f"{', '.join(valid) or 'none'}."
            ) from exc
        raise
