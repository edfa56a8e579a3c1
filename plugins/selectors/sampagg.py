"""Selector ``sampagg``: subsample-and-aggregate ("two-stage", Kifer, Smith & Thakurta 2012).

docs/methods/sampagg.md. The rows are split into ``m = floor(sqrt(n))`` disjoint blocks (a
data-independent partition: a seeded shuffle, or none); on each block a sparse estimator is
fitted and the block votes for at most ``s`` features; the votes are averaged, every
coordinate gets Laplace noise of scale ``2 s / (m epsilon)`` (the L1 sensitivity of the
average, :func:`dpbench.core.score.vote_sensitivity`, over epsilon), and the ``s`` largest noisy
averages are released. Replacing one row changes one block only, so this is pure
epsilon-DP under replace-one.

Unlike the authors' code, a block never votes with more than ``s`` features (voting with
every non-zero Lasso coefficient while calibrating the noise to ``s`` votes is not DP when
the Lasso keeps more than ``s``). And every block casts **exactly** ``s`` votes
(:func:`block_votes`): the default estimator is the Lasso path stopped once ``s`` features
have entered; a block whose path yields fewer tops up by the largest |x_j^T y| (centred),
ties by index. A fixed Lasso penalty on clipped data left most blocks silent (4-19 votes of
270-445 at p = 100, docs/methods/sampagg.md).

Preprocessing: the guarantee comes from the bounded votes (each block's 0/1 vote vector has
exactly s ones whatever its data), not from clipping, so the selector declares
``preprocessing = "none"`` and runs on the unclipped data, as Kifer, Smith & Thakurta's
first stage and the authors' Lasso-subsample do. (On real data the runner's optional
standardisation still applies; it is flagged as non-private there.)

Classification (``--loss hinge``): the block estimator is the l1-penalised hinge loss, as
the authors' ``hinge_neurips.py`` (``lasso_gurobi`` inside ``subsample``), followed along its
penalty path like the Lasso (:func:`l1_hinge_path_votes`); the votes, the noise and the
guarantee are the same, since they do not depend on the loss.

``prepare`` (epsilon-independent) does the block fits and the vote average; ``draw`` only
adds noise, so an epsilon sweep reuses one preparation.
"""

import math
import warnings

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import hstack, identity
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, lasso_path

from dpbench.api import Draws, Param, Selector, UserInputError, check_epsilon, hookimpl, vote_sensitivity

#: Number of penalty values on the path of the ``lasso_path`` estimator and the ratio of the
#: smallest to the largest (scikit-learn's defaults).
PATH_ALPHAS = 100
PATH_EPS = 1e-3
# Penalties per lasso_path call: the path stops early once s features have entered.
_PATH_CHUNK = 10


