"""Solver ``pyomo``: the outer-approximation master of :mod:`dpbench.core.oracle.cuts` as a Pyomo model.

Any MILP solver Pyomo can find solves it: ``appsi_highs`` (default), ``gurobi_direct``,
``cbc``, ``glpk``, ``scip``, ... (param ``solver``). Requires lam > 0. The formulation,
screening and certification are shared with the ``highs`` and ``gurobi`` backends; only the
master is built here.
"""

import math

import numpy as np

from dpbench.api import MasterResult, OA_PARAMS, OA_SPLIT, OASolver, Param, SolverLimitError, hookimpl

#: Solvers probed when listing what is available (in the error message).
KNOWN = ("appsi_highs", "highs", "gurobi_direct", "gurobi_persistent", "appsi_gurobi", "cbc", "glpk",
         "scip", "cplex_direct", "xpress_direct")


def available_solvers() -> list[str]:
    """Names in :data:`KNOWN` that Pyomo reports as available."""
    import pyomo.environ as pyo

    out = []
    for name in KNOWN:
        try:
            if pyo.SolverFactory(name).available(exception_flag=False):
                out.append(name)
        except Exception:  # noqa: BLE001 - a broken interface just counts as unavailable
            pass
    return out


#: Option names (time, gap, nodes, threads) per solver family; None where the solver has none.
_OPTIONS = {"gurobi": ("TimeLimit", "MIPGap", "NodeLimit", "Threads"), "cbc": ("sec", "ratio", "maxNodes", "threads"),
            "glpk": ("tmlim", "mipgap", None, None), "scip": ("limits/time", "limits/gap", "limits/nodes", None),
            "highs": ("time_limit", "mip_rel_gap", "mip_max_nodes", "threads")}


def _set_limits(opt, name, time_limit, gap, node_limit=None):
    """Gap, the deterministic node limit and one thread where the solver has them; the
    time limit only as the safety net."""
    tl = None if time_limit is None or not math.isfinite(time_limit) else max(float(time_limit), 1e-3)
    nodes = None if node_limit is None else int(min(node_limit, 2**31 - 1))
    if name.startswith("appsi_"):
        opt.config.mip_gap = max(gap * 0.1, 1e-12)
        if tl is not None:
            opt.config.time_limit = tl
        if "highs" in name:
            opt.highs_options = {"threads": 1, **({"mip_max_nodes": nodes} if nodes is not None else {})}
        elif "gurobi" in name:
            opt.gurobi_options = {"Threads": 1, **({"NodeLimit": nodes} if nodes is not None else {})}
        return
    for key, (tkey, gkey, nkey, thkey) in _OPTIONS.items():
        if key in name:
            if tl is not None:
                opt.options[tkey] = int(math.ceil(tl)) if key == "glpk" else tl
            opt.options[gkey] = max(gap * 0.1, 1e-12)
            if nkey is not None and nodes is not None:
                opt.options[nkey] = nodes
            if thkey is not None:
                opt.options[thkey] = 1


def solve_master_pyomo(name, master, time_limit, gap, node_limit=None):
    """Build the master as a Pyomo ConcreteModel and solve it with SolverFactory(name)."""
    import pyomo.environ as pyo
    from pyomo.opt import TerminationCondition as TC

    m = master.m
    model = pyo.ConcreteModel()
    model.z = pyo.Var(range(m), domain=pyo.Binary)
    for i in range(m):
        model.z[i].setlb(master.col_lo[i])
        model.z[i].setub(master.col_hi[i])
    model.eta = pyo.Var(bounds=(master.col_lo[m], None))
    model.obj = pyo.Objective(expr=model.eta, sense=pyo.minimize)
    model.rows = pyo.ConstraintList()
    var = [model.z[i] for i in range(m)] + [model.eta]
    for idx, vals, lo, hi in master.dense_rows():
        if not len(idx):  # Pyomo refuses constant constraints: decide them here
            if lo <= 0 <= hi:
                continue
            return MasterResult("infeasible", None, math.inf)
        expr = pyo.quicksum(float(v) * var[i] for i, v in zip(idx.tolist(), vals.tolist()))
        model.rows.add((None if np.isinf(lo) else float(lo), expr, None if np.isinf(hi) else float(hi)))
    opt = pyo.SolverFactory(name)
    _set_limits(opt, name, time_limit, gap, node_limit)
    res = opt.solve(model, load_solutions=False)
    tc = res.solver.termination_condition
    if tc in (TC.infeasible, TC.infeasibleOrUnbounded):
        return MasterResult("infeasible", None, math.inf)
    z = None
    if len(getattr(res, "solution", [])) > 0 or tc == TC.optimal:
        try:
            if hasattr(model, "solutions") and len(res.solution) > 0:
                model.solutions.load_from(res)
            else:
                opt.load_vars() if hasattr(opt, "load_vars") else None
            z = np.array([pyo.value(model.z[i]) for i in range(m)], dtype=float)
        except Exception:  # noqa: BLE001 - no loadable solution
            z = None
    lb = res.problem.lower_bound
    bound = float(lb) if lb is not None and np.isfinite(float(lb)) else -math.inf
    if tc == TC.optimal:
        if not np.isfinite(bound) and z is not None:
            bound = float(pyo.value(model.eta))
        return MasterResult("optimal", z, bound)
    if tc in (TC.maxTimeLimit, TC.interrupted):
        return MasterResult("time_limit", z, bound, f"{name}: {tc}")
    if tc in (TC.maxIterations, TC.maxEvaluations):
        return MasterResult("work_limit", z, bound, f"{name}: {tc}")
    return MasterResult("error", z, -math.inf, f"{name}: {tc}")


class Pyomo(OASolver):
    """Outer approximation with the master built in Pyomo (lam > 0)."""

    name = "pyomo"
    summary = f"outer approximation, master built in Pyomo; solver chosen by param (appsi_highs default); {OA_SPLIT}"
    params = {"solver": Param("appsi_highs", "Pyomo solver name: appsi_highs, gurobi_direct, cbc, glpk, scip, ...",
                              str),
              **OA_PARAMS}

    def master_solver(self):
        import pyomo.environ as pyo

        name = self.config["solver"]
        try:
            ok = pyo.SolverFactory(name).available(exception_flag=False)
        except Exception:  # noqa: BLE001
            ok = False
        if not ok:
            found = available_solvers()
            raise SolverLimitError(
                f"solver 'pyomo': Pyomo solver {name!r} is not available; Pyomo finds: "
                f"{', '.join(found) or '(none)'}; choose one with solver=<name> or use --solver highs")
        return lambda m, tl, gap, nodes=None: solve_master_pyomo(name, m, tl, gap, nodes)


@hookimpl
def dpbench_solvers():
    return [Pyomo]
