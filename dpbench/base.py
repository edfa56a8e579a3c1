"""The interfaces a plugin implements, in one import: selectors, data generators, data sets, solvers.

Layer 1 (core types). The contracts live in three modules, each read on its own:

* :mod:`dpbench.selector_contract` -- :class:`Selector`, :class:`Draws`, the row guarantee
  (:func:`has_guarantee`), :class:`Memo`, :data:`EXPONENTIAL_MECHANISM`;
* :mod:`dpbench.oracle_contract` -- :class:`Solver`, :class:`OracleSession`,
  :class:`OracleResult`, :class:`ThresholdResult`;
* :mod:`dpbench.data_contract` -- :class:`Generator`, :class:`Dataset`, :class:`DatasetArrays`;

and the declared parameters (:class:`Param`, :class:`Configurable`) in :mod:`dpbench.params`.
This module re-exports them all, so a plugin writes ``from dpbench.base import Selector, Param``
(or ``from dpbench import ...``). A plugin module returns subclasses of these from the hooks in
:mod:`dpbench.hookspecs`.
"""

from .data_contract import Dataset, DatasetArrays, Generator
from .oracle_contract import ORACLE_STATUSES, OracleResult, OracleSession, Solver, ThresholdResult
from .params import Configurable, Param, int_or_inf
from .problem import Problem
from .selector_contract import (DP_TYPES, EXPONENTIAL_MECHANISM, NO_GUARANTEE, PREPROCESSING, REPLACE_ONE, Draws,
                                Memo, Selector, dict_state, has_guarantee)

__all__ = [
    "DP_TYPES", "EXPONENTIAL_MECHANISM", "NO_GUARANTEE", "ORACLE_STATUSES", "PREPROCESSING", "REPLACE_ONE",
    "Configurable", "Dataset", "DatasetArrays", "Draws", "Generator", "Memo", "OracleResult", "OracleSession",
    "Param", "Problem", "Selector", "Solver", "ThresholdResult", "dict_state", "has_guarantee", "int_or_inf",
]
