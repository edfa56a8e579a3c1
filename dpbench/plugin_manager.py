"""The one plugin manager: loads every ``dpbench`` entry point and indexes what they provide."""

from __future__ import annotations

import importlib.metadata
import warnings
from dataclasses import dataclass

import pluggy

from . import hookspecs
from .base import check_dp_type
from .errors import UnknownNameError

ENTRY_POINT_GROUP = "dpbench"
KINDS = {
    "selector": "dpbench_selectors",
    "generator": "dpbench_generators",
    "solver": "dpbench_solvers",
    "dataset": "dpbench_datasets",
}


@dataclass(frozen=True)
class Entry:
    """One registered plugin object: its class, the plugin module and the distribution."""

    name: str
    obj: type
    plugin: str
    distribution: str


class Registry:
    """Name -> :class:`Entry` maps for every kind, built from one plugin manager."""

    def __init__(self, pm: pluggy.PluginManager, distributions: dict[str, str]):
        self.pm = pm
        self.entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        for kind, hook_name in KINDS.items():
            hook = getattr(pm.hook, hook_name)
            # Call implementations one by one (reverse of pluggy's LIFO order, i.e. in
            # registration order) to know which plugin provided what.
            for impl in reversed(hook.get_hookimpls()):
                plugin_name = pm.get_name(impl.plugin) or impl.plugin_name
                dist = distributions.get(plugin_name, "(not installed)")
                try:
                    objs = impl.function() or []
                    for obj in objs:
                        if kind == "selector":
                            check_dp_type(obj)
                        self._add(kind, obj, plugin_name, dist)
                except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the others
                    warnings.warn(f"dpbench plugin {plugin_name!r} (distribution {dist}) failed in "
                                  f"{hook_name}: {type(exc).__name__}: {exc}", stacklevel=2)

    def _add(self, kind, obj, plugin, dist):
        name = obj.name
        old = self.entries[kind].get(name)
        if old is not None:
            warnings.warn(f"{kind} {name!r} from {dist} ignored: already provided by {old.distribution}",
                          stacklevel=3)
            return
        self.entries[kind][name] = Entry(name, obj, plugin, dist)

    def get(self, kind: str, name: str) -> type:
        """The class registered as ``name``; raises UnknownNameError listing the known ones."""
        try:
            return self.entries[kind][name].obj
        except KeyError:
            raise UnknownNameError("method" if kind == "selector" else kind, name,
                                   self.entries[kind]) from None

    def selector(self, name):
        return self.get("selector", name)

    def generator(self, name):
        return self.get("generator", name)

    def solver(self, name):
        return self.get("solver", name)

    def dataset(self, name):
        return self.get("dataset", name)

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries[kind])

    def describe(self) -> dict:
        """Everything registered, as JSON-serialisable metadata (``dpbench list --json``)."""
        out = {}
        for kind, entries in self.entries.items():
            out[kind + "s"] = [
                {**e.obj.describe(), "plugin": e.plugin, "distribution": e.distribution}
                for e in sorted(entries.values(), key=lambda e: e.name)
            ]
        return out


_REGISTRY: Registry | None = None


def get_plugin_manager() -> tuple[pluggy.PluginManager, dict[str, str]]:
    """A fresh plugin manager with every ``dpbench`` entry point loaded.

    An entry point that fails to import produces one warning naming its distribution and
    the error; the others still load.
    """
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    dists: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "(unknown distribution)"
        if pm.get_plugin(ep.name) is not None:
            continue  # the same entry point seen twice (e.g. two installs on sys.path)
        try:
            module = ep.load()
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"dpbench plugin {ep.name!r} from distribution {dist} failed to load: "
                          f"{type(exc).__name__}: {exc}", stacklevel=2)
            continue
        if not pm.is_registered(module):
            pm.register(module, name=ep.name)
            dists[ep.name] = dist
    return pm, dists


def registry(refresh: bool = False) -> Registry:
    """The process-wide :class:`Registry` (built on first use; ``refresh=True`` rebuilds)."""
    global _REGISTRY
    if _REGISTRY is None or refresh:
        _REGISTRY = Registry(*get_plugin_manager())
    return _REGISTRY
