"""Incumbents: a feasible start and best-improvement swap local search under the constraints.

Every step is a count (at most ``max_swaps`` rounds), never the clock, so the incumbent -
and with it what screening and the master see - is the same on every machine.
"""

from __future__ import annotations

import numpy as np

from dpbench.core.score import solve_blocks
from dpbench.core.oracle.constraints import ConstraintSet


class LocalSearch:
    """Swap neighbourhoods and local search (a mixin of :class:`~dpbench.core.oracle.session.OASession`).

    Uses ``score``, ``pool``/``pool_cap`` (evaluated supports), ``max_swaps``,
    ``neighbour_cuts``, ``_gain`` and ``_gram_rows`` of the session.
    """

    def _neighbourhood(self, S, cons: ConstraintSet):
        r"""Scores of all feasible single swaps of S.

        Returns ``(rows, scores)``: ``scores`` (N,) of the swap neighbours that respect the
        fixed and overlap constraints (no-good cuts are checked by the caller), and
        ``rows(idx)`` giving the sorted supports (len(idx), s) of the neighbours ``idx``
        (built on demand: at p = 10^6 all N = s (p - s) of them would take 200 MB and
        seconds to sort, and the search keeps a few dozen).

        Notes
        -----
        Swapping S[a] for j keeps K = S \ {S[a]}. With ``A = X_K^T X_K + lam I``,
        ``beta_K = A^{-1} c_K``, ``g_j = X_K^T x_j`` and ``u_j = A^{-1} g_j``, block elimination
        gives the ridge optimum on K + j: ``t_j = (c_j - g_j^T beta_K) / d_j`` with
        ``d_j = ||x_j||^2 + lam - g_j^T u_j``, ``beta = (beta_K - t_j u_j, t_j)`` and
        ``R = y^T y - c_K^T beta_K - t_j (c_j - g_j^T beta_K)`` (the closed form of docs/methods/score.md
        with the Schur complement of A). This is the score whenever ``||beta|| <= r``; the
        neighbours where the l2 bound binds (or nearly: relative margin 1e-9) are scored with
        the shared :func:`solve_blocks`. O(p s^2) per neighbourhood instead of p s Cholesky
        factorisations.
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
        parts, scores = [], []
        r2 = sc.r * sc.r
        for a in range(s):
            if fixed[S[a]]:
                continue
            J = allowed if cons.group is None else allowed & (cons.group == cons.group[S[a]])
            J = np.flatnonzero(J)
            if not J.size:
                continue
            keep = np.delete(np.arange(s), a)
            K = S[keep]
            A = GS[np.ix_(keep, K)] + sc.lam * np.eye(s - 1)
            cK = sc.c[K]
            g = GS[keep][:, J]  # (s-1, m)
            if s > 1:
                bK = np.linalg.solve(A, cK)
                U = np.linalg.solve(A, g)
            else:
                bK, U = np.zeros(0), np.zeros((0, J.size))
            with np.errstate(all="ignore"):
                d = sc.col_sq[J] + sc.lam - np.einsum("km,km->m", g, U)
                num = sc.c[J] - bK @ g
                t = num / d
                val = sc.yy - float(cK @ bK) - t * num
                norm2 = ((bK[:, None] - U * t) ** 2).sum(axis=0) + t * t
            exact = ~(norm2 <= r2 * (1 - 1e-9)) | ~(d > 0)  # l2 bound (nearly) active, or degenerate
            if exact.any():
                Je = J[exact]
                m = Je.size
                G = np.empty((m, s, s))
                G[:, : s - 1, : s - 1] = A
                G[:, : s - 1, s - 1] = g[:, exact].T
                G[:, s - 1, : s - 1] = g[:, exact].T
                G[:, s - 1, s - 1] = sc.col_sq[Je] + sc.lam
                c = np.empty((m, s))
                c[:, : s - 1] = cK
                c[:, s - 1] = sc.c[Je]
                val[exact], _ = solve_blocks(G, c, sc.yy, sc.r)
            parts.append((K, J))
            scores.append(val)
        if not parts:
            return (lambda idx: np.zeros((0, s), np.int64)), np.zeros(0)
        offsets = np.cumsum([0] + [J.size for _, J in parts])

        def rows(idx):
            idx = np.asarray(idx, dtype=np.int64)
            blk = np.searchsorted(offsets, idx, side="right") - 1
            out = np.empty((idx.size, s), dtype=np.int64)
            for i, (b, k) in enumerate(zip(blk.tolist(), idx.tolist())):
                K, J = parts[b]
                out[i, : s - 1] = K
                out[i, s - 1] = J[k - offsets[b]]
            return np.sort(out, axis=1)

        return rows, np.concatenate(scores)

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
            rows, val = self._neighbourhood(S, cons)
            if not len(val):
                break
            # The best few in stable order (ties by position), the head of a full stable
            # argsort without sorting all s (p - s) scores; the full sort only when the pick
            # below runs past them.
            head = min(val.size, max(64, 2 * self.neighbour_cuts))
            part = np.argpartition(val, head - 1)[:head] if head < val.size else np.arange(val.size)
            order = part[np.lexsort((part, val[part]))]
            top = rows(order[: max(32, self.neighbour_cuts)])
            # Remember the best neighbours: they seed later constrained calls (k-th best).
            for i, row in zip(order[:32], top):
                self.pool.setdefault(tuple(row.tolist()), float(val[i]))
            pick = None
            bar = cur - 1e-12 * max(1.0, abs(cur)) if np.isfinite(cur) else np.inf
            for pos, i in enumerate(order):
                if val[i] >= bar:
                    break
                if pos == head - 1 and head < val.size:  # every one of the head excluded: sort all
                    for k in np.argsort(val, kind="stable")[pos:]:
                        if val[k] >= bar:
                            break
                        if tuple(rows([k])[0].tolist()) not in cons.exclude:
                            pick = k
                            break
                    break
                if not cons.exclude or tuple(rows([i])[0].tolist()) not in cons.exclude:
                    pick = i
                    break
            best_neigh = top[: self.neighbour_cuts]
            if pick is None:  # at most max_swaps rounds: a count, never the clock
                break
            S, cur = rows([pick])[0], float(val[pick])
        if len(self.pool) > self.pool_cap:
            keep = sorted(self.pool.items(), key=lambda kv: kv[1])[: self.pool_cap // 2]
            self.pool = dict(keep)
        if not np.isfinite(cur):
            return None, np.inf, best_neigh
        cur = float(self.score(S)[0])  # the shared score, recomputed on the final support
        self.pool[tuple(S.tolist())] = cur
        return S, cur, best_neigh
