"""Solver ``highs``: the outer-approximation oracle with a HiGHS (highspy) master MILP.

Open source and without a size limit, so it is the default backend. The formulation (cuts,
safe screening, warm start, branch and bound, certification) and the parameters are
:class:`dpbench.core.oracle.cuts.OASolver`; this module only solves the master MILP it builds. Requires lam > 0 (see :func:`dpbench.core.oracle.cuts.require_positive_lam`).
"""

import math

import numpy as np

from dpbench.api import MasterResult, OA_SPLIT, OASolver, hookimpl


def solve_master_highs(master, time_limit, gap, node_limit=None):
    """Solve a :class:`dpbench.core.oracle.cuts.MasterMILP` with highspy.

    One thread (HiGHS's MIP is then deterministic); ``node_limit`` is HiGHS's
    ``mip_max_nodes``, ``time_limit`` only the safety net.

    Returns
    -------
    MasterResult
        ``bound`` is HiGHS's MIP dual bound (valid even when stopped by a limit). Status
        ``"work_limit"`` for a node/iteration/solution limit, ``"time_limit"`` for the clock.
    """
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    if time_limit is not None and math.isfinite(time_limit):
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(min(node_limit, 2**31 - 1)))
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
    if st in (MS.kTimeLimit, MS.kInterrupt):
        return MasterResult("time_limit", z, bound, f"HiGHS stopped: {h.modelStatusToString(st)}")
    if st in (MS.kIterationLimit, MS.kSolutionLimit):
        return MasterResult("work_limit", z, bound, f"HiGHS stopped: {h.modelStatusToString(st)}")
    return MasterResult("error", z, -math.inf, f"HiGHS status {h.modelStatusToString(st)}")


class Highs(OASolver):
    """Outer approximation with a HiGHS master (exact, certified; lam > 0)."""

    name = "highs"
    summary = f"outer approximation + safe screening, HiGHS MILP master; open source, no size limit (default); {OA_SPLIT}"

    def master_solver(self):
        return solve_master_highs


@hookimpl
def dpbench_solvers():
    return [Highs]
