"""The tree is the layer table: imports only go down, never round in a circle, and plugins use dpbench.api only.

docs/architecture.md draws the layers. This test walks every import of every module in
``dpbench/`` and ``plugins/`` -- function-level imports included; only ``TYPE_CHECKING`` blocks
are left out, since annotations may name a higher layer without importing it -- and fails on

* an import of a higher layer (:data:`LAYERS`, lowest first);
* an import cycle among the modules of ``dpbench/``, whatever the layers;
* a plugin importing anything of dpbench but :mod:`dpbench.api`, or another plugin (a plugin
  registered as a package may import its own modules);
* a module of dpbench over 600 lines.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "dpbench"
PLUGINS = REPO / "plugins"

#: The layers, lowest first: a module may import its own layer and the layers above it in this list.
#: Each entry is a dotted prefix under ``dpbench``; a module belongs to its longest matching prefix.
LAYERS = [
    ["core.errors", "core.version", "core.problem", "core.supports", "core.seeding", "core.params",
     "core.preparation", "core"],
    ["core.contracts"],
    ["core.datafiles", "core.packaged", "core.score", "core.privacy"],
    ["core.oracle", "core.toplist"],
    ["hookspecs"],
    ["bench.trial"],
    ["bench.registry", "api"],
    ["bench.datasets", "bench.evaluation"],
    ["bench.config", "bench.keys", "bench.selection", "bench.signals", "bench.backends", "bench.worker", "bench.run",
     "bench.uncertified", "bench.audit", "bench"],
    ["bench.results"],
    ["cli", "testing", "sklearn", "__init__"],
]
LEVEL = {prefix: i for i, layer in enumerate(LAYERS) for prefix in layer}
MAX_LINES = 600


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str):
    """(line, imported module) for every import outside TYPE_CHECKING blocks, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # ``from dpbench.core import toplist`` imports the submodule only
                yield node.lineno, f"{mod}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _host_modules():
    return {_module_name(p, ROOT, "dpbench"): p for p in sorted(ROOT.rglob("*.py"))}


HOST = _host_modules()


def _resolve(mod: str) -> str | None:
    """The host module an import names (``dpbench.x.y`` may be a module or a name in ``dpbench.x``)."""
    while mod.startswith("dpbench"):
        if mod in HOST:
            return mod
        mod = mod.rpartition(".")[0]
    return None


def _edges(module: str):
    for lineno, mod in _imports(HOST[module], module):
        target = _resolve(mod)
        if target is not None and target != module:
            yield lineno, target


def _level(module: str) -> int:
    rest = module.removeprefix("dpbench.") if module != "dpbench" else "__init__"
    while rest:
        if rest in LEVEL:
            return LEVEL[rest]
        rest = rest.rpartition(".")[0]
    raise AssertionError(f"{module} has no layer in LAYERS (tests/test_layers.py, docs/architecture.md)")


@pytest.mark.parametrize("module", sorted(HOST))
def test_no_module_imports_a_higher_layer(module):
    mine = _level(module)
    bad = [f"line {lineno}: {target} (layer {_level(target)})" for lineno, target in _edges(module)
           if _level(target) > mine]
    bad += [f"line {lineno}: {mod} (only entry points load plugins)" for lineno, mod in _imports(HOST[module], module)
            if mod.startswith("dpbench_plugins")]
    assert not bad, f"{module} (layer {mine}) imports higher layers: " + "; ".join(bad)


def test_no_import_cycle():
    graph = {m: sorted({t for _, t in _edges(m)} - {m}) for m in HOST}
    # Tarjan's strongly connected components; any component of two or more modules is a cycle.
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles (function-level imports count): " + " | ".join(" <-> ".join(c) for c in cycles)


def _plugin_of(module: str) -> str:
    """The entry-point module or package a plugin module belongs to (``dpbench_plugins.selectors.swaps``)."""
    parts = module.split(".")
    return ".".join(parts[:3])


@pytest.mark.parametrize("path", sorted(PLUGINS.rglob("*.py")), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugins_import_only_the_public_api(path):
    module = _module_name(path, PLUGINS, "dpbench_plugins")
    own = _plugin_of(module)

    def allowed(mod):
        if mod.startswith("dpbench_plugins"):
            return mod.startswith(own + ".")  # a plugin package's own modules
        return not (mod == "dpbench" or mod.startswith("dpbench.")) or mod == "dpbench.api" or mod.startswith("dpbench.api.")

    bad = [f"line {lineno}: {mod}" for lineno, mod in _imports(path, module) if not allowed(mod)]
    assert not bad, f"plugins/{path.relative_to(PLUGINS)} imports more than dpbench.api: " + "; ".join(bad)


def test_the_public_api_names_exist():
    import dpbench.api

    missing = [name for name in dpbench.api.__all__ if not hasattr(dpbench.api, name)]
    assert not missing, missing


def test_every_dpbench_module_is_small():
    """No module of the host over 600 lines (a newcomer reads each one on its own)."""
    long = {m: n for m, p in HOST.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long
