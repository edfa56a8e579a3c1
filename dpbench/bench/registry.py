"""The one plugin manager: loads every ``dpbench`` entry point and indexes what they provide.

Every plugin is checked when the registry is built, and a faulty one is skipped with one
warning naming its distribution while the others still load: a module that fails to
import, a hook name with no specification (pluggy's ``check_pending``: a misspelled
``dpbench_selector``), a hook that raises, and each returned class that breaks the contract
of :mod:`dpbench.api` (:func:`check_plugin_class`).
"""

from __future__ import annotations

import difflib
import json
import importlib.metadata
import warnings
from dataclasses import dataclass
from typing import Iterable

import pluggy

import dpbench.hookspecs as hookspecs
from dpbench.core.contracts.data import Dataset, Generator
from dpbench.core.contracts.oracle import Solver
from dpbench.core.contracts.selector import DP_TYPES, Diagnostic, PREPROCESSING, Selector
from dpbench.core.params import Param
from dpbench.core.errors import UnknownNameError
from dpbench.core.contracts.estimation import ESTIMATOR_DP_TYPES, PrivateEstimator
from dpbench.core.contracts.loss import Loss
from dpbench.bench.trial import serving_backend

ENTRY_POINT_GROUP = "dpbench"
KINDS = {
    "selector": "dpbench_selectors",
    "generator": "dpbench_generators",
    "solver": "dpbench_solvers",
    "dataset": "dpbench_datasets",
    "loss": "dpbench_losses",
    "estimator": "dpbench_estimators",
}
BASES = {"selector": Selector, "generator": Generator, "solver": Solver, "dataset": Dataset, "loss": Loss,
         "estimator": PrivateEstimator}


def check_plugin_class(kind: str, obj) -> None:
    """Check one class a plugin returned for ``kind`` against its contract (:mod:`dpbench.api`).

    Parameters
    ----------
    kind : {"selector", "generator", "solver", "dataset", "loss", "estimator"}
    obj : object
        What the plugin's hook returned in its list.

    Raises
    ------
    TypeError
        ``obj`` is not a subclass of the kind's base class (:data:`BASES`), is abstract
        (a method of the contract is not implemented), or declares ``params`` that are not
        a dict of :class:`dpbench.api.Param`.
    ValueError
        Empty ``name``; for a selector, a ``dp_type`` outside :data:`dpbench.api.DP_TYPES`
        (including none declared), no ``neighbouring`` relation, or a ``preprocessing``
        outside :data:`dpbench.api.PREPROCESSING`; for an estimator, a ``dp_type`` outside
        :data:`dpbench.core.contracts.estimation.ESTIMATOR_DP_TYPES`, no ``neighbouring`` relation or
        no ``losses`` (a non-empty tuple of loss names, ``("*",)`` for any).
    """
    base = BASES[kind]
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise TypeError(f"{obj!r} is not a subclass of dpbench.core.contracts.{base.__name__}")
    label = f"{kind} class {obj.__qualname__}"
    missing = sorted(getattr(obj, "__abstractmethods__", ()))
    if missing:
        raise TypeError(f"{label} does not implement {', '.join(missing)}")
    if not isinstance(obj.name, str) or not obj.name.strip():
        raise ValueError(f"{label} has no name; set the class attribute name = '...'")
    params = getattr(obj, "params", {})
    if not isinstance(params, dict) or not all(isinstance(v, Param) for v in params.values()):
        raise TypeError(f"{label} ({obj.name!r}): params must be a dict of dpbench.api.Param")
    if kind in ("selector", "estimator"):
        _check_privacy_declaration(kind, obj, DP_TYPES if kind == "selector" else ESTIMATOR_DP_TYPES)
    if kind == "selector":
        if obj.preprocessing not in PREPROCESSING:
            raise ValueError(f"selector {obj.name!r} declares preprocessing={obj.preprocessing!r}; "
                             f"set it to one of {', '.join(PREPROCESSING)}")
        diagnostics = getattr(obj, "diagnostics", {})
        if not isinstance(diagnostics, dict) or not all(isinstance(v, Diagnostic) for v in diagnostics.values()):
            raise TypeError(f"selector {obj.name!r}: diagnostics must be a dict of dpbench.api.Diagnostic, "
                            "e.g. {'gap_condition': Diagnostic('count', 'gap')}")
    if kind == "estimator":
        losses = obj.losses
        if not (isinstance(losses, tuple) and losses and all(isinstance(x, str) and x for x in losses)):
            raise ValueError(f"estimator {obj.name!r} declares losses={losses!r}; set losses to a tuple of "
                             "the loss names its guarantee is proved for, e.g. ('least-squares',) or ('*',)")


