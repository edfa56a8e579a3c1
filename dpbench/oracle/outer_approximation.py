"""Outer approximation (OA) for best-subset selection: the formulation, once for every backend.

design.md section 5 (Bertsimas & Van Parys 2020; Algorithm 2 of the NeurIPS 2025 paper).
With binary ``z`` (``z_i = 1`` iff feature i is in the support),

    f(z) = min_beta ||y - X beta||^2 + lam sum_i beta_i^2 / z_i   s.t. ||beta||^2 <= r^2

equals the shared score R(S, D) of the support S = {i : z_i = 1} and is convex in
``z in [0, 1]^p`` (perspective of the ridge term). Backends only solve the *master* MILP
the package builds (:class:`~dpbench.oracle.cuts.MasterMILP`); screening, cuts, the
heuristic, the status logic and certification live in dpbench. This module states the
mathematics once and re-exports the names of the modules that implement it:
:mod:`.constraints`, :mod:`.cuts`, :mod:`.bounds`, :mod:`.heuristics`,
:mod:`.branch_and_bound`, :mod:`.limits`, :mod:`.session`, :mod:`.solver`.

Duality (why the cuts are valid)
--------------------------------
Writing ``||y - X beta||^2 = max_alpha 2 alpha^T (y - X beta) - ||alpha||^2`` and
dualising ``||beta||^2 <= r^2`` with ``mu >= 0`` gives, for **every** ``alpha in R^n`` and
``mu >= 0`` (weak duality),

    f(z) >= h(z; alpha, mu) = 2 alpha^T y - ||alpha||^2 - mu r^2
                              - sum_i z_i (x_i^T alpha)^2 / (lam + mu z_i),

with equality at the optimal pair: ``alpha* = y - X beta*`` (the residual) and ``mu*`` the
multiplier of the l2 constraint, scaled as in ``(X_S^T X_S + (lam + mu) I) beta_S = X_S^T y``
(the secular equation of :func:`dpbench.score.solve_blocks`). Danskin's theorem gives the
gradient of design.md section 5,

    d f / d z_i = -lam (x_i^T alpha*)^2 / (lam + mu* z_i)^2,

finite at ``z_i = 0`` (:func:`perspective_relaxation` computes both; the tests check it
against finite differences). The OA cut ``eta >= f(z_k) + grad f(z_k)^T (z - z_k)`` is the
tangent of ``h(.; alpha*, mu*)`` at ``z_k``. Because ``h`` is convex and separable, on
*binary* points the chord ``z_i (x_i^T alpha)^2 / (lam + mu)`` dominates the tangent, so we
use the (never weaker) binary cut

    eta >= c_k - sum_i w_{k,i} z_i,   c_k = 2 alpha^T y - ||alpha||^2 - mu r^2,
                                      w_{k,i} = (x_i^T alpha)^2 / (lam + mu),

which is exact at ``z_k`` (complementary slackness) and a valid lower bound on R(S, D) for
every support S whatever (alpha, mu) it was built from: rounding in beta* weakens it but
cannot invalidate it. Cuts depend on the data only, so a session keeps them across calls.

Safe screening
--------------
For one cut and a feature j, ``min { c_k - sum_{i in S} w_{k,i} : j in S, S feasible }``
over the cardinality, overlap and fixed-in/-out constraints (ignoring no-good cuts, a
relaxation) is solved exactly by a greedy choice of the largest weights in each overlap
group. The maximum over several cuts, ``LB_j``, bounds R(S) for every feasible support
containing j. If ``LB_j`` exceeds the incumbent's score, no optimal support contains j and
z_j is fixed to 0. The master then runs on the surviving candidates C, and the certified
lower bound of the **full** problem is ``min(master bound over C, min_{j screened} LB_j)``.

Requires lam > 0: as lam -> 0 the weights ``(x_i^T alpha)^2 / lam`` of non-selected
features blow up and the relaxation says nothing.
"""

from dpbench.oracle.bounds import GERSHGORIN_MAX_P, NodeBounds, completion_bounds, gram_row_tops
from dpbench.oracle.branch_and_bound import THRESHOLD_MARGIN, BranchAndBound
from dpbench.oracle.constraints import ConstraintSet, count_feasible, require_positive_lam, roots
from dpbench.oracle.cuts import MasterMILP, MasterResult, MasterSolver, build_master, dual_cuts, perspective_relaxation
from dpbench.oracle.heuristics import LocalSearch
from dpbench.oracle.limits import (MASTER_ITERATIONS, MASTER_NODE_LIMIT, NODE_LIMIT, SAFETY_TIME_LIMIT, TIE_RTOL, Budget,
                     break_ties, lexmin, tie_bar)
from dpbench.oracle.session import OASession
from dpbench.oracle.solver import OA_PARAMS, OA_SPLIT, OASolver

__all__ = ["GERSHGORIN_MAX_P", "MASTER_ITERATIONS", "MASTER_NODE_LIMIT", "NODE_LIMIT", "OA_PARAMS", "OA_SPLIT",
           "SAFETY_TIME_LIMIT", "THRESHOLD_MARGIN", "TIE_RTOL", "BranchAndBound", "Budget", "ConstraintSet",
           "LocalSearch", "MasterMILP", "MasterResult", "MasterSolver", "NodeBounds", "OASession", "OASolver",
           "break_ties", "build_master", "completion_bounds", "count_feasible", "dual_cuts", "gram_row_tops",
           "lexmin", "perspective_relaxation", "require_positive_lam", "roots", "tie_bar"]
