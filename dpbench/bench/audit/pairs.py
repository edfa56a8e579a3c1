"""Neighbouring pairs for the privacy audit: problem families, candidate rows, hill-climb moves.

A pair (D, D') under replace-one is one base data set D0 (a *family* drawn from a named random
stream) whose row ``i`` is replaced by ``u`` in D and by ``v`` in D'. Replacement rows live on
a grid, ``value = level * box / GRID`` with integer ``level`` in ``[-GRID, GRID]``, so that a
pair is written exactly as a short string (:meth:`Pair.spec`) that ``dpbench audit --pair``
reads back: every pair, and so every finding, is reproducible from its text alone.

The candidate rows follow the constructions that reach the sensitivity bound of the shared
score (the bound of Lemma 2 of Behdin et al. 2024, docs/methods/score.md: ``(y_n - x_{n,S}' beta)^2 <= (b_y + b_x sqrt(s) r)^2``
is attained by a row on a corner of the clipping box aligned with a support's fit) and of the
correlation scores ``|x_j' y|`` (every score moved by ``2 b_x b_y``, in the direction that
reverses the ranking, as in the worst-case DP-SIS pair of Swope et al. 2024, appendix A).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.core.errors import UserInputError
from dpbench.core.problem import Problem
from dpbench.core.score import RidgeScore
from dpbench.core.seeding import rng_for
from dpbench.core.supports import iter_supports, n_supports

#: Grid of replacement rows: a coordinate is ``level * box / GRID``, level in [-GRID, GRID].
GRID = 4
#: Problem families of the search (iid Gaussian, Toeplitz correlation, near-duplicate columns,
#: near-tied scores).
FAMILIES = ("iid", "toeplitz", "twins", "tied")
#: Enumerate all supports of a base problem (to aim rows at its best supports) up to this many.
ENUMERATE_LIMIT = 5000


@dataclass(frozen=True)
class Pair:
    """One neighbouring pair: base problem ``(family, n, p, s, seed)``, row ``i`` set to ``u`` / ``v``.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    n, p, s : int
        Rows, features, sparsity level.
    seed : int
        Seed of the base problem's named stream (``rng_for(seed, "audit-data", family, n, p, s)``).
    row : int
        The replaced row, in ``[0, n)``.
    u, v : tuple of int
        Grid levels of the replacement rows of D and D': p levels for x, then one for y,
        each in ``[-GRID, GRID]``.
    """

    family: str
    n: int
    p: int
    s: int
    seed: int
    row: int
    u: tuple
    v: tuple

    def spec(self) -> str:
        """The pair as text: ``family:n:p:s:seed:row:u:v`` with rows as comma-separated levels."""
        enc = ",".join
        return (f"{self.family}:{self.n}:{self.p}:{self.s}:{self.seed}:{self.row}:"
                f"{enc(map(str, self.u))}:{enc(map(str, self.v))}")

    @classmethod
    def parse(cls, text: str) -> "Pair":
        """Read :meth:`spec` back.

        Raises
        ------
        UserInputError
            Naming the malformed part (the fix: copy the pair from the audit's output).
        """
        parts = str(text).strip().split(":")
        try:
            family, n, p, s, seed, row, u, v = parts
            n, p, s, seed, row = (int(x) for x in (n, p, s, seed, row))
            u = tuple(int(x) for x in u.split(","))
            v = tuple(int(x) for x in v.split(","))
        except ValueError:
            raise UserInputError(f"--pair {text!r} is not family:n:p:s:seed:row:u:v (copy it from the audit's "
                                 "output)") from None
        pair = cls(family, n, p, s, seed, row, u, v)
        if family not in FAMILIES:
            raise UserInputError(f"--pair {text!r}: unknown family {family!r}; known: {', '.join(FAMILIES)}")
        if not (0 < s < p and 0 <= row < n and len(u) == len(v) == p + 1
                and max(map(abs, u + v)) <= GRID):
            raise UserInputError(f"--pair {text!r}: needs 0 < s < p, 0 <= row < n, rows of p + 1 = {p + 1} "
                                 f"levels in [-{GRID}, {GRID}]")
        return pair


def base_problem(family: str, n: int, p: int, s: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The base data set D0 of a family, from its named random stream.

    Rows have the scale of the default clipping box (about 0.5), so a replaced row on the
    box's corner is an outlier of the size the sensitivity bound allows.

    Returns
    -------
    X : ndarray of shape (n, p), float64
    y : ndarray of shape (n,), float64

    Raises
    ------
    UserInputError
        For an unknown family.
    """
    rng = rng_for(seed, "audit-data", family, n, p, s)
    if family == "iid":
        X = 0.5 * rng.standard_normal((n, p))
        y = X[:, :s].sum(axis=1) / math.sqrt(s) + 0.2 * rng.standard_normal(n)
    elif family == "toeplitz":
        idx = np.arange(p)
        cov = 0.6 ** np.abs(idx[:, None] - idx[None, :])
        X = 0.5 * rng.standard_normal((n, p)) @ np.linalg.cholesky(cov).T
        y = X[:, ::2][:, :s].sum(axis=1) + 0.2 * rng.standard_normal(n)
    elif family == "twins":  # near-duplicate columns 0 and 1: the optimum flips between them
        X = 0.5 * rng.standard_normal((n, p))
        X[:, 1] = X[:, 0] + 0.02 * rng.standard_normal(n)
        y = 1.4 * (X[:, 0] + X[:, 2:s + 1].sum(axis=1)) + 0.1 * rng.standard_normal(n)
    elif family == "tied":  # few rows on a coarse grid: scores and correlations nearly tie
        X = 0.5 * rng.integers(-1, 2, size=(n, p)).astype(float)
        y = np.full(n, 0.5)
    else:
        raise UserInputError(f"unknown audit family {family!r}; known: {', '.join(FAMILIES)}")
    return X, y


def pair_problems(pair: Pair, box_x: float, box_y: float) -> tuple[Problem, Problem]:
    """The two raw (unclipped) problems of a pair; rows' levels scaled by ``box / GRID``."""
    X, y = base_problem(pair.family, pair.n, pair.p, pair.s, pair.seed)
    out = []
    for levels in (pair.u, pair.v):
        Xr, yr = X.copy(), y.copy()
        Xr[pair.row] = np.asarray(levels[:-1], dtype=float) * box_x / GRID
        yr[pair.row] = levels[-1] * box_y / GRID
        out.append(Problem(Xr, yr, pair.s, name=f"audit {pair.spec()}"))
    return out[0], out[1]


def _levels(x) -> tuple:
    return tuple(int(v) for v in np.clip(np.rint(x), -GRID, GRID))


def _sign(v) -> np.ndarray:
    return np.where(np.asarray(v) >= 0, 1.0, -1.0)


def candidate_rows(family, n, p, s, seed, rng: np.random.Generator, lam: float, r: float, k: int):
    """Yield ``k`` candidate pairs on one base problem, the structured ones first.

    Kinds, in order: rows aimed at a good support's fit with ``y = +box`` in D and ``-box`` in
    D' (the sensitivity bound's case, for each of the best supports); rows that reverse the
    ranking of the correlations ``|x_j' y|`` (top-s order); a corner that separates the twin
    columns; random corners against the original row; random interior rows against corners.
    """
    X, y = base_problem(family, n, p, s, seed)
    Xc, yc = np.clip(X, -0.5, 0.5), np.clip(y, -0.5, 0.5)
    i = int(rng.integers(n))
    orig = _levels(np.r_[Xc[i], yc[i]] * GRID / 0.5)
    out = []
    if n_supports(p, s) <= ENUMERATE_LIMIT:
        sup = np.concatenate(list(iter_supports(p, s)))
        score = RidgeScore(Xc, yc, lam=lam, r=r)
        best = sup[np.argsort(score(sup), kind="stable")[:3]]
        beta = score.solve(best)[1]
        for S, b in zip(best, beta):
            x = GRID * _sign(rng.standard_normal(p))
            x[S] = GRID * _sign(b)
            out.append((tuple(_levels(x)) + (GRID,), tuple(_levels(x)) + (-GRID,)))
    c = Xc.T @ yc
    order = np.argsort(-np.abs(c), kind="stable")
    x = np.empty(p)
    x[order[:s]] = -GRID * _sign(c[order[:s]])  # pulls the top s down when y = +box ...
    x[order[s:]] = GRID * _sign(c[order[s:]])  # ... and the others up
    out.append((_levels(x) + (GRID,), _levels(x) + (-GRID,)))
    out.append((_levels(x) + (GRID,), orig))
    x = GRID * _sign(rng.standard_normal(p))
    x[0], x[1] = GRID, -GRID
    out.append((_levels(x) + (GRID,), _levels(-x) + (GRID,)))
    while len(out) < k:
        corner = tuple(_levels(GRID * _sign(rng.standard_normal(p + 1))))
        if len(out) % 2:
            out.append((orig, corner))
        else:
            out.append((tuple(int(v) for v in rng.integers(-GRID, GRID + 1, p + 1)), corner))
    for u, v in out[:k]:
        yield Pair(family, n, p, s, seed, i, tuple(u), tuple(v))


def neighbour_move(pair: Pair, rng: np.random.Generator) -> Pair:
    """One hill-climb step: one coordinate of one replacement row set to a new grid level
    (half the time its sign flipped, else a random level)."""
    side = int(rng.integers(2))
    row = list(pair.u if side == 0 else pair.v)
    j = int(rng.integers(len(row)))
    new = -row[j] if (rng.random() < 0.5 and row[j]) else int(rng.integers(-GRID, GRID + 1))
    if new == row[j]:
        new = -GRID if row[j] > 0 else GRID
    row[j] = new
    u, v = (tuple(row), pair.v) if side == 0 else (pair.u, tuple(row))
    return Pair(pair.family, pair.n, pair.p, pair.s, pair.seed, pair.row, u, v)


def search_pairs(seed: int, sizes, count: int, lam: float, r: float):
    """The search's first ``count`` candidate pairs, reproducible from ``seed``.

    Cycles over the families and ``sizes`` ((n, p, s) tuples), one base problem each, and
    takes :func:`candidate_rows` from it (its structured rows first).

    Returns
    -------
    list of Pair
    """
    out, k = [], 0
    per = 6
    while len(out) < count:
        family = FAMILIES[k % len(FAMILIES)]
        n, p, s = sizes[(k // len(FAMILIES)) % len(sizes)]
        if family == "tied":
            n = max(3, min(n, 6))
        if family == "twins" and p < s + 2:
            k += 1
            continue
        rng = rng_for(seed, "audit-rows", family, k)
        out.extend(candidate_rows(family, n, p, s, seed + k, rng, lam, r, min(per, count - len(out))))
        k += 1
    return out