def _check_privacy_declaration(kind: str, obj, dp_types) -> None:
    """The DP type and neighbouring relation every private plugin (selector, estimator) declares."""
    if obj.dp_type not in dp_types:
        raise ValueError(f"{kind} {obj.name!r} declares dp_type={obj.dp_type!r}; "
                         f"set dp_type to one of {', '.join(dp_types)}")
    if not isinstance(obj.neighbouring, str) or not obj.neighbouring.strip():
        raise ValueError(f"{kind} {obj.name!r} declares no neighbouring relation; "
                         "set neighbouring = 'replace-one' (or the relation its guarantee uses)")


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
            # Call implementations one by one, to know which plugin provided what, in
            # registration order (get_hookimpls lists them so; pluggy *calls* them LIFO), so
            # that of two classes with one name the first registered is kept.
            for impl in hook.get_hookimpls():
                plugin_name = pm.get_name(impl.plugin) or impl.plugin_name
                dist = distributions.get(plugin_name, "(not installed)")
                try:
                    objs = list(impl.function() or [])
                except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the others
                    warnings.warn(f"dpbench plugin {plugin_name!r} (distribution {dist}) failed in "
                                  f"{hook_name}: {type(exc).__name__}: {exc}", stacklevel=2)
                    continue
                for obj in objs:
                    try:
                        check_plugin_class(kind, obj)
                    except (TypeError, ValueError) as exc:
                        warnings.warn(f"dpbench plugin {plugin_name!r} (distribution {dist}): {kind} "
                                      f"ignored: {exc}", stacklevel=2)
                        continue
                    self._add(kind, obj, plugin_name, dist)

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

    def loss(self, name):
        return self.get("loss", name)

    def estimator(self, name):
        return self.get("estimator", name)

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries[kind])

    def describe(self) -> dict:
        """Everything registered, as JSON-serialisable metadata (``dpbench list --json``)."""
        out = {}
        for kind, entries in self.entries.items():
            out[kind + ("es" if kind.endswith("s") else "s")] = [
                {**e.obj.describe(), "plugin": e.plugin, "distribution": e.distribution}
                for e in sorted(entries.values(), key=lambda e: e.name)
            ]
        return out


_REGISTRY: Registry | None = None


def get_plugin_manager(extra: Iterable[tuple[str, object, str]] = (), entry_points: bool = True,
                       ) -> tuple[pluggy.PluginManager, dict[str, str]]:
    """A fresh plugin manager with every ``dpbench`` entry point loaded.

    An entry point that fails to import, or whose hooks pluggy refuses (a hook name with
    no specification, found by ``check_pending``; arguments a specification does not
    have), produces one warning naming its distribution and the error, and is left out;
    the others still load.

    Parameters
    ----------
    extra : iterable of (name, module, distribution)
        Plugin objects (modules with ``@hookimpl`` functions) registered in addition,
        without installing a package; ``distribution`` is the label warnings and
        ``dpbench list`` show. For tests of plugins: see :func:`build_registry`.
    entry_points : bool
        Load the installed ``dpbench`` entry points (False: only ``extra``).

    Returns
    -------
    pm : pluggy.PluginManager
    distributions : dict of str to str
        Plugin name -> distribution label.
    """
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    dists: dict[str, str] = {}
    for name, module, dist in extra:
        _register(pm, dists, module, name, dist)
    for ep in (importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if entry_points else ()):
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
            _register(pm, dists, module, ep.name, dist)
    _check_pending(pm, dists)
    return pm, dists


