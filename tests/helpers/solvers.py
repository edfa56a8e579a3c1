"""The oracle backends available on this machine and the small problems the oracle tests share."""

import math

import numpy as np
import pytest

from dpbench.core.score import RidgeScore


def _has_gurobi():
    try:
        import gurobipy as gp

        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
        return True
    except Exception:  # noqa: BLE001
        return False


def _has_pyomo_highs():
    try:
        import pyomo.environ as pyo

        return bool(pyo.SolverFactory("appsi_highs").available(exception_flag=False))
    except Exception:  # noqa: BLE001
        return False


HAS_GUROBI = _has_gurobi()


HAS_PYOMO = _has_pyomo_highs()


#: Marks of the tests that need an optional backend.
GUROBI = pytest.mark.skipif(not HAS_GUROBI, reason="no gurobi")
PYOMO = pytest.mark.skipif(not HAS_PYOMO, reason="pyomo appsi_highs unavailable")

BACKENDS = [
    pytest.param(("highs", {}), id="highs"),
    pytest.param(("pyomo", {}), id="pyomo-appsi_highs", marks=PYOMO),
    pytest.param(("gurobi", {}), id="gurobi-oa", marks=GUROBI),
    pytest.param(("gurobi", {"formulation": "misocp"}), id="gurobi-misocp", marks=GUROBI),
]


def make_problem(kind, seed, n=40, p=10, lam=5.0, r=1.1):
    """Clipped small problem: 'indep', 'corr' (Toeplitz rho = 0.9) or 'ties' (near-duplicate columns)."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, p))
    if kind == "corr":
        X = np.empty_like(Z)
        X[:, 0] = Z[:, 0]
        for j in range(1, p):
            X[:, j] = 0.9 * X[:, j - 1] + math.sqrt(1 - 0.81) * Z[:, j]
    elif kind == "ties":
        X = Z.copy()
        X[:, 1] = X[:, 0] + 1e-7 * rng.standard_normal(n)  # near-tie between features 0 and 1
        X[:, 3] = X[:, 2] * (1 + 1e-9)
    else:
        X = Z
    beta = np.zeros(p)
    beta[[0, 2, 4]] = 1 / math.sqrt(3)
    y = X @ beta + 0.5 * rng.standard_normal(n)
    X, y = np.clip(X, -0.5, 0.5), np.clip(y, -0.5, 0.5)
    return RidgeScore(X, y, lam=lam, r=r)



def noise_problem(seed, lam, n=30, p=18):
    """y independent of X: many supports score alike, so branch-and-bound trees are deep and wide."""
    rng = np.random.default_rng(seed)
    X = np.clip(0.3 * rng.standard_normal((n, p)), -0.5, 0.5)
    y = np.clip(0.3 * rng.standard_normal(n), -0.5, 0.5)
    return RidgeScore(X, y, lam=lam, r=np.inf)


def level_nodes_match_brute_force(solve, S, sc, S1, levels):
    """Assert that ``solve(overlap=(S1, s - t))`` is certified with the canonical brute-force minimum
    of each overlap level t in ``levels`` (S, sc: every support and its score); return the nodes."""
    from dpbench.core.oracle.limits import TIE_RTOL, canonical_minimum

    s = S.shape[1]
    nodes = []
    for t in levels:
        lvl = (s - np.isin(S, S1).sum(axis=1)) == t
        want_S, want_v = canonical_minimum(S[lvl], sc[lvl])
        res = solve(overlap=(S1, s - t))
        assert res.status == "optimal"
        np.testing.assert_array_equal(np.sort(res.support), want_S)
        np.testing.assert_allclose(res.objective, want_v, rtol=TIE_RTOL)
        nodes.append(res.iterations)
    return nodes
