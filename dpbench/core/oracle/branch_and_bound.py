"""Exact best-first branch and bound over the subproblems of :func:`~dpbench.core.oracle.constraints.roots`.

One traversal (:meth:`BranchAndBound._bnb_search`, split into parts on the machine's cores when it
runs long: :mod:`~dpbench.core.oracle.split`) serves two targets
(:mod:`~dpbench.core.oracle.targets`): the canonical optimum (``_BestTarget``) and the
threshold enumeration of every support below tau (``_BelowTarget``,
:meth:`BranchAndBound.supports_below`). Stopped only by the node
count of a :class:`~dpbench.core.oracle.limits.Budget` or its wall-clock safety net.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpbench.core.errors import UserInputError
from dpbench.core.oracle.bounds import _top_sum_excluding, _topm_prefix
from dpbench.core.oracle.constraints import ConstraintSet, count_feasible, roots
from dpbench.core.oracle.limits import _LIMIT_MESSAGES, TAIL_SHARE, Budget
from dpbench.core.oracle.blas import one_blas_thread
from dpbench.core.oracle.node_kernels import leaf_pair_scan
from dpbench.core.oracle.triple_kernels import leaf_triple_scan
from dpbench.core.oracle.relaxation import child_bounds, dual_bounds
from dpbench.core.oracle.split import search_parts
from dpbench.core.oracle.targets import _BelowTarget, _BestTarget
from dpbench.core.oracle.working_set import product_on

#: Supports rescored per batch when a threshold enumeration returns.
_CHUNK = 200_000

#: A threshold search over screened survivors runs on their own columns when they are at most
#: 1/THRESHOLD_RESTRICT_FACTOR of the features (an optimum call: 1/16). A threshold search keeps
#: every member below the bar, so it visits far more nodes per call than an optimum call and the
#: narrower nodes pay sooner (golub topr: 36 -> 31 CPU-s with 2 instead of 16; chowdary, where
#: several roots keep over half the features, took 264 instead of 188 CPU-s when every root was
#: restricted).
THRESHOLD_RESTRICT_FACTOR = 2


#: Pairs (or m-tuples, times m) of a leaf scored per block; the bar is read once per block.
LEAF_BLOCK = 131_072

#: A node with two features left scores its open children's pairs itself (``open_pairs``,
#: :meth:`BranchAndBound._score_open_pairs`) only when its candidates' columns, gathered once, hold
#: at most this many floats (n |C| <= 2^22: 32 MB; gravier's largest closure gathers 487 000).
OPEN_PAIRS_FLOATS = 2**22


class BranchAndBound:
    """Optimum and threshold search (a mixin of :class:`~dpbench.core.oracle.session.OASession`).

    Uses the node bounds of :class:`~dpbench.core.oracle.bounds.NodeBounds`, the session's cut
    pool for the incumbent's cut, ``node_limit``/``safety_time_limit`` and ``leaf_limit``.
    """

    # ------------------------------------------------------------- branch and bound
    def _branch_and_bound(self, cons, S_inc, ub, budget, gap_tol, leaf_limit):
        """Exact best-first branch and bound over the subproblems of :func:`roots`.

        A node (F, C, m) stands for the supports F ∪ A, A ⊂ C, |A| = m. Bounds (all valid
        lower bounds on R, so pruning never loses the optimum):

        * m = 1: ``max(R0(F) - h_b, cut at F)`` per candidate b (:meth:`_partial`), exact for
          the ridge-only score; candidates are scored with the shared closed form in
          increasing order of that bound until the bound reaches the incumbent.
        * m >= 2: ``const - W[F].sum() - (sum of the m largest W over C)`` for the cut built
          at F and the incumbent's cut when it contains F. (Sums of single-feature ridge
          decreases are *not* valid for m >= 2: a pair can explain more than its parts.)
          Features whose bound with them forced in exceeds the incumbent are dropped
          (safe screening per node). With ``gershgorin`` on, also
          ``R0(F) - (sum of the m largest h over C) / (1 - rho)`` (:meth:`_ridge_node`,
          :func:`completion_bounds`: Schur complement + Gershgorin, about 2.3x tighter than
          the cut weights, whose denominator is lam instead of ||x_b||^2 + lam), with per-
          feature screening repeated while it removes candidates; children are then taken
          in decreasing h when that leaves fewer open. A node with at most ``leaf_limit``
          completions is scored exhaustively (two features left: each pair first bounded by its
          ridge score in closed form, :func:`~dpbench.core.oracle.node_kernels.pair_bounds`);
          otherwise it branches on its candidates sorted by weight: child i takes the i-th
          candidate and completes among the later ones (a partition). With three or more features
          left and k open children, only the first max(``child_batch``, ceil(k / 4)) are pushed;
          the later ones are one tail node over the remaining candidates, bounded again by its own
          relaxation (same partition, coarser). With two features left, the
          node scores its open children's pairs itself (``open_pairs``, :meth:`_score_open_pairs`).

        Returns
        -------
        S, ub, lb, status, nodes
            Best support (or None), its score, a valid lower bound on the constrained
            optimum, "optimal" / "infeasible" / "work_limit" / "time_limit", and nodes processed.
        """
        target = _BestTarget(S_inc, ub, gap_tol, cons.exclude)
        # one BLAS thread: the products are small (measured: X_C^T X_C at n = 77, |C| = 200 took
        # 34 ms with two threads under load, 1.7 ms with one)
        with one_blas_thread():
            rest, status, nodes = self._bnb_search(cons, target, budget, leaf_limit)
        if status in ("work_limit", "time_limit"):
            return target.S, target.ub, min(rest, target.ub), status, nodes
        if target.S is None:
            return None, np.inf, np.inf, "infeasible", nodes
        return target.S, target.ub, min(rest, target.ub), "optimal", nodes

    def _bnb_search(self, cons, target, budget, leaf_limit):
        """The best-first traversal behind :meth:`_branch_and_bound` and :meth:`supports_below`.

        ``target`` decides what is kept and when a node is closed: a node (or candidate) with
        a valid lower bound ``lb`` stays open iff ``lb < target.bar()``; every scored support
        goes to ``target.offer``. For the optimum the bar is the incumbent's score minus the
        gap tolerance (:class:`_BestTarget`); for a threshold enumeration it is the threshold
        plus a rounding margin (:class:`_BelowTarget`). The bounds are those documented in
        :meth:`_branch_and_bound`. A search still open after ``split_after`` nodes finishes in
        ``split_parts`` parts on up to ``workers`` processes
        (:func:`~dpbench.core.oracle.split.search_parts`; the same result for any ``workers``).

        Returns
        -------
        rest : float
            A valid lower bound on the score of every feasible support never offered to the
            target (the smallest bound of anything closed or left open).
        status : {"done", "work_limit", "time_limit", "stopped"}
            "work_limit" when ``budget.node_limit`` nodes were processed (deterministic);
            "time_limit" only when the wall-clock safety net fired.
            "stopped" when ``target.stop()`` asked to end the search (e.g. ``max_count``).
        nodes : int
        """
        import heapq
        import itertools

        tick = itertools.count()
        # Entries (bound, tick, F, C, start, m, parent): parent is None or (alpha, warm), alpha a dual
        # point of the k-support relaxation inherited from the parent, valid for every node
        # (relaxation.py), warm the parent's primal (W, beta_W) of the "prox" relaxation (or None).
        heap = [(-np.inf, next(tick), F, C, 0, m, None) for F, C, m in roots(cons)]
        heapq.heapify(heap)
        # The Gram-row tops of the node bounds are those of this search's universe (computed at the
        # first node that needs them), never a larger set left by an earlier call: a search's bounds
        # do not depend on what ran before it, here or in another process.
        self._tops = None
        self._tops_universe = np.concatenate([e[3] for e in heap]) if heap else None
        split_at = self.split_after if self.split_parts > 1 else None
        status, nodes, pruned = self._bnb_walk(heap, tick, target, budget, leaf_limit, 0, np.inf, split_at)
        if status == "split":
            return search_parts(self, heap, next(tick), target, budget, leaf_limit, nodes, pruned)
        return min(heap[0][0] if heap else np.inf, pruned), status, nodes

    def _bnb_walk(self, heap, tick, target, budget, leaf_limit, nodes, pruned, split_at=None):
        """The best-first loop of :meth:`_bnb_search` over ``heap`` (changed in place), from ``nodes``
        nodes done and ``pruned`` the smallest bound discarded so far.

        Returns ``(status, nodes, pruned)``: the statuses of :meth:`_bnb_search`, or ``"split"``
        when ``split_at`` nodes are done and at least two nodes are open (the heap then holds them,
        for :func:`~dpbench.core.oracle.split.search_parts`). The bound on what was never offered
        is ``min(heap[0][0], pruned)`` (inf for an empty heap).
        """
        import heapq

        from dpbench.core.supports import iter_supports

        bar = target.bar

        def open_(lb):  # a node with bound lb may still hold a support the target wants
            return lb < bar()

        while heap:
            top = heap[0][0]
            if not open_(top):
                break
            halt = budget.stop(nodes)
            if halt:
                return halt, nodes, pruned
            if target.stop():
                return "stopped", nodes, pruned
            if nodes == split_at and len(heap) > 1:
                return "split", nodes, pruned
            lb_parent, _, F, Cfull, start, m, parent = heapq.heappop(heap)
            alpha_parent, warm_parent = parent if parent is not None else (None, None)
            C = Cfull[start:]
            nodes += 1
            if m == 0:
                target.offer(F[None], self.score(F[None]))
                continue
            (const, W), (R0, h) = self._partial(F)
            cuts = [(const, W)]
            S_inc = target.incumbent()
            if S_inc is not None and len(self.cuts):
                ki = self.cuts.index.get(tuple(S_inc.tolist()))
                if ki is not None and set(F.tolist()) <= set(self.cuts.keys[ki]):
                    cuts.append((float(self.cuts.const[ki]), self.cuts.W[ki]))
            if m == 1:
                lbb = R0 - h[C]
                for cst, Wk in cuts:
                    lbb = np.maximum(lbb, cst - Wk[F].sum() - Wk[C])
                # Only the candidates below the bar are sorted and scored, in increasing bound;
                # the bar may fall while they are offered (rank), so each chunk is re-tested.
                live = lbb < bar()
                if not live.all():
                    pruned = min(pruned, float(lbb[~live].min()))
                order = np.flatnonzero(live)
                order = order[np.argsort(lbb[order], kind="stable")]
                for a in range(0, order.size, 4096):
                    chunk = order[a:a + 4096]
                    live = lbb[chunk] < bar()
                    if live.any():
                        S, vals = self._score_with(F, C, chunk[live][:, None], cutoff=bar())
                        target.offer(S, vals)
                    if not live.all():  # sorted: every later candidate is closed too
                        pruned = min(pruned, float(lbb[chunk][~live].min()))
                        break
                continue
            if (m == 2 and C.size * (C.size - 1) // 2 <= self.pair_leaf_limit
                    and self._scan_completions(F, C, 2, C.size, target)):
                continue  # a pair leaf: cheaper than the relaxation it replaces (PAIR_LEAF)
            if math.comb(C.size, m) <= leaf_limit:
                if self._scan_leaf(F, C, m, target):
                    continue
                GCC = self._gcc(C)
                for chunk in iter_supports(C.size, m, chunk_size=max(1, LEAF_BLOCK // m)):
                    S, vals = self._score_with(F, C, chunk, GCC, cutoff=bar())
                    target.offer(S, vals)
                continue
            lb, best_cut = lb_parent, 0
            best_val = -np.inf
            for j, (cst, Wk) in enumerate(cuts):
                w = Wk[C]
                val = cst - Wk[F].sum() - np.partition(w, w.size - m)[w.size - m:].sum()
                if val > best_val:
                    best_cut, best_val = j, val
            lb = max(lb, best_val)
            if not open_(lb):
                pruned = min(pruned, lb)
                continue
            ridge = None
            if self.gershgorin:
                # Schur/Gershgorin bound (completion_bounds), screening repeated while it
                # removes candidates: the radius rho is a maximum over the survivors.
                for _ in range(4):
                    R0, h, node, per, rho = self._ridge_node(F, C, m)
                    if not np.isfinite(node):
                        break
                    ridge = (R0, h, rho)
                    lb = max(lb, R0 - node)
                    if not open_(lb):
                        break
                    if not np.isfinite(bar()):
                        break
                    drop = R0 - per >= bar()
                    if not drop.any():
                        break
                    pruned = min(pruned, float((R0 - per[drop]).min()))
                    C = C[~drop]
                    if C.size < m:
                        break
                if not open_(lb):
                    pruned = min(pruned, lb)
                    continue
                if C.size < m:
                    continue
            dual = None  # this node's dual point: its children's closed-form bounds (child_bounds)
            relax = self._relax_budget > 0 and nodes > self._relax_delay and math.comb(C.size, m) > leaf_limit
            if relax or alpha_parent is not None:
                if relax:
                    # k-support relaxation hook (see OASession._relax_node): node bound and per-feature
                    # screening, warm-started from the parent's dual point (any alpha is valid).
                    self._relax_budget -= 1
                    if alpha_parent is not None:
                        self._relax_alphas = self._relax_alphas[-2:] + [alpha_parent]
                    rb, per, warm = self._relax_node(F, C, m, warm_parent, close_at=bar())
                    dual = (self._relax_alphas[-1], warm)
                else:
                    # Node relaxations used up: the parent's dual point still bounds this node and
                    # screens its candidates in O(n p), without a solve.
                    rb, per = self._dual_node(alpha_parent, F, C, m)
                    dual = parent
                lb = max(lb, rb)
                if not open_(lb):
                    pruned = min(pruned, lb)
                    continue
                drop = per[C] >= bar()
                if drop.any():
                    pruned = min(pruned, float(per[C][drop].min()))
                    C = C[~drop]
                if C.size < m:
                    continue
            if np.isfinite(bar()):
                # Safe screening inside the node: drop b when forcing it in cannot reach the bar.
                lbb = np.full(C.size, -np.inf)
                for cst, Wk in cuts:
                    ex, _ = _top_sum_excluding(Wk, C, m - 1)
                    lbb = np.maximum(lbb, cst - Wk[F].sum() - Wk[C] - ex)
                drop = lbb >= bar()
                if drop.any():
                    pruned = min(pruned, float(lbb[drop].min()))
                    C = C[~drop]
                if C.size < m:
                    continue
                if math.comb(C.size, m) <= leaf_limit:
                    heapq.heappush(heap, (lb, next(tick), F, C, 0, m, dual))
                    continue
            cst, Wk = cuts[best_cut]
            Cs = C[np.argsort(-Wk[C], kind="stable")]
            child = cst - Wk[F].sum() - _topm_prefix(Wk[Cs], m)  # child i: Cs[i] in, rest from Cs[i+1:]
            if ridge is not None:
                R0, h, rho = ridge
                if rho < 1.0:
                    # Children in decreasing h: child i's bound R0 - (h_i + best m-1 of the later
                    # ones) / (1 - rho) is nondecreasing in i (rho of the parent's C covers them).
                    Cr = C[np.argsort(-h[C], kind="stable")]
                    child_r = R0 - _topm_prefix(h[Cr], m) / (1.0 - rho) * (1 + 1e-12)
                    b_ = bar()
                    if not np.isfinite(b_) or (np.maximum(child_r, lb) < b_).sum() < (np.maximum(child, lb) < b_).sum():
                        Cs, child = Cr, child_r  # the order with fewer open children
            if dual is not None:
                # Children in decreasing a^2 of the node's dual point, bounded in closed form; a tie
                # (the k-support tail) in decreasing |beta_j| of the relaxed solution, the relaxation's
                # own indicator z_j (without one, "pg": in decreasing weight of the node's own cut)
                key = cuts[0][1]
                if dual[1] is not None:
                    key = np.zeros(self.score.p)
                    key[dual[1][0]] = np.abs(dual[1][1])
                Ca, child_a = self._dual_children(dual[0], F, C, m, key)
                b_ = bar()
                if not np.isfinite(b_) or (np.maximum(child_a, lb) < b_).sum() < (np.maximum(child, lb) < b_).sum():
                    Cs, child = Ca, child_a
            # Child bounds are nondecreasing in i: the children before the first closed one are
            # pushed (their supports F + Cs[i] built in one array: no per-child numpy calls).
            b_all = np.fmax(lb, child)  # fmax: a NaN child bound falls back to lb, as max(lb, nan) did
            closed = ~(b_all < bar())
            k = int(np.argmax(closed)) if closed.any() else child.size
            if k < child.size:
                pruned = min(pruned, float(b_all[k]))
            first = max(self.child_batch, -(-k // TAIL_SHARE))
            if m >= 3 and self.child_batch and k > first and self._relax_budget > 0 and nodes >= self._relax_delay:
                # Children first.. hold the same supports as the node (F, Cs[first:], m). Pushed as one
                # tail node, it gets its own relaxation: a fresh dual point that re-orders and re-screens
                # those candidates, where this node's closed-form bounds keep them open. Its bound
                # b_all[first] is the smallest of theirs (nondecreasing in i).
                heapq.heappush(heap, (float(b_all[first]), next(tick), F, Cs, first, m, dual))
                k = first
            if (k and m == 2 and np.isfinite(bar()) and self.score.n * Cs.size <= OPEN_PAIRS_FLOATS
                    and k * (2 * Cs.size - k - 1) // 2 <= self.open_pairs):
                # The open children would be nodes with one feature left: their pairs are scored here
                # (gravier's certified optimum: 133 891 of its 233 407 nodes were such children, each
                # closed on pop)
                self._score_open_pairs(F, Cs, k, target)
                continue
            if k:
                Fk = np.empty((k, F.size + 1), dtype=np.int64)
                Fk[:, :F.size] = F
                Fk[:, F.size] = Cs[:k]
                Fk.sort(axis=1)
                for i in range(k):
                    heapq.heappush(heap, (float(b_all[i]), next(tick), Fk[i], Cs, i + 1, m - 1, dual))
        return "done", nodes, pruned

    def _scan_leaf(self, F, C, m, target):
        """Offer a leaf's pair or triple completions to ``target`` through :meth:`_scan_completions`;
        False (nothing done) where the scan does not apply, and the caller scores the leaf by blocks
        (``NodeBounds._score_with``). Only leaves of one block: the blocks read the bar once each,
        so the scan takes exactly their steps."""
        if m not in (2, 3) or math.comb(C.size, m) > LEAF_BLOCK // m:
            return False
        return self._scan_completions(F, C, m, C.size, target)

    def _scan_completions(self, F, C, m, rows, target):
        """Offer to ``target`` the supports F ∪ C[A], A a pair (m = 2) or triple (m = 3) of positions
        in increasing order whose first is below ``rows``, through
        :func:`~dpbench.core.oracle.node_kernels.leaf_pair_scan` or
        :func:`~dpbench.core.oracle.triple_kernels.leaf_triple_scan` (``rows`` = |C| there); False
        (nothing done) where the scan does not apply: it needs the compiled partial quantities, a
        cached Gram, a finite bar and no excluded supports (which ``_BelowTarget`` drops before it
        takes the smallest value).

        The target is offered the completions the bounds leave open, scored, and the one with the
        smallest of the other bounds: what it would keep of every completion and bound
        (``_BestTarget`` keeps nothing at or above its bar, ``_BelowTarget`` keeps the smallest
        value above it). The open ones are solved in blocks of ``LEAF_BLOCK // m`` (bounded
        memory), their m x m Gram blocks read from the cached Gram.
        """
        sc, cutoff = self.score, target.bar()
        G = sc.cached_gram()
        if not self.partial_compiled or G is None or not np.isfinite(cutoff) or target.excl:
            return False
        const, W = self._partial(F)[0]
        R0, t, mC, U = self._pair_terms(F, C)
        args = (np.asarray(C, dtype=np.int64), G, t, mC, U, R0, float(sc.lam), float(const - W[F].sum()), W,
                float(cutoff))
        A, low, low_A = leaf_pair_scan(*args, int(rows)) if m == 2 else leaf_triple_scan(*args)
        if not A.shape[0]:  # the usual leaf: its bounds close every completion; offer their smallest
            if low_A[0] >= 0:
                target.offer(np.sort(np.concatenate([F, C[low_A]]))[None], np.array([low]))
            return True
        step = LEAF_BLOCK // m
        for b0 in range(0, max(A.shape[0], 1), step):
            Ab = A[b0:b0 + step]
            idx = C[Ab]
            vals = np.empty(Ab.shape[0])
            if Ab.shape[0]:
                vals = self._solve_rows(F, C, Ab, G[idx[:, :, None], idx[:, None, :]])
            if b0 + step >= A.shape[0] and low_A[0] >= 0:  # the last block carries the smallest bound
                Ab, vals = np.concatenate([Ab, low_A[None]]), np.append(vals, low)
            S = np.concatenate([np.broadcast_to(F, (Ab.shape[0], F.size)), C[Ab]], axis=1)
            S.sort(axis=1)
            target.offer(S, vals)
        return True

    def _score_open_pairs(self, F, Cs, k, target):
        """Offer to ``target`` the supports F ∪ {Cs[i], Cs[j]}, i < k, j > i, of the k open children of
        a node with two features left, scored as a leaf's pairs.

        With a cached Gram, by :meth:`_scan_completions`: a pair's Gram entry is read only when its cut
        bound leaves it open (gravier's topr level 5, its first 3 000 nodes: 11.0 s in these
        closures, 2.2 s of it gathering Gram blocks for pairs the cut bound closes). Otherwise
        (``NodeBounds._score_with``) in blocks of children of about 65 536 pairs, the cross
        products ``X_A^T X_C`` of a block's children A from the gathered candidate columns:
        O(n |C|) per child, where each child's node would have fetched a Gram row, O(n p)."""
        if self._scan_completions(F, Cs, 2, k, target):
            return
        sc = self.score
        c, i0 = Cs.size, 0
        XC = None if sc.gram_mode == "full" else np.ascontiguousarray(sc.X[:, Cs])
        while i0 < k:
            per = c - 1 - np.arange(i0, k)  # pairs of each child
            i1 = i0 + max(1, int(np.searchsorted(np.cumsum(per), 65_536, side="right")))
            i = np.repeat(np.arange(i1 - i0), per[:i1 - i0])
            start = np.concatenate([[0], np.cumsum(per[:i1 - i0])[:-1]])
            j = np.arange(i.size) - start[i] + i + 1
            cross = sc.gram(Cs[i0:i1], Cs[i0:]) if XC is None else XC[:, i0:i1].T @ XC[:, i0:]
            S, vals = self._score_with(F, Cs[i0:], np.stack([i, j], axis=1), cross, cutoff=target.bar())
            target.offer(S, vals)
            i0 = i1

    def _dual_node(self, alpha, F, C, m):
        """Bound (*) of :mod:`~dpbench.core.oracle.relaxation` at a node (F, m more from C) from a
        given dual point, and per feature j the bound over its supports containing j: (bound,
        per (p,)). O(n p), no solve."""
        sc = self.score
        a = self._product(alpha, F, C)
        if self._compiled_bounds():
            from dpbench.core.oracle.kernels import dual_bounds_1

            C = np.asarray(C, dtype=np.int64)
            b, per, _ = dual_bounds_1(a, float(alpha @ sc.y), float(alpha @ alpha), float(sc.lam), float(sc.r),
                                      np.asarray(F, dtype=np.int64), np.array([0, C.size], dtype=np.int64), C,
                                      np.array([m], dtype=np.int64), True)
            return float(b), per
        b, per = dual_bounds(a[None], float(alpha @ sc.y), float(alpha @ alpha), sc.lam, sc.r, F, [(C, m)],
                             per_feature=True)
        return float(b[0]), per[0]

    def _product(self, alpha, F, C):
        """``X^T alpha`` (p,) as a node's bounds read it: on F and C only with the compiled bounds
        (``product_on``, NaN elsewhere), on all of X for the numpy reference."""
        if not self._compiled_bounds():
            return self.score.X.T @ alpha
        return product_on(self.score, alpha, np.union1d(np.asarray(F, dtype=np.int64), np.asarray(C, dtype=np.int64)))

    def _compiled_bounds(self):
        """Whether node bounds use the compiled kernels (:mod:`~dpbench.core.oracle.kernels`): with the
        "prox" node relaxation unless its work counts say ``compiled=False`` (the numpy reference)."""
        return getattr(self, "relax_method", None) == "prox" and getattr(self, "PROX_NODE", {}).get("compiled", True)

    def _dual_children(self, alpha, F, C, m, key):
        """:func:`~dpbench.core.oracle.relaxation.child_bounds` of the node at the dual point alpha, each
        tie of ``a^2`` in decreasing ``key`` (p,) (:mod:`~dpbench.core.oracle.children`)."""
        sc = self.score
        last = getattr(self, "_relax_a", None)
        a = last[1] if last is not None and last[0] is alpha else self._product(alpha, F, C)
        key = np.ascontiguousarray(key, dtype=np.float64)
        if self._compiled_bounds():
            from dpbench.core.oracle import children

            return children.child_bounds(a, float(alpha @ sc.y), float(alpha @ alpha), float(sc.lam), float(sc.r),
                                         np.asarray(F, dtype=np.int64), np.asarray(C, dtype=np.int64), int(m), key)
        return child_bounds(a, float(alpha @ sc.y), float(alpha @ alpha), sc.lam, sc.r, F, C, m, key)

    # ------------------------------------------------------------- threshold enumeration
    def supports_below(self, threshold, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(), time_limit=None,
                       max_count=2_000_000, rank=None, known_scores=(), node_limit=None):
        """Every feasible support with score <= ``threshold``, by threshold branch and bound.

        The interface and result are those of :meth:`dpbench.api.OracleSession.supports_below`.
        The search is the best-first branch and bound of :meth:`_branch_and_bound` over the
        same subproblems (:func:`roots`) and the same valid node bounds, with the incumbent
        replaced by the threshold: a node is closed when its lower bound exceeds
        ``tau (1 + targets.THRESHOLD_MARGIN)``, and every support reaching a leaf is scored exactly;
        with ``rank``, tau falls to the rank-th smallest of ``known_scores`` and the scores
        found so far as the search proceeds. The supports kept are rescored with the shared
        score before the final comparison with tau. Complete (``certified``) unless
        ``node_limit`` (status "work_limit"), ``max_count`` or the wall-clock safety net
        (status "time_limit") stops it; ``lower_bound`` is then the smallest bound of the
        nodes left open, still a valid bound on everything not returned.

        Raises
        ------
        UserInputError
            For a NaN threshold or invalid constraints.
        """
        from dpbench.core.contracts.oracle import ThresholdResult
        from dpbench.core.oracle.threshold import _order_supports, rank_threshold

        t0 = time.perf_counter()
        if threshold != threshold:
            raise UserInputError("supports_below: the threshold is NaN; pass a number (inf for no threshold)")
        budget = Budget(self.node_limit if node_limit is None else node_limit,
                        self.safety_time_limit if time_limit is None else time_limit)
        self.calls += 1
        cons = ConstraintSet.build(self.score.p, self.s, exclude, overlap, fixed_in, fixed_out)
        known = np.asarray(known_scores, dtype=np.float64).ravel()
        empty = np.zeros((0, self.s), dtype=np.int64)
        count = 0 if cons.infeasible else count_feasible(cons)
        if count == 0:
            return ThresholdResult(empty, np.zeros(0), True, np.inf, rank_threshold(threshold, rank, known),
                                   "complete", 0, 0, time.perf_counter() - t0, "no support satisfies the constraints")
        target = _BelowTarget(float(threshold), rank, known, cons.exclude, int(max_count), self.s)
        leaf = self.enum_limit if count <= self.enum_limit else self.leaf_limit
        if count > self.enum_limit and cons.group is None and self.screen and self.relax_method == "prox":
            rest, status, nodes, S, v = self._below_on_survivors(cons, target, budget, float(threshold), rank, known,
                                                                 int(max_count))
        else:
            self._relax_budget = self.relax_overlap_nodes if count > self.enum_limit else 0  # relaxation hook
            self._relax_delay = self.relax_overlap_after
            with one_blas_thread():  # small products, as in _branch_and_bound
                rest, status, nodes = self._bnb_search(cons, target, budget, leaf)
            self._relax_budget = 0
            S, v = target.result()
        sc = (np.concatenate([self.score(S[a:a + _CHUNK]) for a in range(0, len(S), _CHUNK)]) if len(S)
              else np.zeros(0))
        tau = rank_threshold(float(threshold), rank, known, sc)
        keep = sc <= tau
        rest = min(rest, target.above, float(sc[~keep].min()) if (~keep).any() else np.inf)
        S, sc = S[keep], sc[keep]
        order = _order_supports(S, sc)
        status = {"done": "complete", "stopped": "max_count"}.get(status, status)
        certified = status == "complete" and (rest > tau or rest == np.inf)  # inf: nothing left unreturned
        msg = {"complete": f"threshold branch and bound, {nodes} nodes",
               "work_limit": _LIMIT_MESSAGES["work_limit"](f"node_limit = {budget.node_limit} branch-and-bound nodes"),
               "time_limit": _LIMIT_MESSAGES["time_limit"](""),
               "max_count": f"more than max_count = {max_count} supports"}.get(status, status)
        if status == "complete" and not certified:
            status, msg = "error", "rest bound not above the threshold (numerical trouble)"
        return ThresholdResult(S[order], sc[order], certified, float(rest), float(tau), status, 0, nodes,
                               time.perf_counter() - t0, msg)

    def _below_on_survivors(self, cons, target, budget, threshold, rank, known, max_count):
        """Threshold search of a call without an overlap group, the way an optimum call searches.

        The root's k-support relaxation (:func:`~dpbench.core.oracle.relaxation.relaxation_bound`)
        bounds every feasible support and, per feature j, every feasible support holding j; the
        features whose bound is at or above the bar (tau only falls, so the first bar is the
        loosest) cannot be in a returned support. The branch and bound then runs over the
        survivors, on their own columns when they are at most half the features
        (:data:`THRESHOLD_RESTRICT_FACTOR`, :meth:`_survivor_space`), with node
        relaxations from the first node (``relax_nodes``), as :meth:`_bnb_survivors` does for
        the optimum.

        Returns
        -------
        rest, status, nodes, S, v
            As :meth:`_bnb_search` plus the target's supports (original indices) and values.
        """
        from dpbench.core.oracle.relaxation import groups_of, relaxation_bound

        sc = self.score
        fixed, groups = groups_of(cons)
        bar = target.bar()
        with one_blas_thread():
            bound, _, per = relaxation_bound(sc, fixed, groups, per_feature=True, **dict(self.PROX_NODE, method="prox"))
        if not bound < bar:
            return float(bound), "done", 1, *target.result()
        free = groups[0][0]
        keep = per[free] < bar
        min_lb = float(per[free][~keep].min()) if (~keep).any() else np.inf
        cand = np.union1d(free[keep], fixed)
        if cand.size < self.s:
            return min(float(bound), min_lb), "done", 1, *target.result()
        sub, sub_cons, pos = self._survivor_space(cand, cons, THRESHOLD_RESTRICT_FACTOR)
        sub_target = target if pos is None else _BelowTarget(threshold, rank, known, sub_cons.exclude, max_count,
                                                             self.s)
        sub._relax_budget, sub._relax_delay = sub.relax_nodes, 0
        try:
            with one_blas_thread():
                rest, status, nodes = sub._bnb_search(sub_cons, sub_target, budget, sub.leaf_limit)
        finally:
            sub._relax_budget = 0
        S, v = sub_target.result()
        if pos is not None:
            self._relax_alphas = sub._relax_alphas
            S = cand[S]
            rest = min(rest, sub_target.above)
        return min(rest, min_lb), status, nodes + 1, S, v
