"""Reference supports for real data, where no true support exists (design.md 4.7, section 7).

``bss``: the certified non-private best subset of the shared score (the default; it is the
mode of every exponential-mechanism selector). ``lasso``: the s largest |coefficients| at
the first point of the Lasso path with at least s non-zeros (the non-private reference of
swope2024). ``sis``: the s largest |x_j^T y| (sure independence screening).
All are computed on the same clipped data the selectors see.
"""

from __future__ import annotations

import numpy as np

from ..trial import Trial
from ..errors import UserInputError

REFERENCES = ("bss", "lasso", "sis")


def top_s(values, s: int) -> np.ndarray:
    """Indices of the s largest entries of ``values`` (ties broken by lower index), sorted."""
    order = np.lexsort((np.arange(len(values)), -np.asarray(values)))
    return np.sort(order[:s]).astype(np.int64)


def lasso_top_s(X, y, s: int) -> np.ndarray:
    """Top-s |coefficients| at the first Lasso-path point with >= s non-zeros (scikit-learn).

    Parameters
    ----------
    X : ndarray (n, p); y : ndarray (n,); s : int

    Returns
    -------
    ndarray of shape (s,), sorted indices.
    """
    from sklearn.linear_model import lasso_path

    _, coefs, _ = lasso_path(X, y, n_alphas=200, eps=1e-4)
    nnz = (coefs != 0).sum(axis=0)
    k = int(np.argmax(nnz >= s)) if np.any(nnz >= s) else coefs.shape[1] - 1
    return top_s(np.abs(coefs[:, k]), s)


def compute_reference(kind: str, trial: Trial) -> np.ndarray:
    """The reference support of ``kind`` for this trial's (clipped) data.

    Raises
    ------
    UserInputError
        Unknown kind, or a bss reference the solver could not certify.
    """
    X, y, s = trial.problem.X, trial.problem.y, trial.s
    if kind == "sis":
        return top_s(np.abs(X.T @ y), s)
    if kind == "lasso":
        return lasso_top_s(X, y, s)
    if kind == "bss":
        res = trial.optimum()
        if not res.certified or res.support is None:
            raise UserInputError(f"the bss reference could not be certified by solver {trial.solver!r} "
                                 f"(status {res.status}); use --reference lasso or sis, or another --solver")
        return np.asarray(res.support, dtype=np.int64)
    raise UserInputError(f"unknown reference {kind!r}; use one of {', '.join(REFERENCES)} (or true for simulations)")
