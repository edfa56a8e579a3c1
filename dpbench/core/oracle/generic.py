"""A certified best-support oracle for losses with a separable dual bound.

The outer-approximation machinery (:mod:`dpbench.core.oracle.cuts`) is specific to
the ridge least-squares score. A loss whose batched score also offers

* ``score(supports) -> (B,)`` -- certified values R(S, D) (possibly within the score's own
  stated tolerance, which its sensitivity already accounts for),
* ``dual_point(support) -> alpha`` -- a dual vector of one support's solve,
* ``separable_bound(alpha) -> (const, u)`` and ``bound_value(const, usum)`` -- for every
  support S, ``R(S, D) >= bound_value(const, sum_{j in S} u_j)``, decreasing in ``usum``
  (weak duality; :class:`dpbench.core.score.hinge.HingeScore` gives the derivation),

gets an exact best-subset oracle here: a depth-first branch and bound over features whose
node bound is the largest, over a pool of dual vectors, of ``bound_value`` at the largest
``sum u_j`` any completion of the node can reach (forced-in features plus the top picks of
the free ones, per overlap group). Nodes whose completions are few (``leaf_size``) are
enumerated: completions are screened by their own bound and the survivors scored in one
batch. The pool starts from alpha = 1 and gains the dual vector of every new incumbent.

Every limit is a deterministic work count (``max_nodes``); ``time_limit`` is accepted for
interface compatibility and ignored, so no wall clock decides a result. A search cut by
``max_nodes`` returns status ``"time_limit"`` (uncertified) with the smallest bound of the
open nodes as ``lower_bound``.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from dpbench.core.contracts.oracle import OracleResult, OracleSession, ThresholdResult
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.threshold import _order_supports, rank_threshold


class GenericSession(OracleSession):
    """Branch and bound on a separable dual bound (see the module docstring).

    Parameters
    ----------
    score : object
        Batched score with ``dual_point``, ``separable_bound`` and ``bound_value``.
    s : int
        Sparsity level.
    max_nodes : int
        Nodes per :meth:`solve` call before it stops uncertified.
    leaf_size : int
        Nodes with at most this many completions are enumerated.
    pool : int
        Dual vectors kept (the most recent incumbents' and alpha = 1).

    Raises
    ------
    UserInputError
        If the score offers no separable dual bound.
    """

    def __init__(self, score, s, *, max_nodes=100_000, leaf_size=4096, pool=8):
        super().__init__(score, s)
        if not all(hasattr(score, a) for a in ("dual_point", "separable_bound", "bound_value")):
            raise UserInputError("solver 'generic' needs a loss with a separable dual bound (e.g. --loss hinge); "
                                 "use --solver highs for least squares")
        self.p = score.p
        self.max_nodes = int(max_nodes)
        self.leaf_size = int(leaf_size)
        self.pool_size = int(pool)
        self._cache: dict[tuple, float] = {}
        self._consts: list[float] = []
        self._U = np.empty((0, self.p))
        self._add_alpha(np.ones(score.n))
        self.nodes_total = 0

    # ----------------------------------------------------------------- helpers

    def _add_alpha(self, alpha):
        const, u = self.score.separable_bound(alpha)
        self._consts = (self._consts + [const])[-self.pool_size:]
        self._U = np.vstack([self._U, u[None, :]])[-self.pool_size:]

    def _scores(self, S):
        """Cached batched scores of sorted supports (m, s)."""
        keys = [tuple(row) for row in S.tolist()]
        todo = [i for i, k in enumerate(keys) if k not in self._cache]
        if todo:
            vals = self.score(S[todo])
            for i, v in zip(todo, vals.tolist()):
                self._cache[keys[i]] = v
        return np.array([self._cache[k] for k in keys], dtype=np.float64)

    def _bound(self, usum):
        """Largest bound over the pool; usum of shape (P, ...) -> (...)."""
        c = np.asarray(self._consts)[(slice(None),) + (None,) * (np.ndim(usum) - 1)]
        # a relative slack absorbs rounding: a dual bound can exceed the primal value it
        # certifies by a few ulps, which must not prune the optimum
        b = self.score.bound_value(c, usum).max(axis=0)
        return b - 1e-12 * np.maximum(1.0, np.abs(b))

    # ----------------------------------------------------------------- the search

    def _setup(self, exclude, overlap, fixed_in, fixed_out):
        """Allowed features, forced-in features, overlap groups with their needs, excluded supports."""
        p, s = self.p, self.s
        allowed = np.ones(p, dtype=bool)
        allowed[np.asarray(fixed_out, dtype=np.int64)] = False
        F = sorted({int(j) for j in fixed_in})
        groups, needs = [np.ones(p, dtype=bool)], [s - len(F)]
        if overlap is not None:
            ref, k = overlap
            g0 = np.zeros(p, dtype=bool)
            g0[np.asarray(ref, dtype=np.int64)] = True
            n0 = sum(bool(g0[j]) for j in F)
            groups, needs = [g0, ~g0], [int(k) - n0, (s - int(k)) - (len(F) - n0)]
        excluded = {tuple(np.sort(np.asarray(S, dtype=np.int64)).tolist()) for S in exclude}
        ok = all(allowed[j] for j in F) and min(needs) >= 0
        free0 = allowed.copy()
        free0[F] = False
        return ok, (tuple(F), free0, tuple(needs)), groups, excluded

    def _search(self, root, groups, excluded, cutoff, on_leaf):
        """Depth-first branch and bound; returns (open nodes left, nodes, smallest pruned bound).

        ``cutoff()`` is the current pruning level (nodes with bound > cutoff are pruned);
        ``on_leaf(S, scores)`` receives each enumerated leaf's screened completions, scored.
        """
        s = self.s
        stack, nodes, pruned = [root], 0, math.inf
        while stack and nodes < self.max_nodes:
            ins, free, need = stack.pop()
            nodes += 1
            cands = [np.flatnonzero(free & g) for g in groups]
            if any(len(c) < m for c, m in zip(cands, need)):
                continue
            U = self._U
            usum = U[:, list(ins)].sum(axis=1) if ins else np.zeros(len(U))
            for c, m in zip(cands, need):
                if m:
                    usum = usum + (-np.sort(-U[:, c], axis=1)[:, :m].sum(axis=1))
            lb = float(self._bound(usum))
            if lb > cutoff():
                pruned = min(pruned, lb)
                continue
            count = math.prod(math.comb(len(c), m) for c, m in zip(cands, need))
            if count <= self.leaf_size:
                picks = [list(itertools.combinations(c.tolist(), m)) for c, m in zip(cands, need)]
                rows = [tuple(sorted(ins + sum(combo, ()))) for combo in itertools.product(*picks)]
                rows = [r for r in rows if r not in excluded]
                if not rows:
                    continue
                S = np.array(rows, dtype=np.int64).reshape(-1, s)
                lbs = self._bound(U[:, S].sum(axis=2))
                keep = lbs <= cutoff()
                if (~keep).any():
                    pruned = min(pruned, float(lbs[~keep].min()))
                if keep.any():
                    on_leaf(S[keep], self._scores(S[keep]))
                continue
            # branch on the most wanted free feature of the best dual vector's relaxed pick
            best = int(np.argmax(self.score.bound_value(np.asarray(self._consts), usum)))
            j, gi = max(((int(c[np.argmax(U[best, c])]), i) for i, (c, m) in enumerate(zip(cands, need)) if m),
                        key=lambda t: U[best, t[0]])
            out = free.copy()
            out[j] = False
            stack.append((ins, out, need))  # j excluded
            need_in = tuple(m - (i == gi) for i, m in enumerate(need))
            stack.append((tuple(sorted(ins + (j,))), out, need_in))  # j included: explored first
        self.nodes_total += nodes
        return stack, nodes, pruned

    def solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(), time_limit=None, gap_tol=1e-6,
              node_limit=None):
        """See :meth:`dpbench.api.OracleSession.solve`; ``time_limit`` is ignored (deterministic).

        ``node_limit`` is accepted for the common interface; this session's own ``max_nodes``
        is its work limit."""
        t0 = time.perf_counter()
        ok, root, groups, excluded = self._setup(exclude, overlap, fixed_in, fixed_out)
        if not ok:
            return OracleResult(None, math.inf, math.inf, "infeasible", 0, time.perf_counter() - t0)
        state = {"S": None, "sc": math.inf}

        def on_leaf(S, sc):
            order = np.lexsort([S[:, j] for j in range(self.s - 1, -1, -1)] + [sc])
            b = order[0]
            if sc[b] < state["sc"] or (sc[b] == state["sc"] and tuple(S[b]) < tuple(state["S"])):
                state["S"], state["sc"] = S[b].copy(), float(sc[b])
                self._add_alpha(self.score.dual_point(state["S"]))

        stack, nodes, _ = self._search(root, groups, excluded, lambda: state["sc"], on_leaf)
        inc_S, inc = state["S"], state["sc"]
        seconds = time.perf_counter() - t0
        if stack:  # node limit: the open nodes' bounds bound everything not yet seen
            open_lb = min(self._node_bound(n, groups) for n in stack)
            msg = f"node limit max_nodes = {self.max_nodes} reached"
            return OracleResult(inc_S, inc, min(inc, open_lb), "time_limit", nodes, seconds, msg)
        if inc_S is None:
            return OracleResult(None, math.inf, math.inf, "infeasible", nodes, seconds)
        return OracleResult(inc_S, inc, inc, "optimal", nodes, seconds)

    def supports_below(self, threshold, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                       time_limit=None, max_count=2_000_000, rank=None, known_scores=(), node_limit=None):
        """Direct threshold enumeration by the same branch and bound (see :meth:`OracleSession.supports_below`).

        Nodes are pruned when their bound exceeds the current threshold, which ``rank`` and
        ``known_scores`` lower as supports are found (:func:`rank_threshold`). ``time_limit``
        is ignored; ``max_nodes`` (per call) and ``max_count`` are the deterministic limits.
        """
        t0 = time.perf_counter()
        ok, root, groups, excluded = self._setup(exclude, overlap, fixed_in, fixed_out)
        st = {"tau": rank_threshold(threshold, rank, known_scores), "S": [], "sc": [], "above": math.inf}
        if not ok:
            return ThresholdResult(np.empty((0, self.s), dtype=np.int64), np.empty(0), True, math.inf, st["tau"])

        def on_leaf(S, sc):
            keep = sc <= st["tau"]
            if (~keep).any():
                st["above"] = min(st["above"], float(sc[~keep].min()))
            st["S"].append(S[keep])
            st["sc"].append(sc[keep])
            if rank is not None:
                st["tau"] = rank_threshold(st["tau"], rank, known_scores, *st["sc"])

        stack, nodes, pruned = self._search(root, groups, excluded, lambda: st["tau"], on_leaf)
        S = np.concatenate(st["S"]) if st["S"] else np.empty((0, self.s), dtype=np.int64)
        sc = np.concatenate(st["sc"]) if st["sc"] else np.empty(0)
        tau = st["tau"]
        lower = min(pruned, st["above"], float(sc[sc > tau].min()) if (sc > tau).any() else math.inf)
        S, sc = S[sc <= tau], sc[sc <= tau]
        order = _order_supports(S, sc)
        status, msg = "complete", ""
        if stack:
            status, msg = "time_limit", f"node limit max_nodes = {self.max_nodes} reached"
            lower = min(lower, min(self._node_bound(n, groups) for n in stack))
        elif len(S) > max_count:
            status, msg = "max_count", f"more than max_count = {max_count} supports"
        certified = status == "complete" and lower > tau
        return ThresholdResult(S[order], sc[order], certified, lower, tau, status, 0, nodes,
                               time.perf_counter() - t0, msg)

    def _node_bound(self, node, groups):
        ins, free, need = node
        U = self._U
        usum = U[:, list(ins)].sum(axis=1) if ins else np.zeros(len(U))
        for g, m in zip(groups, need):
            c = np.flatnonzero(free & g)
            if len(c) < m:
                return math.inf
            if m:
                usum = usum + (-np.sort(-U[:, c], axis=1)[:, :m].sum(axis=1))
        return float(self._bound(usum))
