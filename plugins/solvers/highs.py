"""Solver ``highs``: the outer-approximation oracle with a HiGHS (highspy) master MILP.

Open source and without a size limit, so it is the default backend. The formulation (cuts,
safe screening, warm start, certification) is :mod:`dpbench.oa`; this module only solves
the master MILP it builds. Requires lam > 0 (see :func:`dpbench.oa.require_positive_lam`).
"""

import math

import numpy as np

from dpbench import Param, Solver, hookimpl
from dpbench.oracle.outer_approximation import MasterResult, OASession


def solve_master_highs(master, time_limit, gap):
    """Solve a :class:`dpbench.oa.MasterMILP` with highspy.

    Returns
    -------
    MasterResult
        ``bound`` is HiGHS's MIP dual bound (valid even when stopped by the time limit).
    """
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    if time_limit is not None and math.isfinite(time_limit):
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    # The master's bound is the certificate; stop it well inside the oracle's tolerance.
    h.setOptionValue("mip_rel_gap", max(gap * 0.1, 1e-12))
    h.setOptionValue("mip_abs_gap", 1e-12)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    m = master.m
    lp.num_col_ = m + 1
    lp.num_row_ = master.n_rows
    lp.col_cost_ = np.append(np.zeros(m), 1.0)
    lp.col_lower_ = master.col_lo
    lp.col_upper_ = np.where(np.isinf(master.col_hi), inf, master.col_hi)
    lp.row_lower_ = np.where(np.isinf(master.row_lo), -inf, master.row_lo)
    lp.row_upper_ = np.where(np.isinf(master.row_hi), inf, master.row_hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = master.start.astype(np.int32)
    lp.a_matrix_.index_ = master.index.astype(np.int32)
    lp.a_matrix_.value_ = master.value
    lp.a_matrix_.num_col_ = m + 1
    lp.a_matrix_.num_row_ = master.n_rows
    lp.integrality_ = [highspy.HighsVarType.kInteger] * m + [highspy.HighsVarType.kContinuous]
    h.passModel(lp)
    h.run()
    st = h.getModelStatus()
    info = h.getInfo()
    MS = highspy.HighsModelStatus
    if st == MS.kInfeasible:
        return MasterResult("infeasible", None, math.inf)
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    z = np.asarray(h.getSolution().col_value[:m]) if has_sol else None
    bound = float(info.mip_dual_bound)
    if not math.isfinite(bound):
        bound = -math.inf
    if st == MS.kOptimal:
        return MasterResult("optimal", z, bound)
    if st in (MS.kTimeLimit, MS.kInterrupt, MS.kIterationLimit, MS.kSolutionLimit):
        return MasterResult("time_limit", z, bound, f"HiGHS stopped: {h.modelStatusToString(st)}")
    return MasterResult("error", z, -math.inf, f"HiGHS status {h.modelStatusToString(st)}")


OA_PARAMS = {
    "screen": Param(True, "safe screening of features that cannot enter an optimal support", bool),
    "max_cut_mb": Param(200.0, "memory cap (MB) of the global cut pool kept across calls", float),
    "master_cuts": Param(40, "pool cuts seeded into each master MILP (strongest at the incumbent)", int),
    "enum_limit": Param(1_500_000, "calls with at most this many feasible supports are enumerated exactly", int),
    "leaf_limit": Param(20_000, "branch-and-bound nodes with at most this many completions are scored "
                        "exhaustively instead of branching (tests and tuning)", int),
    "gershgorin": Param(True, "Schur-complement/Gershgorin ridge bound in the branch and bound of overlap "
                        "calls (dpbench.oa.completion_bounds); off = cut bounds only (ablation)", bool),
    "default_time_limit": Param(300.0, "seconds per oracle call when the caller gives no time limit "
                                "(the call then returns status time_limit, never an uncertified 'optimal')",
                                float),
}


class Highs(Solver):
    """Outer approximation with a HiGHS master (exact, certified; lam > 0)."""

    name = "highs"
    summary = "outer approximation + safe screening, HiGHS MILP master; open source, no size limit (default)"
    handles_lam_zero = False
    params = dict(OA_PARAMS)

    def session(self, score, s):
        return OASession(score, s, "highs", solve_master_highs, **self.config)


@hookimpl
def dpbench_solvers():
    return [Highs]