def _register(pm, dists, module, name, dist) -> None:
    try:
        pm.register(module, name=name)
    except pluggy.PluginValidationError as exc:
        warnings.warn(f"dpbench plugin {name!r} from distribution {dist} ignored: {exc}", stacklevel=3)
        return
    dists[name] = dist


def _check_pending(pm: pluggy.PluginManager, dists: dict[str, str]) -> None:
    """pluggy's ``check_pending`` until it passes, dropping each plugin it names, with a warning.

    ``check_pending`` raises at the first implementation of a hook that has no
    specification (a misspelled hook would otherwise register silently and never run).
    """
    specs = sorted(KINDS.values())
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            plugin = exc.plugin
            name = pm.get_name(plugin)
            dist = dists.pop(name, "(unknown distribution)")
            unknown = sorted(h for h in dir(plugin) if h.startswith("dpbench") and h not in specs
                             and callable(getattr(plugin, h)) and pm.parse_hookimpl_opts(plugin, h))
            hints = [f"{h!r} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(h, specs, n=1))
                     else repr(h) for h in unknown]
            warnings.warn(f"dpbench plugin {name!r} from distribution {dist} ignored: it defines unknown "
                          f"hook {', '.join(hints) or exc}; the hooks are {', '.join(specs)}", stacklevel=3)
            pm.unregister(plugin)


def build_registry(plugins: Iterable[tuple[str, object, str]] = (), entry_points: bool = True) -> "Registry":
    """A new :class:`Registry` with ``plugins`` registered in-process (the global one is untouched).

    For tests of plugins: the same checks as for an installed package run, without
    building and installing one.

    Parameters
    ----------
    plugins : iterable of (name, module, distribution)
        Plugin modules (objects with ``@hookimpl`` functions), their plugin names and
        the distribution label that warnings name.
    entry_points : bool
        Also load the installed ``dpbench`` entry points.

    Examples
    --------
    >>> import types
    >>> from dpbench.bench.registry import build_registry
    >>> reg = build_registry([("mine", types.ModuleType("mine"), "my-dist 0.1")], entry_points=False)
    >>> reg.names("selector")
    []
    """
    return Registry(*get_plugin_manager(plugins, entry_points))


def registry(refresh: bool = False) -> Registry:
    """The process-wide :class:`Registry` (built on first use; ``refresh=True`` rebuilds)."""
    global _REGISTRY
    if _REGISTRY is None or refresh:
        _REGISTRY = Registry(*get_plugin_manager())
    return _REGISTRY


def oracle_backend(solver: str, loss) -> str:
    """:func:`dpbench.bench.trial.serving_backend` by registered names.

    Parameters
    ----------
    solver : str
        Registered solver name (``--solver``).
    loss : Loss class or instance, str or None
        The loss plugin, its registered name, or None for least squares.

    Returns
    -------
    str
        ``solver`` itself, or ``"generic"``.
    """
    if isinstance(loss, str):
        loss = registry().loss(loss)
    return serving_backend(solver, registry().solver(solver), loss)


class PluginInstances:
    """The plugin instances of one run: each (kind, name, parameters) is built once.

    Plugins hold only their validated configuration (:class:`dpbench.core.params.Configurable`), so
    one instance serves every trial of a run, whatever the order of the trials; a parallel run
    builds its own once per worker process (an instance never travels with a task).
    """

    def __init__(self):
        self._made = {}

    def get(self, kind: str, name: str, params: dict | None = None):
        """The instance of the registered ``kind`` plugin ``name`` (``"selector"``, ``"generator"``,
        ``"solver"``, ``"loss"``) with ``params``, built on first use.

        Raises
        ------
        UserInputError
            An unknown name or a refused parameter (nothing is kept then).
        """
        cls = getattr(registry(), kind)(name)
        key = (kind, name, json.dumps(params or {}, sort_keys=True, default=repr))
        made = self._made.get(key)
        if made is None or type(made) is not cls:  # a plugin re-registered under the same name
            made = self._made[key] = cls(**(params or {}))
        return made
