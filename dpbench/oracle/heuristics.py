"""Incumbents: a feasible start and best-improvement swap local search under the constraints.

Every step is a count (at most ``max_swaps`` rounds), never the clock, so the incumbent -
and with it what screening and the master see - is the same on every machine.
"""

from __future__ import annotations

import numpy as np

from ..score import solve_blocks
from .constraints import ConstraintSet


class LocalSearch:
    """Swap neighbourhoods and local search (a mixin of :class:`~dpbench.oracle.session.OASession`).

    Uses ``score``, ``pool``/``pool_cap`` (evaluated supports), ``max_swaps``,
    ``neighbour_cuts``, ``_gain`` and ``_gram_rows`` of the session.
    """

    def _neighbourhood(self, S, cons: ConstraintSet):
        """Scores of all feasible single swaps of S (shared closed form on assembled blocks).

        Returns (supports (N, s), scores (N,)) of the swap neighbours that respect the
        fixed and overlap constraints (no-good cuts are checked by the caller).
        """
        sc = self.score
        s = S.size
        GS = self._gram_rows(S)
        inS = np.zeros(sc.p, dtype=bool)
        inS[S] = True
        allowed = ~inS
        allowed[cons.fixed_out] = False
        fixed = np.zeros(sc.p, dtype=bool)
        fixed[cons.fixed_in] = True
        outs, scores = [], []
        for a in range(s):
            if fixed[S[a]]:
                continue
            J = allowed if cons.group is None else allowed & (cons.group == cons.group[S[a]])
            J = np.flatnonzero(J)
            if not J.size:
                continue
            keep = np.delete(np.arange(s), a)
            m = J.size
            G = np.empty((m, s, s))
            G[:, : s - 1, : s - 1] = GS[np.ix_(keep, S[keep])]
            cross = GS[keep][:, J].T  # (m, s-1)
            G[:, : s - 1, s - 1] = cross
            G[:, s - 1, : s - 1] = cross
            G[:, s - 1, s - 1] = sc.col_sq[J]
            if sc.lam:
                G[:, np.arange(s), np.arange(s)] += sc.lam
            c = np.empty((m, s))
            c[:, : s - 1] = sc.c[S[keep]]
            c[:, s - 1] = sc.c[J]
            val, _ = solve_blocks(G, c, sc.yy, sc.r)
            sup = np.empty((m, s), dtype=np.int64)
            sup[:, : s - 1] = S[keep]
            sup[:, s - 1] = J
            outs.append(sup)
            scores.append(val)
        if not outs:
            return np.zeros((0, s), np.int64), np.zeros(0)
        sup = np.sort(np.concatenate(outs), axis=1)
        return sup, np.concatenate(scores)

    def _start(self, cons: ConstraintSet):
        """A feasible start: best feasible pooled support, else the largest single-feature gains."""
        if self.pool:
            keys = list(self.pool)
            arr = np.array(keys, dtype=np.int64)
            ok = cons.feasible_mask(arr)
            if ok.any():
                vals = np.array([self.pool[k] for k in keys])
                i = np.flatnonzero(ok)[np.argmin(vals[ok])]
                return arr[i]
        chosen = list(cons.fixed_in)
        for idx, need in cons._needs():
            if need > 0:
                top = idx[np.argsort(-self._gain[idx], kind="stable")[:need]]
                chosen += list(top)
        return np.sort(np.array(chosen, dtype=np.int64))

    def _local_search(self, S, cons):
        """Best-improvement swap search respecting the constraints; returns (S, score) or (None, inf)."""
        key = tuple(S.tolist())
        cur = float(self.score(S)[0]) if key not in cons.exclude else np.inf
        best_neigh = None
        for _ in range(self.max_swaps):
            sup, val = self._neighbourhood(S, cons)
            if not len(val):
                break
            order = np.argsort(val, kind="stable")
            # Remember the best neighbours: they seed later constrained calls (k-th best).
            for i in order[:32]:
                self.pool.setdefault(tuple(sup[i].tolist()), float(val[i]))
            pick = None
            bar = cur - 1e-12 * max(1.0, abs(cur)) if np.isfinite(cur) else np.inf
            for i in order:
                if val[i] >= bar:
                    break
                if not cons.exclude or tuple(sup[i].tolist()) not in cons.exclude:
                    pick = i
                    break
            best_neigh = sup[order[: self.neighbour_cuts]]
            if pick is None:  # at most max_swaps rounds: a count, never the clock
                break
            S, cur = sup[pick], float(val[pick])
        if len(self.pool) > self.pool_cap:
            keep = sorted(self.pool.items(), key=lambda kv: kv[1])[: self.pool_cap // 2]
            self.pool = dict(keep)
        if not np.isfinite(cur):
            return None, np.inf, best_neigh
        cur = float(self.score(S)[0])  # the shared score, recomputed on the final support
        self.pool[tuple(S.tolist())] = cur
        return S, cur, best_neigh
