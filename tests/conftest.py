"""Fixtures shared by the whole test tree.

The tree mirrors the layers (``docs/architecture.md``): ``core/`` (errors, supports, score,
privacy), ``oracle/``, ``bench/`` (trial, runner, grids, evaluation, results, audit), ``cli/``,
``plugins/`` (one file per selector, solver, generator, data set, loss or estimator family),
``integration/`` (whole workflows, the golden run, packaging, operations, fuzz and fault
injection) and ``api/`` (the layer rules and the public conformance kit). Helper functions used
by several files are in ``tests/helpers/`` (importable as ``helpers``: pytest's ``pythonpath``).
"""

import pytest

from dpbench.bench.registry import Entry, registry


@pytest.fixture
def register_selectors(monkeypatch):
    """``register_selectors(*classes)``: add selector classes to the registry for this test only.

    Each class is registered under its ``name`` exactly as an entry point would register it
    (``Entry(name, cls, "tests", "tests")``); the registry is restored when the test ends.
    """
    def register(*classes):
        entries = registry().entries["selector"]
        for cls in classes:
            monkeypatch.setitem(entries, cls.name, Entry(cls.name, cls, "tests", "tests"))

    return register
