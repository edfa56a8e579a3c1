"""Plugins read a trial only through the TrialView protocol, and the runner's Trial satisfies it."""

import ast
from pathlib import Path

import numpy as np
import pytest

from dpbench.api import Problem, TrialView
from dpbench.bench.registry import PluginInstances
from dpbench.bench.trial import Trial

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


def _members(protocol) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n, v in vars(protocol).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))}
    return names


def test_the_trial_satisfies_the_protocol():
    trial = Trial(Problem(np.eye(4, 3), np.ones(4), 1), instances=PluginInstances())
    assert isinstance(trial, TrialView)
    missing = [m for m in _members(TrialView) if not hasattr(trial, m)]
    assert not missing, missing


@pytest.mark.parametrize("path", sorted(PLUGINS.rglob("*.py")), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugins_read_only_the_trial_view(path):
    allowed = _members(TrialView)
    used = {(node.lineno, node.attr) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "trial"}
    bad = sorted(f"line {line}: trial.{attr}" for line, attr in used if attr not in allowed)
    assert not bad, f"plugins/{path.relative_to(PLUGINS)} reads more of a trial than TrialView offers: {bad}"
