"""The host is layered: a module imports only from its own layer or the layers below it.

docs/architecture.md describes the layers. This test walks every import of every module in
``dpbench/`` (function-level imports included, ``TYPE_CHECKING`` blocks excluded: annotations
name higher layers without importing them) and fails on an import of a higher layer.
"""

import ast
from pathlib import Path

import pytest
from helpers.paths import REPO

ROOT = REPO / "dpbench"

#: Layer of each top-level module or subpackage of dpbench (docs/architecture.md).
LAYERS = {
    "errors": 1, "problem": 1, "supports": 1, "seeding": 1, "params": 1, "base": 1,
    "preparation": 1, "selector_contract": 1, "oracle_contract": 1, "data_contract": 1, "loss_contract": 1,
    "estimation_contract": 1, "hookspecs": 1, "plugin_manager": 1,
    "score": 2, "privacy": 2,
    "trial": 3, "data_io": 3,
    "oracle": 4, "toplist": 4,
    "evaluation": 5,
    "runner": 6, "audit": 6,
    "results": 7,
    "cli": 8, "estimator": 8, "testing": 8, "__init__": 8,
}


def _unit(module: str) -> str:
    """'dpbench.runner.execute' -> 'runner'; 'dpbench' -> '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = ["dpbench", *path.relative_to(ROOT).with_suffix("").parts]
    if here[-1] == "__init__":
        here = here[:-1]
        pkg = here
    else:
        pkg = here[:-1]
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names] if mod == "dpbench" else [mod]
            for m in names:
                yield node.lineno, m
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name


def _modules():
    return sorted(p for p in ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_higher_layer(path):
    unit = path.relative_to(ROOT).parts[0].removesuffix(".py")
    assert unit in LAYERS, f"dpbench/{unit} has no layer in LAYERS (tests/api/test_layers.py, docs/architecture.md)"
    mine = LAYERS[unit]
    bad = []
    for lineno, mod in _imports(path):
        if not (mod == "dpbench" or mod.startswith("dpbench.")) or mod == "dpbench":
            if mod.startswith("dpbench_plugins"):
                bad.append(f"line {lineno}: imports the built-in plugins ({mod}); only entry points load them")
            continue
        other = _unit(mod)
        if other in LAYERS and LAYERS[other] > mine:
            bad.append(f"line {lineno}: {mod} (layer {LAYERS[other]}) from layer {mine}")
    assert not bad, f"dpbench/{path.relative_to(ROOT)}: " + "; ".join(bad)


def test_every_dpbench_module_is_small():
    """No module of the host over about 600 lines (a newcomer reads each one on its own)."""
    long = {str(p.relative_to(ROOT)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 650}
    known = {"oracle/outer_approximation.py"}  # split by the oracle work (issue 15)
    assert set(long) <= known, long
