"""The certified best-subset oracle: outer approximation, threshold enumeration.

Backends (``highs``, ``gurobi``, ``pyomo``, ``enumerate``) are plugins; the formulation,
bounds, screening, branch and bound and certification live here, once for every backend.
What runs where: enumeration of small feasible sets, branch and bound, safe screening, the
swap local search, the cuts and certification run inside dpbench; a backend solves only
the OA master MILP (:class:`MasterSolver`).

Modules (each reads on its own):

* :mod:`.constraints` - :class:`ConstraintSet`, :func:`roots`, :func:`count_feasible`,
  :func:`require_positive_lam`;
* :mod:`.cuts` - the mathematics (duality, cuts, screening), :func:`dual_cuts`, :func:`perspective_relaxation`, :class:`MasterMILP`,
  :class:`MasterResult`, :class:`MasterSolver` (the backend protocol), :func:`build_master`;
* :mod:`.bounds` - :func:`gram_row_tops`, :func:`completion_bounds`, :class:`NodeBounds`
  (node bounds and screening over one Gram-row cache);
* :mod:`.heuristics` - :class:`LocalSearch` (start and swap local search);
* :mod:`.branch_and_bound` - :class:`BranchAndBound` (optimum and threshold search),
  :data:`THRESHOLD_MARGIN`;
* :mod:`.limits` - deterministic work limits (:data:`NODE_LIMIT`, :data:`MASTER_ITERATIONS`,
  :data:`MASTER_NODE_LIMIT`), the wall-clock safety net (:data:`SAFETY_TIME_LIMIT`),
  :class:`Budget`, canonical ties (:data:`TIE_RTOL`, :func:`tie_bar`, :func:`lexmin`,
  :func:`break_ties`);
* :mod:`.options` - :class:`OracleOptions`, every option of a session in one frozen dataclass;
* :mod:`.parallel` - independent calls of a trial on forked processes or dask tasks
  (:func:`~dpbench.core.oracle.parallel.map_calls`), with the same results for any number;
* :mod:`.split` - a long search finished in parts on those processes;
* :mod:`.session` - :class:`OASession`, composing the above;
* :mod:`.solver` - :class:`OASolver` (base of the OA backends), :data:`OA_PARAMS`;
* :mod:`.threshold` - :func:`supports_below_by_calls`, :class:`ThresholdByCalls`,
  :func:`rank_threshold`.
"""

from dpbench.core.oracle.bounds import GERSHGORIN_MAX_P, NodeBounds, completion_bounds, gram_row_tops
from dpbench.core.oracle.branch_and_bound import BranchAndBound
from dpbench.core.oracle.constraints import ConstraintSet, count_feasible, require_positive_lam, roots
from dpbench.core.oracle.cuts import MasterMILP, MasterResult, MasterSolver, build_master, dual_cuts, perspective_relaxation
from dpbench.core.oracle.heuristics import LocalSearch
from dpbench.core.oracle.limits import (MASTER_ITERATIONS, MASTER_NODE_LIMIT, NODE_LIMIT, SAFETY_TIME_LIMIT, TIE_RTOL, Budget,
                     break_ties, lexmin, tie_bar)
from dpbench.core.oracle.options import OracleOptions
from dpbench.core.oracle.session import OASession
from dpbench.core.oracle.solver import OA_PARAMS, OA_SPLIT, OASolver
from dpbench.core.oracle.targets import THRESHOLD_MARGIN
from dpbench.core.oracle.threshold import ThresholdByCalls, rank_threshold, supports_below_by_calls

__all__ = ["GERSHGORIN_MAX_P", "MASTER_ITERATIONS", "MASTER_NODE_LIMIT", "NODE_LIMIT", "OA_PARAMS", "OA_SPLIT",
           "SAFETY_TIME_LIMIT", "THRESHOLD_MARGIN", "TIE_RTOL", "BranchAndBound", "Budget", "ConstraintSet",
           "LocalSearch", "MasterMILP", "MasterResult", "MasterSolver", "NodeBounds", "OASession", "OASolver", "OracleOptions",
           "ThresholdByCalls", "break_ties", "build_master", "completion_bounds", "count_feasible", "dual_cuts",
           "gram_row_tops", "lexmin", "perspective_relaxation", "rank_threshold", "require_positive_lam", "roots",
           "supports_below_by_calls", "tie_bar"]