def make_blocks(n: int, rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """Partition rows ``0..n-1`` into ``m = floor(sqrt(n))`` disjoint blocks.

    Parameters
    ----------
    n : int
        Number of rows, ``n >= 1``.
    rng : numpy.random.Generator, optional
        If given, the rows are shuffled first (the permutation does not depend on the data,
        which the privacy argument needs); if None, blocks are contiguous.

    Returns
    -------
    list of m ndarrays, int64
        Block sizes differ by at most one (``numpy.array_split``).
    """
    if n < 1:
        raise UserInputError(f"n = {n}: need at least one row")
    m = math.isqrt(n)
    rows = rng.permutation(n) if rng is not None else np.arange(n)
    return [np.sort(b).astype(np.int64) for b in np.array_split(rows, m)]


def top_abs(coef, s: int) -> np.ndarray:
    """Indices of the (at most) ``s`` largest ``|coef|`` among the non-zero coefficients.

    Ties are broken by the smaller index (a deterministic function of the block's data).

    Returns
    -------
    ndarray of shape (<= s,), int64
    """
    a = np.abs(np.asarray(coef, dtype=np.float64))
    nz = np.flatnonzero(a > 0)
    if nz.size > s:
        nz = nz[np.argsort(-a[nz], kind="stable")[:s]]
    return np.sort(nz).astype(np.int64)


def lasso_votes(X, y, s: int, alpha: float, max_iter: int = 1000, tol: float = 1e-4):
    """Votes of one block: its ``s`` largest |coefficients| of ``sklearn.linear_model.Lasso(alpha)``.

    Parameters
    ----------
    X : ndarray of shape (n_b, p)
    y : ndarray of shape (n_b,)
    s : int
    alpha : float
        Lasso penalty (scikit-learn scaling: ``(1/(2 n_b)) ||y - X w||^2 + alpha ||w||_1``,
        with an intercept).

    Returns
    -------
    votes : ndarray of shape (<= s,), int64
    converged : bool
    """
    model = Lasso(alpha=alpha, max_iter=max_iter, tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    return top_abs(model.coef_, s), bool(model.n_iter_ < max_iter)


def lasso_path_votes(X, y, s: int, max_iter: int = 1000, tol: float = 1e-4):
    """Votes of one block: the first ``s`` features to enter its Lasso path.

    The path is scikit-learn's ``lasso_path`` on centred data (equivalent to fitting an
    intercept) over ``PATH_ALPHAS`` log-spaced penalties from the block's
    ``alpha_max = max_j |x_j^T y| / n_b`` (where the first feature enters) down to
    ``PATH_EPS * alpha_max`` -- scikit-learn's default grid. Features are ordered by the
    first penalty at which their coefficient is non-zero; features entering at the same
    penalty by larger |coefficient| there, then by index. The path is computed in chunks of
    penalties with warm starts and stops once ``s`` features have entered, which gives the
    same votes as the full path at a fraction of the cost.

    Returns
    -------
    votes : ndarray of shape (<= s,), int64
    converged : bool
        Always True (scikit-learn's path does not report per-penalty convergence).
    """
    Xc = X - X.mean(axis=0)
    yc = y - y.mean()
    alpha_max = np.max(np.abs(Xc.T @ yc)) / len(yc)
    if not alpha_max > 0:
        return np.empty(0, dtype=np.int64), True
    grid = np.geomspace(alpha_max, alpha_max * PATH_EPS, PATH_ALPHAS)
    p = X.shape[1]
    first = np.full(p, PATH_ALPHAS, dtype=np.int64)  # first penalty index with a non-zero coefficient
    size_at_entry = np.zeros(p)
    coef = None
    for a in range(0, PATH_ALPHAS, _PATH_CHUNK):
        alphas = grid[a:a + _PATH_CHUNK]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, coefs, _ = lasso_path(Xc, yc, alphas=alphas, coef_init=coef, max_iter=max_iter, tol=tol)
        coef = coefs[:, -1].copy()
        nonzero = coefs != 0
        new = (first == PATH_ALPHAS) & nonzero.any(axis=1)
        idx = np.flatnonzero(new)
        step = nonzero[idx].argmax(axis=1)
        first[idx] = a + step
        size_at_entry[idx] = np.abs(coefs[idx, step])
        if np.count_nonzero(first < PATH_ALPHAS) >= s:
            break
    entered = np.flatnonzero(first < PATH_ALPHAS)
    order = np.lexsort((entered, -size_at_entry[entered], first[entered]))
    return np.sort(entered[order[:s]]).astype(np.int64), True


def l1_hinge_path_votes(X, y, s: int):
    """Votes of one block: the first ``s`` features to enter its l1-penalised hinge path.

    The block estimator of the authors' sparse classification (``hinge_neurips.py``,
    ``lasso_gurobi``): ``min_beta (1/n_b) sum_i max(0, 1 - y_i x_i^T beta) + lam ||beta||_1``,
    no intercept, labels +-1, solved exactly as a linear program (``scipy.optimize.linprog``,
    HiGHS) with ``beta = u - v``, ``u, v >= 0`` and one slack per row. At ``beta = 0`` every
    row is in the hinge's linear part, so ``beta = 0`` is optimal iff
    ``lam >= lam_max = ||X^T y||_inf / n_b``; the penalties are ``PATH_ALPHAS`` log-spaced
    values from ``lam_max`` down to ``PATH_EPS * lam_max`` (the Lasso path's grid), visited in
    decreasing order until ``s`` features have entered. The authors bisect the penalty
    towards exactly ``s`` non-zeros and keep the ``s`` largest; a path order needs no
    bisection tolerance and gives the same kind of exactly-``s`` vote. Ordering within one
    penalty: larger |coefficient|, then index.

    Returns
    -------
    votes : ndarray of shape (<= s,), int64
    converged : bool
        False if some linear program did not reach optimality (its block is topped up).
    """
    n_b, p = X.shape
    yx = y[:, None] * X
    lam_max = np.max(np.abs(yx.sum(axis=0))) / n_b
    if not lam_max > 0:
        return np.empty(0, dtype=np.int64), True
    # rows: -y_i x_i^T u + y_i x_i^T v - xi_i <= -1   (xi_i >= 1 - y_i x_i^T beta)
    A = hstack([-yx, yx, -identity(n_b)], format="csc")
    b = -np.ones(n_b)
    first = np.full(p, PATH_ALPHAS, dtype=np.int64)
    size_at_entry = np.zeros(p)
    for a, lam in enumerate(np.geomspace(lam_max, lam_max * PATH_EPS, PATH_ALPHAS)):
        c = np.concatenate([np.full(2 * p, lam), np.full(n_b, 1.0 / n_b)])
        res = linprog(c, A_ub=A, b_ub=b, bounds=(0, None), method="highs")
        if res.status != 0:
            return np.empty(0, dtype=np.int64), False
        beta = res.x[:p] - res.x[p:2 * p]
        new = (first == PATH_ALPHAS) & (np.abs(beta) > 1e-9)
        first[new] = a
        size_at_entry[new] = np.abs(beta[new])
        if np.count_nonzero(first < PATH_ALPHAS) >= s:
            break
    entered = np.flatnonzero(first < PATH_ALPHAS)
    order = np.lexsort((entered, -size_at_entry[entered], first[entered]))
    return np.sort(entered[order[:s]]).astype(np.int64), True


def top_up(votes, X, y, s: int) -> np.ndarray:
    """Complete a block's votes to exactly ``s`` features (deterministic in the block's data).

    The missing votes go to the non-voting features with the largest ``|x_j^T y|`` on the
    centred block, ties by the smaller index.

    Parameters
    ----------
    votes : ndarray of int64, shape (<= s,)
    X : ndarray of shape (n_b, p)
    y : ndarray of shape (n_b,)

    Returns
    -------
    ndarray of shape (s,), int64, sorted
    """
    votes = np.asarray(votes, dtype=np.int64)
    if votes.size >= s:
        return np.sort(votes[:s])
    corr = np.abs((X - X.mean(axis=0)).T @ (y - y.mean()))
    corr[votes] = -np.inf
    order = np.lexsort((np.arange(corr.size), -corr))
    return np.sort(np.concatenate([votes, order[:s - votes.size]])).astype(np.int64)


def block_votes(X, y, blocks, s: int, estimator: str = "lasso_path", alpha: float = 0.1,
                max_iter: int = 1000):
    """Vote matrix of the blocks: row b is the 0/1 indicator of block b's exactly s votes.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    blocks : list of ndarray
        Disjoint row-index arrays (:func:`make_blocks`).
    s : int
    estimator : {"lasso", "lasso_path", "l1_hinge_path"}
    alpha : float
        Penalty of the ``lasso`` estimator.

    Returns
    -------
    votes : ndarray of shape (m, p), uint8
        Exactly s ones per row (the estimator's votes, completed by :func:`top_up`).
    unconverged : int
        Number of blocks whose solver stopped at ``max_iter``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    votes = np.zeros((len(blocks), X.shape[1]), dtype=np.uint8)
    unconverged = 0
    for b, rows in enumerate(blocks):
        if estimator == "lasso":
            idx, ok = lasso_votes(X[rows], y[rows], s, alpha, max_iter)
        elif estimator == "lasso_path":
            idx, ok = lasso_path_votes(X[rows], y[rows], s, max_iter)
        elif estimator == "l1_hinge_path":
            idx, ok = l1_hinge_path_votes(X[rows], y[rows], s)
        else:
            raise UserInputError(f"unknown sampagg estimator {estimator!r}; use 'lasso', 'lasso_path' "
                                 "or 'l1_hinge_path'")
        votes[b, top_up(idx, X[rows], y[rows], s)] = 1
        unconverged += not ok
    return votes, unconverged


def aggregate_votes(votes) -> np.ndarray:
    """Average vote per feature, ``(1/m) sum_b votes[b]`` (docs/methods/sampagg.md).

    Parameters
    ----------
    votes : ndarray of shape (m, p)
        0/1 votes, at most s per row.

    Returns
    -------
    ndarray of shape (p,), float64
        Its L1 distance to the average of any vote matrix differing in one row is at most
        ``2 s / m`` (:func:`dpbench.core.score.vote_sensitivity`).
    """
    v = np.asarray(votes, dtype=np.float64)
    return v.mean(axis=0)


def noisy_top_s(rng: np.random.Generator, average, s: int, epsilon: float, m: int,
                n_draws: int = 1) -> np.ndarray:
    """Report-noisy-top-s: Laplace(2s/(m epsilon)) on every averaged vote, keep the s largest.

    The Laplace mechanism on the vote average (L1 sensitivity 2s/m) is epsilon-DP; taking
    the top s of the noisy vector is post-processing.

    Returns
    -------
    ndarray of shape (n_draws, s), int64
        Sorted supports.
    """
    eps = check_epsilon(epsilon)
    avg = np.asarray(average, dtype=np.float64)
    scale = vote_sensitivity(s, m) / eps
    noisy = avg + rng.laplace(0.0, scale, size=(n_draws, avg.size))
    top = np.argpartition(-noisy, s - 1, axis=1)[:, :s]
    return np.sort(top, axis=1).astype(np.int64)


@dataclass(frozen=True, eq=False)
class SampAggPrepared:
    """The preparation of ``sampagg`` for one trial: the aggregated block votes.

    Attributes
    ----------
    average : ndarray of shape (p,), float64
        Votes per feature divided by the number of blocks m.
    m : int
        Number of blocks.
    votes_cast : int
        Total votes (m s).
    unconverged : int
        Block fits that did not converge (diagnostics).
    """

    average: np.ndarray
    m: int
    votes_cast: int
    unconverged: int


class SampAgg(Selector):
    """Subsample-and-aggregate support selection with Laplace-noised block votes (pure epsilon-DP)."""

    name = "sampagg"
    summary = ("subsample-and-aggregate on unclipped data: sqrt(n) blocks cast exactly s votes (first s "
               "features on the Lasso path, or the l1-hinge path for --loss hinge), Laplace(2s/(m eps)), top s")
    dp_type = "pure"
    preprocessing = "none"
    # the votes' estimator follows the loss (Lasso path / l1-hinge path); the guarantee does not
    losses = ("least-squares", "hinge")
    source = "Kifer, Smith & Thakurta 2012 (two-stage, first stage); docs/methods/sampagg.md"
    prepared_type = SampAggPrepared
    params = {
        "estimator": Param("auto", "block estimator: 'lasso_path' (first s features to enter the "
                                   "Lasso path), 'lasso' (s largest |coef| of Lasso(alpha)), "
                                   "'l1_hinge_path' (first s on the l1-penalised hinge path), each "
                                   "topped up to exactly s votes; 'auto': l1_hinge_path for --loss "
                                   "hinge, else lasso_path",
                           str, choices=("auto", "lasso", "lasso_path", "l1_hinge_path")),
        "alpha": Param(0.1, "Lasso penalty of the 'lasso' estimator (scikit-learn scaling)", float,
                       interval=(0.0, None, "neither")),
        "shuffle": Param(True, "shuffle rows (seeded, data-independent) before splitting into blocks", bool),
        "max_iter": Param(1000, "coordinate-descent iterations per block fit", int),
    }

    def prepare(self, trial, rng):
        c = self.config
        n = trial.n
        blocks = make_blocks(n, rng if c["shuffle"] else None)
        estimator = c["estimator"]
        if estimator == "auto":
            estimator = "l1_hinge_path" if trial.loss == "hinge" else "lasso_path"
        votes, unconverged = block_votes(trial.problem.X, trial.problem.y, blocks, trial.s,
                                         estimator, c["alpha"], c["max_iter"])
        return SampAggPrepared(aggregate_votes(votes), len(blocks), int(votes.sum()), int(unconverged))

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        supports = noisy_top_s(rng, prepared.average, trial.s, epsilon, prepared.m, n_draws)
        return Draws(supports, diagnostics={
            "blocks": prepared.m,
            "votes_cast": prepared.votes_cast,
            "preprocessing": "none (unclipped data; the votes are bounded)",
            "unconverged_blocks": prepared.unconverged,
            "laplace_scale": vote_sensitivity(trial.s, prepared.m) / check_epsilon(epsilon),
        })


@hookimpl
def dpbench_selectors():
    return [SampAgg]
