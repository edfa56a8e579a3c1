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

