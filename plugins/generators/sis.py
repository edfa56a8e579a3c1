"""Generators ``sis-w1`` and ``sis-w1w2``: the synthetic designs of section 3 of swope2024-dp-sis.

* ``sis-w1``: X ~ N(0, I_p) (n rows), ``y = X w_1 + e`` with ``w_1 = (1,..,1, 0,..,0)``
  (ones on the first s features), ``e_i ~ N(0, 0.1)``.
* ``sis-w1w2``: the same, except that a tenth of the rows ("outliers") take their response
  from ``w_2 = (0,..,0, 1,..,1)`` (ones on the last s features).

The paper's defaults are n = p = 100, s = 5. Its "N(0, 0.1)" does not say whether 0.1 is
the variance or the standard deviation; we read it as the variance (the N(mean, variance)
convention, and the same paper writes N(0, 1.5 I) for a covariance in equation 5), i.e.
standard deviation sqrt(0.1) ~ 0.32. Either reading gives a signal-to-noise ratio ||w_1||^2
/ sigma^2 of 50 or 500, so figure 1's conclusion does not depend on it; ``noise_var``
changes it. The paper generates rows 91-100 from w_2; rows are i.i.d., so which rows are
outliers only matters to a selector that uses row order (``sampagg`` with shuffle=false);
``outlier_rows`` chooses between every tenth row (default) and the last tenth.
The true support is the s features of w_1 (indices 0..s-1).
"""

import numpy as np

from dpbench.api import Generator, Param, Problem, UserInputError, hookimpl


def sis_design(rng: np.random.Generator, n: int, p: int, s: int, noise_var: float,
               outliers: str | None = None):
    """Draw (X, y, true_support) of the swope2024 section-3 design.

    Parameters
    ----------
    rng : numpy.random.Generator
    n, p, s : int
        Rows, features, ones in w_1 (and w_2); ``2 s <= p`` when there are outliers.
    noise_var : float
        Variance of the Gaussian noise.
    outliers : {None, "every-tenth", "last"}
        None: all rows from w_1 (W1). Otherwise ``floor(n / 10)`` rows from w_2 (W1/W2):
        rows 9, 19, 29, ... or the last ``floor(n / 10)`` rows.

    Returns
    -------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    support : ndarray of shape (s,), int64
    """
    if not 1 <= s < p:
        raise UserInputError(f"sparsity level s = {s} must satisfy 1 <= s < p = {p}")
    if n < 2:
        raise UserInputError(f"n = {n}: need at least 2 rows")
    if not noise_var >= 0:
        raise UserInputError(f"noise_var = {noise_var} must be non-negative")
    X = rng.standard_normal((n, p))
    support = np.arange(s, dtype=np.int64)
    y = X[:, :s].sum(axis=1)
    if outliers is not None:
        if 2 * s > p:
            raise UserInputError(f"w_1 and w_2 put ones on the first and last s features: need 2s <= p "
                                 f"(got s = {s}, p = {p})")
        n_out = n // 10
        if outliers == "every-tenth":
            rows = np.arange(9, 10 * n_out, 10)
        elif outliers == "last":
            rows = np.arange(n - n_out, n)
        else:
            raise UserInputError(f"outlier_rows = {outliers!r}; use 'every-tenth' or 'last'")
        y[rows] = X[rows, p - s:].sum(axis=1)
    y = y + np.sqrt(noise_var) * rng.standard_normal(n)
    return X, y, support


class SisW1(Generator):
    """swope2024 section 3, experiment W1: X ~ N(0, I), w_1 = ones on the first s features."""

    name = "sis-w1"
    summary = "swope2024 sec. 3 W1: X ~ N(0,I), w1 = ones on the first s features, noise N(0, 0.1)"
    params = {
        "n": Param(100, "number of rows", int),
        "p": Param(100, "number of features", int),
        "s": Param(5, "ones in w1 (sparsity level)", int),
        "noise_var": Param(0.1, "noise variance (the paper's N(0, 0.1), read as a variance)", float,
                           interval=(0, None, "left")),
    }

    def generate(self, rng):
        c = self.config
        X, y, support = sis_design(rng, c["n"], c["p"], c["s"], c["noise_var"])
        return Problem(X, y, c["s"], true_support=support, name=self.name, provenance=self.setting())


class SisW1W2(Generator):
    """swope2024 section 3, experiment W1/W2: as W1 with a tenth of the rows from w_2 (outliers)."""

    name = "sis-w1w2"
    summary = "swope2024 sec. 3 W1/W2: as sis-w1, a tenth of the rows from w2 = ones on the last s features"
    params = {
        **SisW1.params,
        "outlier_rows": Param("every-tenth", "which n/10 rows follow w2: 'every-tenth' (rows 9, 19, ...) "
                                             "or 'last' (the paper's rows 91-100)",
                              str, choices=("every-tenth", "last")),
    }

    def generate(self, rng):
        c = self.config
        X, y, support = sis_design(rng, c["n"], c["p"], c["s"], c["noise_var"], c["outlier_rows"])
        return Problem(X, y, c["s"], true_support=support, name=self.name, provenance=self.setting())


@hookimpl
def dpbench_generators():
    return [SisW1, SisW1W2]
