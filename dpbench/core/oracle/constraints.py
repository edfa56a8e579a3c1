"""The constraints of one oracle call and exact counts of the supports that satisfy them.

Fixed-in/-out features, an overlap ``|S ∩ S0| = k`` with a given support (k = s - t for t
mistakes) and excluded supports (no-good cuts); :func:`roots` splits the feasible set into
disjoint subproblems "F fixed in, m more from C", the unit of enumeration and branch and bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpbench.core.errors import UserInputError
from dpbench.core.problem import as_support
from dpbench.core.score import RidgeScore

def require_positive_lam(score: RidgeScore, backend: str) -> None:
    """Refuse Lambda = 0 for an OA backend with a message that names the alternatives.

    Raises
    ------
    UserInputError
        If ``score.lam == 0``.
    """
    check_lam_for_outer_approximation(score.lam, backend)


def check_lam_for_outer_approximation(lam: float, backend: str) -> None:
    """:func:`require_positive_lam` for a Lambda alone (the runner checks it before the first trial).

    Raises
    ------
    UserInputError
        If ``lam <= 0``, naming the backends that handle Lambda = 0.
    """
    if lam <= 0:
        raise UserInputError(
            f"solver {backend!r} uses outer approximation, which needs a ridge penalty lam > 0 "
            f"(got lam = {lam}); use --lam > 0, or a backend that handles lam = 0: "
            "solver 'gurobi' with formulation=misocp (small p) or solver 'enumerate' (small C(p, s))")


# --------------------------------------------------------------------------- constraints


@dataclass
class ConstraintSet:
    """The constraints of one oracle call (see :class:`dpbench.api.OracleSession`).

    Attributes
    ----------
    p, s : int
    fixed_in, fixed_out : int arrays
    group : int8 array (p,) or None
        1 for features of S0, 0 otherwise, when an overlap constraint is given.
    k : int
        Required ``|S ∩ S0|``.
    exclude : set of tuples
        Excluded supports.
    infeasible : str
        Non-empty when the constraints are provably contradictory (the reason).
    """

    p: int
    s: int
    fixed_in: np.ndarray
    fixed_out: np.ndarray
    group: np.ndarray | None = None
    k: int = 0
    exclude: set = field(default_factory=set)
    infeasible: str = ""

    @classmethod
    def build(cls, p, s, exclude=(), overlap=None, fixed_in=(), fixed_out=()):
        """Validate the arguments of ``OracleSession.solve``.

        Raises
        ------
        UserInputError
            For indices outside 0..p-1 or supports of the wrong size.
        """
        fin = as_support(fixed_in, p) if len(fixed_in) else np.zeros(0, np.int64)
        fout = as_support(fixed_out, p) if len(fixed_out) else np.zeros(0, np.int64)
        ex = set()
        for S in exclude:
            S = as_support(S, p)
            if S.size != s:
                raise UserInputError(f"excluded support {S.tolist()} has {S.size} indices; supports have s = {s}")
            ex.add(tuple(S.tolist()))
        cons = cls(p, s, fin, fout, exclude=ex)
        if np.intersect1d(fin, fout).size:
            cons.infeasible = "a feature is both fixed in and fixed out"
        elif fin.size > s:
            cons.infeasible = f"{fin.size} features fixed in but s = {s}"
        if overlap is not None:
            S0, k = overlap
            S0 = as_support(S0, p)
            if int(k) != k:
                raise UserInputError(f"overlap size k = {k} must be an integer")
            cons.group = np.zeros(p, dtype=np.int8)
            cons.group[S0] = 1
            cons.k = int(k)
        if not cons.infeasible:
            for g, need in cons._needs():
                if need < 0 or need > g.size:
                    cons.infeasible = "the overlap and fixed-in/-out constraints cannot hold together"
        return cons

    def _needs(self):
        """[(free indices of a group, how many more must be chosen from it)], groups of the overlap."""
        free = np.ones(self.p, dtype=bool)
        free[self.fixed_in] = False
        free[self.fixed_out] = False
        if self.group is None:
            return [(np.flatnonzero(free), self.s - self.fixed_in.size)]
        out = []
        for gv, total in ((1, self.k), (0, self.s - self.k)):
            inside = self.group == gv
            out.append((np.flatnonzero(free & inside), total - int(inside[self.fixed_in].sum())))
        return out

    def feasible_mask(self, supports) -> np.ndarray:
        """Which rows of an (N, s) support array satisfy every constraint."""
        S = np.asarray(supports, dtype=np.int64)
        ok = np.ones(len(S), dtype=bool)
        if self.infeasible:
            return ~ok
        for j in self.fixed_in:
            ok &= (S == j).any(axis=1)
        if self.fixed_out.size:
            ok &= ~np.isin(S, self.fixed_out).any(axis=1)
        if self.group is not None:
            ok &= self.group[S].sum(axis=1) == self.k
        if self.exclude:
            ok &= np.array([tuple(row) not in self.exclude for row in S.tolist()], dtype=bool)
        return ok


def roots(cons: ConstraintSet):
    """Split the feasible set of a call into disjoint subproblems (F, C, m).

    Each subproblem is "F fixed in, choose exactly m more features from the candidates C";
    together they cover every feasible support exactly once (no-good cuts aside). Without
    an overlap constraint there is one subproblem (F = fixed_in). With ``|S ∩ S0| = k`` the
    call decomposes by the kept subset K of S0 (K fixed in, S0 \\ K fixed
    out, the rest chosen outside S0), so subproblem bounds see the exact cost of dropping
    S0's features instead of the weak bound a cut at S0 gives them.

    Returns
    -------
    list of (F : int array, C : int array, m : int)
    """
    import itertools

    free = np.ones(cons.p, dtype=bool)
    free[cons.fixed_out] = False
    free[cons.fixed_in] = False
    fin = np.sort(cons.fixed_in)
    if cons.group is None:
        return [(fin, np.flatnonzero(free), cons.s - fin.size)]
    in0 = cons.group == 1
    G1 = np.flatnonzero(free & in0)
    need1 = cons.k - int(in0[fin].sum())
    C = np.flatnonzero(free & ~in0)
    m = cons.s - cons.k - int((~in0[fin]).sum())
    if need1 < 0 or need1 > G1.size or m < 0 or m > C.size:
        return []
    return [(np.sort(np.concatenate([fin, np.array(K, dtype=np.int64)])), C, m)
            for K in itertools.combinations(G1.tolist(), need1)]


def count_feasible(cons: ConstraintSet) -> int:
    """Exact number of supports satisfying the fixed and overlap constraints (no-good cuts ignored)."""
    if cons.infeasible:
        return 0
    return sum(math.comb(C.size, m) for _, C, m in roots(cons))
