"""Small problems with exact ties and the validity check shared by the relaxation tests."""

import numpy as np

#: Relative tolerance of a bound against the brute-force optimum.
TOL = 1e-9


def tied_problem(seed, n=12, p=8, dup=True):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, p))
    if dup:
        X[:, 1] = X[:, 0]  # exact tie: supports differing by 0 <-> 1 score the same
    beta = np.zeros(p)
    beta[rng.choice(p, 3, replace=False)] = rng.normal(0, 1, 3)
    y = np.clip(X @ beta + 0.3 * rng.normal(size=n), -0.5, 0.5)
    return X, y


def assert_per_feature_valid(per, S, vals, ok, label=""):
    """per[j] bounds the best feasible support (``ok``) containing j, and is inf where none does."""
    opt = vals[ok].min()
    for j in range(per.size):
        has = ok & (S == j).any(axis=1)
        if has.any():
            assert per[j] <= vals[has].min() + TOL * max(1.0, opt), (label, j)
        else:
            assert per[j] == np.inf, (label, j)

