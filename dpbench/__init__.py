"""dpbench: benchmark differentially private best-subset (variable) selection.

The public names below are re-exported from the layers that define them
(docs/architecture.md) and imported on first use, so that ``import dpbench.cli`` stays cheap
and a Ctrl-C during start-up is handled by the command line.
"""

from importlib import import_module

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    "DP_TYPES": "base", "REPLACE_ONE": "base", "Dataset": "base", "DatasetArrays": "base", "Diagnostic": "base",
    "Draws": "base",
    "Generator": "base", "OracleResult": "base", "OracleSession": "base", "Param": "base", "Selector": "base",
    "Solver": "base",
    "Trial": "trial",
    "DPBenchError": "errors", "UnknownNameError": "errors", "UserInputError": "errors",
    "hookimpl": "hookspecs",
    "Problem": "problem", "as_support": "problem",
    "RidgeScore": "score",
    "sensitivity": "privacy.sensitivity",
    "select": "estimator", "DPSubsetSelector": "estimator", "SelectionResult": "estimator",
    "load_results": "results.frame", "summarize": "results.summary",
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
