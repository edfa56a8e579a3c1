"""Epsilon-independent least-squares products X^T y / n and X^T X / n of the gradient-based selectors.

The gradient of L(beta) = ||y - X beta||^2 / (2n) is
``(1/n) X^T X beta - (1/n) X^T y``; the iterative selectors (``noisy-iht``, ``fw-lasso``)
compute these products once per trial in ``prepare`` (issue 26) and keep the p x p Gram matrix
only while it is small (:data:`GRAM_MAX`; at p = 10 000 it would take 800 MB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Largest p for which the p x p Gram matrix is formed (8 MB at p = 1000).
GRAM_MAX = 1000


@dataclass(frozen=True, eq=False)
class GramProducts:
    """``X^T y / n`` and, for p <= the Gram limit, ``X^T X / n`` of one trial's data.

    Attributes
    ----------
    xty : ndarray of shape (p,), float64
    gram : ndarray of shape (p, p) or (0, 0), float64
        Empty above the limit: callers then multiply by X.
    """

    xty: np.ndarray
    gram: np.ndarray


def gram_products(X, y, gram_max: int = GRAM_MAX) -> GramProducts:
    """The products of :class:`GramProducts` for data X (n, p) and y (n,).

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    gram_max : int
        Form ``X^T X / n`` only when p <= gram_max.

    Returns
    -------
    GramProducts
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    return GramProducts(X.T @ y / n, X.T @ X / n if p <= gram_max else np.empty((0, 0)))
