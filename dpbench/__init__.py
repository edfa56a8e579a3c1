"""dpbench: benchmark differentially private best-subset (variable) selection.

The user's door: :func:`select` and :class:`DPSubsetSelector` (one private selection from
Python), :func:`load_results` and :func:`summarize` (a results database as a table), and the
errors. Plugin authors import from :mod:`dpbench.api`; the command line is ``dpbench``
(:mod:`dpbench.cli`). The names are imported on first use, so that ``import dpbench.cli``
stays cheap and a Ctrl-C during start-up is handled by the command line.
"""

from importlib import import_module

from dpbench.core.version import __version__

#: public name -> module that defines it
_EXPORTS = {
    "select": "sklearn", "DPSubsetSelector": "sklearn", "SelectionResult": "sklearn",
    "load_results": "bench.results.frame", "summarize": "bench.results.summary",
    "DPBenchError": "core.errors", "UnknownNameError": "core.errors", "UserInputError": "core.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dpbench' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
