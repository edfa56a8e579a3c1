"""The interfaces a plugin implements, in one import: selectors, data generators, data sets, solvers.

Layer 1 (core types). The contracts live in four modules, each read on its own:

* :mod:`dpbench.selector_contract` -- :class:`Selector`, :class:`Draws`, the row guarantee
  (:func:`has_guarantee`), :data:`EXPONENTIAL_MECHANISM`, :class:`BatchLogProb`;
* :mod:`dpbench.preparation` -- typed preparations: :class:`Memo`, the per-ε
  :class:`EpsilonCache`, storing a dataclass preparation (:func:`prepared_state`);
* :mod:`dpbench.oracle_contract` -- :class:`Solver`, :class:`OracleSession`,
  :class:`OracleResult`, :class:`ThresholdResult`;
* :mod:`dpbench.data_contract` -- :class:`Generator`, :class:`Dataset`, :class:`DatasetArrays`;

and the declared parameters (:class:`Param`, :class:`Configurable`) in :mod:`dpbench.params`.
This module re-exports them all, so a plugin writes ``from dpbench.base import Selector, Param``
(or ``from dpbench import ...``). A plugin module returns subclasses of these from the hooks in
:mod:`dpbench.hookspecs`.
"""

from dpbench.data_contract import Dataset, DatasetArrays, Generator
from dpbench.oracle_contract import ORACLE_STATUSES, OracleResult, OracleSession, Solver, ThresholdResult
from dpbench.params import Configurable, Param, int_or_inf
from dpbench.preparation import EpsilonCache, Memo, prepared_from_state, prepared_state
from dpbench.problem import Problem
from dpbench.selector_contract import (AGGREGATES, DP_TYPES, EXPONENTIAL_MECHANISM, NO_GUARANTEE, PREPROCESSING,
                                REPLACE_ONE, BatchLogProb, Diagnostic, Draws, Selector, has_guarantee)

__all__ = [
    "AGGREGATES", "DP_TYPES", "EXPONENTIAL_MECHANISM", "NO_GUARANTEE", "ORACLE_STATUSES", "PREPROCESSING",
    "REPLACE_ONE", "BatchLogProb", "Configurable", "Dataset", "DatasetArrays", "Diagnostic", "Draws", "EpsilonCache",
    "Generator", "Memo", "OracleResult", "OracleSession", "Param", "Problem", "Selector", "Solver", "ThresholdResult",
    "has_guarantee", "int_or_inf", "prepared_from_state", "prepared_state",
]
