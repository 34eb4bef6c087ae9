"""The plugin registry: finds components by kind and name.

The registry is built lazily on first use, never at import: hook specs, then the built-in
plugins (:data:`BUILTIN_PLUGINS`, registered exactly as a third party is), then the
``opboost`` entry-point group (skipping blocked names), then ``check_pending``.

Environment variables:

``OPBOOST_DISABLE_PLUGIN_AUTOLOAD=1``
    load no entry points: only built-ins are available.
``OPBOOST_DISABLED_PLUGINS=a,b``
    block the named plugins (entry-point names, or built-in module names).
``OPBOOST_TRACE_PLUGINS=1``
    print each hook call and what it returned to stderr.

A plugin that fails while it is imported or registered, or whose hook raises (any exception,
or ``SystemExit``; ``KeyboardInterrupt`` still interrupts), is skipped with a
:class:`PluginLoadWarning` naming the entry point, its distribution and the switch that
disables it; the built-ins and the other plugins load as usual. A plugin whose hooks return
invalid classes or clash with another plugin's names is still an error.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import re
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from opboost import hookspecs
from opboost.component import KINDS, Component
from opboost.exceptions import InvalidParameterError, OpboostWarning, PluginError

__all__ = [
    "BUILTIN_PLUGINS",
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

#: Modules holding the built-in hook implementations, registered under these names.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "opboost.estimators.plugin",
    "opboost.objectives.plugin",
    "opboost.learners.plugin",
    "opboost.callbacks",
    "opboost.online.plugin",
    "opboost.online.loss_plugin",
    "opboost.baselines",
    "opboost.datasets.plugin",
    "opboost.dask.plugin",  # lightgbm_dask_tree, when the opboost[dask] extra is installed
)

#: Components that live in separately installed packages, for "not installed" hints.
KNOWN_EXTERNAL: dict[tuple[str, str], str] = {
    ("base_learner", "xgboost_tree"): "opboost-xgboost",
    ("online_learner", "vw_cb_explore"): "opboost-vw",
    ("policy_learner", "vw_cb_adf"): "opboost-vw",
    ("base_learner", "lightgbm_dask_tree"): "opboost[dask]",
}

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

    Also a :class:`~opboost.exceptions.PluginError`: with warnings turned into errors
    (``python -W error::opboost.exceptions.OpboostWarning``) a failing plugin stops the
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
        self._components: dict[str, dict[str, tuple[type[Component], PluginInfo]]] = {
            kind: {} for kind in KINDS
        }

    # --- building -----------------------------------------------------------------------

    def _add(self, kind: str, cls: Any, plugin: PluginInfo) -> None:
        where = f"plugin {plugin.name!r} ({plugin.source})"
        if not (isinstance(cls, type) and issubclass(cls, Component)):
            raise PluginError(
                f"{where} returned {cls!r} from {hookspecs.HOOKS[kind]}; hooks must return "
                f"classes derived from opboost.component.Component."
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
        package = KNOWN_EXTERNAL.get((kind, name))
        if package is not None:
            message += (
                f" {name!r} is provided by the package {package}, which is not installed "
                f"(or is blocked): pip install {package}."
            )
        return UnknownComponentError(message, kind=kind, name=name, known=known)


# --- construction ------------------------------------------------------------------------


def _blocked() -> set[str]:
    raw = os.environ.get("OPBOOST_DISABLED_PLUGINS", "")
    return {part.strip() for part in raw.split(",") if part.strip()}


def _entry_points() -> Iterable[
    tuple[importlib.metadata.EntryPoint, importlib.metadata.Distribution]
]:
    seen: set[str] = set()
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP and ep.name not in seen:
                seen.add(ep.name)
                yield ep, dist


def _build() -> Registry:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    blocked = _blocked()
    for name in blocked:
        pm.set_blocked(name)
    loaded: list[tuple[object, str, str, str, bool]] = []  # plugin, name, dist, version, builtin
    version = _opboost_version()
    for module_name in BUILTIN_PLUGINS:
        if module_name in blocked:
            continue
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
        loaded.append((module, module_name, "opboost", version, True))
    if not _env_flag("OPBOOST_DISABLE_PLUGIN_AUTOLOAD"):
        for ep, dist in _entry_points():
            if ep.name in blocked:
                continue
            dist_name = dist.metadata["Name"] or "?"
            where = f"entry point {ep.name!r} = {ep.value!r} of {dist_name} {dist.version}"
            disable = (
                f"Reinstall or uninstall {dist_name}, or disable it with "
                f"OPBOOST_DISABLED_PLUGINS={ep.name} (or every plugin with "
                f"OPBOOST_DISABLE_PLUGIN_AUTOLOAD=1)."
            )
            try:
                plugin = ep.load()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # a plugin's import must not stop opboost
                _skip_plugin(
                    f"Could not import the opboost plugin {where}: "
                    f"{type(exc).__name__}: {exc}. Skipped it; built-ins and the other "
                    f"plugins are available. {disable}"
                )
                continue
            try:
                pm.register(plugin, name=ep.name)
            except pluggy.PluginValidationError as exc:
                raise PluginError(f"Invalid opboost plugin {where}: {exc}") from exc
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                _skip_plugin(
                    f"Could not register the opboost plugin {where}: "
                    f"{type(exc).__name__}: {exc}. Skipped it. {disable}"
                )
                continue
            loaded.append((plugin, ep.name, dist_name, dist.version, False))
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"{exc}. Hook implementations must be named after a spec in opboost.hookspecs: "
            f"{', '.join(hookspecs.HOOKS.values())}."
        ) from exc

    trace = _env_flag("OPBOOST_TRACE_PLUGINS")
    infos: list[PluginInfo] = []
    results: list[tuple[str, list[Any], PluginInfo]] = []
    for plugin, name, dist_name, dist_version, builtin in loaded:
        provided: dict[str, tuple[str, ...]] = {}
        info_stub = PluginInfo(name, dist_name, dist_version, builtin)
        for kind, hook_name in hookspecs.HOOKS.items():
            impl = getattr(plugin, hook_name, None)
            if impl is None or pm.parse_hookimpl_opts(plugin, hook_name) is None:
                continue
            try:
                classes = list(impl() or [])
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                if builtin:
                    raise PluginError(
                        f"Hook {hook_name} of plugin {name!r} ({info_stub.source}) raised "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                _skip_plugin(
                    f"Hook {hook_name} of the opboost plugin {name!r} ({info_stub.source}) "
                    f"raised {type(exc).__name__}: {exc}. Skipped its {kind} components. "
                    f"Disable the plugin with OPBOOST_DISABLED_PLUGINS={name}."
                )
                continue
            if trace:
                print(f"opboost: {name}.{hook_name}() -> {classes}", file=sys.stderr)
            provided[kind] = tuple(getattr(c, "name", repr(c)) for c in classes)
            results.append((kind, classes, info_stub))
        infos.append(PluginInfo(name, dist_name, dist_version, builtin, provided))
    registry = Registry(pm, infos)
    by_name = {info.name: info for info in infos}
    for kind, classes, stub in results:
        for cls in classes:
            registry._add(kind, cls, by_name[stub.name])
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
