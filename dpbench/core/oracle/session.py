"""The outer-approximation oracle session: constraints, bounds, heuristics, branch and bound
and the OA master loop composed into one :class:`~dpbench.api.OracleSession`.

Which path a call takes: few feasible supports -> exact enumeration; an overlap constraint
-> branch and bound (both in dpbench, canonical among ties by construction); otherwise the
OA loop: a master MILP (the only part a backend solves, made canonical by
:func:`~dpbench.core.oracle.limits.break_ties`) while the cut screening leaves few candidates,
then the k-support relaxation, and, when its bound does not certify, branch and bound over
the features it cannot screen out (the Schur/Gershgorin search first where it is hopeful).
Every switch is decided by counts, never by the clock.
"""

from __future__ import annotations

import math
import time
from dataclasses import fields, replace

import numpy as np

from dpbench.core.contracts.oracle import OracleResult, OracleSession
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.bounds import NodeBounds
from dpbench.core.oracle.branch_and_bound import BranchAndBound
from dpbench.core.oracle.constraints import ConstraintSet, count_feasible, require_positive_lam
from dpbench.core.oracle.cuts import _CutPool, build_master, dual_cuts
from dpbench.core.oracle.heuristics import LocalSearch
from dpbench.core.oracle.options import OracleOptions
from dpbench.core.oracle.limits import _LIMIT_MESSAGES, Budget, _with_gap, break_ties, lexmin, tie_bar


#: Branch and bound over the screened survivors runs on their own columns when they are at
#: most 1/RESTRICT_FACTOR of the features (:meth:`OASession._restrict`).
RESTRICT_FACTOR = 16


#: Work counts of one "prox" node relaxation (:func:`dpbench.core.oracle.ksupport.ksupport_alpha`).
PROX_NODE = dict(width=40, rounds=6, iters=200, tol=1e-7)


class OASession(NodeBounds, LocalSearch, BranchAndBound, OracleSession):
    """Outer-approximation oracle session; a backend supplies ``solve_master``.

    Parameters
    ----------
    score : RidgeScore
        Shared score (lam > 0, else UserInputError).
    s : int
        Support size.
    backend : str
        Name used in messages.
    solve_master : callable (MasterMILP, time_limit, gap, node_limit) -> MasterResult
        ``node_limit``: MILP nodes (deterministic); ``time_limit``: the safety net's seconds left.
    options : OracleOptions, optional
        The session's options (default: :class:`OracleOptions`()).
    **overrides
        Single options replacing those of ``options`` (``enum_limit=0``, ``relax_method="pg"``).
    """

    PROX_NODE = PROX_NODE

    def __init__(self, score, s, backend, solve_master, options: OracleOptions | None = None, **overrides):
        super().__init__(score, s)
        require_positive_lam(score, backend)
        options = replace(options or OracleOptions(), **overrides)
        if options.relax_method not in ("pg", "prox"):
            raise UserInputError(f"relax_method = {options.relax_method!r}: use 'prox' (active-set FISTA, the default) "
                                 "or 'pg'")
        # Everything but the data, to open the same session over a subset of the columns (_on_columns).
        self.options = options
        # The mixins (NodeBounds, LocalSearch, BranchAndBound) read each option as an attribute.
        for f in fields(options):
            setattr(self, f.name, getattr(options, f.name))
        self.backend = backend
        self.solve_master = solve_master
        self.pool_cap = 8192
        # Cuts built at partial supports F (branch-and-bound nodes), memory-capped.
        self._fcuts: dict[tuple, tuple] = {}
        self._fdiag: dict[tuple, np.ndarray] = {}  # Schur diagonals M_bb of the same F
        self._tops = None  # gram_row_tops(score, s - 1) of the running search's universe
        self._tops_in = None  # the universe of _tops as a bool mask (None: all p features)
        self._tops_cache: dict = {}  # universe key (bytes, or "all") -> gram_row_tops
        self._tops_universe = None  # candidates of the running branch and bound (its tops' universe)
        self._row_cache: dict[int, np.ndarray] = {}
        self._row_cap = max(64, int(self.max_cut_mb * 2**20 / 4 // (8 * max(score.p, 1))))
        self._fcut_cap = max(16, int(self.max_cut_mb * 2**20 / 4 // (8 * max(score.p, 1))))
        self.cuts = _CutPool(score.p, self.max_cut_mb * 2**20)
        self.pool: dict[tuple, float] = {}  # evaluated supports -> score (heuristic memory)
        self.calls = 0
        p = score.p
        # Single-feature ridge gain, the cheap start of the swap search.
        self._gain = score.c**2 / (score.col_sq + score.lam)
        self._all = np.arange(p)
        self._relax_delay = 0  # nodes a search processes before its first node relaxation
        self._relax_budget = 0  # node relaxations left in the current branch and bound
        self._relax_alphas: list = []  # recent node dual points (warm starts, all valid)
        self._relax_lb = None  # per-feature k-support bounds of the current call (_relax_root)
        self._relax_a = None  # (alpha, X^T alpha) of the last node relaxation (_dual_children reuses it)

    # ------------------------------------------------------------- cuts and scores
    def _add_cuts(self, supports):
        S = np.atleast_2d(np.asarray(supports, dtype=np.int64))
        keys = [tuple(row) for row in S.tolist()]
        fresh = [i for i, k in enumerate(keys) if k not in self.cuts.index]
        if fresh:
            obj, const, W = dual_cuts(self.score, S[fresh])
            self.cuts.add([keys[i] for i in fresh], const, W)
            for i, o in zip(fresh, obj):
                self.pool[keys[i]] = float(o)
        return [self.cuts.index[k] for k in keys if k in self.cuts.index]

    # ------------------------------------------------------------- the oracle
    def solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(), time_limit=None, gap_tol=1e-6,
              node_limit=None):
        """The oracle call of :class:`dpbench.api.OracleSession`, canonical among ties (:data:`TIE_RTOL`).

        Branch and bound and enumeration break ties themselves (:class:`_BestTarget`); an
        optimum certified by the OA master is made canonical by :func:`break_ties`.
        """
        t0 = time.perf_counter()
        kw = dict(overlap=overlap, fixed_in=fixed_in, fixed_out=fixed_out, time_limit=time_limit, node_limit=node_limit)
        res, path = self._solve(exclude=exclude, gap_tol=gap_tol, **kw)
        if path == "oa":
            res = self._canonical(res, exclude=exclude, gap_tol=gap_tol, **kw)
            res.seconds = time.perf_counter() - t0
        return res

    def _canonical(self, res, *, exclude, gap_tol, **kw):
        """The canonical optimum among the ties of a certified OA optimum (:data:`TIE_RTOL`).

        Safe screening at the optimum's score removes every feature whose bound with it forced
        in exceeds ``v* + 1e-9 max(1, v*) >= tie_bar(v*)``: no tied support contains one. If
        only the optimum's own features survive, it is the unique tie; otherwise the threshold
        branch and bound lists every support <= ``tie_bar(v*)`` over the survivors (cheap: they
        are few). Only when that is not certified does :func:`break_ties` run (OA calls with
        no-good cuts, far slower: ~50 s at p = 1000 where screening takes milliseconds).
        """
        if res.status != "optimal" or res.support is None or not self.screen:
            return break_ties(lambda **k: self._solve(**k)[0], res, exclude=exclude, gap_tol=gap_tol, **kw)
        p = self.score.p
        cons = ConstraintSet.build(p, self.s, exclude, kw["overlap"], kw["fixed_in"], kw["fixed_out"])
        cand, _ = self._screen(cons, np.asarray(res.support), float(res.objective))
        if cand.size <= self.s:
            return res  # only the optimum's features can reach the tie bar
        if self._restrict(cand):
            sub, lcons, _ = self._on_columns(cand, cons)
            T = sub.supports_below(tie_bar(float(res.objective)), overlap=lcons["overlap"], exclude=lcons["exclude"],
                                   fixed_in=lcons["fixed_in"], fixed_out=lcons["fixed_out"],
                                   time_limit=kw["time_limit"], node_limit=kw["node_limit"])
            supports = cand[T.supports] if len(T.supports) else T.supports
        else:
            out = np.setdiff1d(np.arange(p), cand)
            fout = np.union1d(np.asarray(kw["fixed_out"], dtype=np.int64), out)
            T = self.supports_below(tie_bar(float(res.objective)), overlap=kw["overlap"], exclude=exclude,
                                    fixed_in=kw["fixed_in"], fixed_out=fout, time_limit=kw["time_limit"],
                                    node_limit=kw["node_limit"])
            supports = T.supports
        if not T.certified or not len(T.scores):
            return break_ties(lambda **k: self._solve(**k)[0], res, exclude=exclude, gap_tol=gap_tol, **kw)
        tied = supports[T.scores <= tie_bar(float(T.scores.min()))]
        best = lexmin(tied)
        obj = float(self.score(best[None])[0])
        return OracleResult(best, obj, min(float(res.lower_bound), obj), "optimal", res.iterations, res.seconds,
                            res.message)

    def _solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(), time_limit=None, gap_tol=1e-6,
               node_limit=None):
        """One oracle call without the tie-break of the OA path: (OracleResult, "bnb" or "oa")."""
        t0 = time.perf_counter()
        budget = Budget(self.node_limit if node_limit is None else node_limit,
                        self.safety_time_limit if time_limit is None else time_limit)
        self.calls += 1
        cons = ConstraintSet.build(self.score.p, self.s, exclude, overlap, fixed_in, fixed_out)
        self._relax_lb = None
        path = "bnb"

        def result(S, ub, lb, status, it, msg=""):
            obj = float(self.score(S)[0]) if S is not None else np.inf
            if S is not None and status == "optimal" and not self._closed(obj, lb, gap_tol):
                status, msg = "suboptimal", msg or "recomputed objective outside the gap tolerance"
            if status in _LIMIT_MESSAGES and S is not None:
                msg = _with_gap(msg, obj, min(lb, obj))
            return OracleResult(None if S is None else np.asarray(S, dtype=np.int64), obj,
                                float(min(lb, obj)), status, it, time.perf_counter() - t0, msg), path

        if cons.infeasible:
            return result(None, np.inf, np.inf, "infeasible", 0, cons.infeasible)
        count = count_feasible(cons)
        if count == 0:
            return result(None, np.inf, np.inf, "infeasible", 0, "no support satisfies the constraints")
        if count <= self.enum_limit or cons.group is not None:
            # Few feasible supports: score them all (certified by construction). Overlap
            # calls: branch and bound over the kept subsets of S0 (see _branch_and_bound),
            # whose per-subproblem cuts are far tighter than cuts built around S0.
            S, ub = None, np.inf
            if count > self.enum_limit:
                S, ub, _ = self._local_search(self._start(cons), cons)
            leaf = self.enum_limit if count <= self.enum_limit else self.leaf_limit
            self._relax_budget = self.relax_overlap_nodes if count > self.enum_limit else 0  # relaxation hook
            self._relax_delay = self.relax_overlap_after
            S, ub, lb, status, nodes = self._branch_and_bound(cons, S, ub, budget, gap_tol, leaf)
            self._relax_budget = 0
            if status == "infeasible":
                return result(None, np.inf, np.inf, "infeasible", nodes, "no support satisfies the constraints")
            if count > self.enum_limit:
                self._add_cuts(S[None])
            how = "enumerated" if count <= self.enum_limit else f"branch and bound, {nodes} nodes"
            return result(S, ub, lb, status, nodes, how if status == "optimal" else _LIMIT_MESSAGES[status](
                f"node_limit = {budget.node_limit} branch-and-bound nodes"))

        path = "oa"
        S, ub, neigh = self._local_search(self._start(cons), cons)
        if S is not None:
            self._add_cuts(S[None])
            if neigh is not None and len(neigh):
                self._add_cuts(neigh)
        it = 0
        lb = -np.inf
        seen = set()
        cand, min_lb = self._screen(cons, S, ub)
        active = set(self._seed_cuts(S))  # cut keys (pool indices shift when the pool is capped)
        while True:
            remaining = budget.remaining()
            if remaining <= 0:
                return result(S, ub, max(lb, 0.0), "time_limit", it, _LIMIT_MESSAGES["time_limit"](""))
            if it >= self.master_iterations:
                return result(S, ub, max(lb, 0.0), "work_limit", it,
                              _LIMIT_MESSAGES["work_limit"](f"master_iterations = {self.master_iterations}"))
            if (S is not None and self._relax_lb is None  # k-support relaxation hook (see _relax_root)
                    and (it == self.relax_after or cand.size > self.relax_cand)):
                gersh = it == 0 and self._gershgorin_hopeful(cons, cand)
                # With the Gershgorin search to follow, a short relaxation suffices: it certifies
                # the large-Lambda instances as well, and the search closes the rest.
                key, rb = self._relax_root(cons, S, **(dict(rounds=2, iters=30) if gersh else {}))
                if key is not None:
                    active.add(key)
                    lb = max(lb, rb)
                    cand, min_lb = self._screen(cons, S, ub)
                    if self._closed(ub, lb, gap_tol):
                        return result(S, ub, lb, "optimal", it, "k-support relaxation bound")
                    if cons.group is None and cand.size <= self.relax_bnb:
                        # Few survivors: branch and bound over them with relaxation node bounds.
                        path = "bnb"
                        return result(*self._survivors_result(cand, cons, S, ub, lb, min_lb, budget, gap_tol, it))
                    gnodes = 0
                    if gersh:
                        out = self._gershgorin_bnb(cons, cand, min_lb, S, ub, budget, gap_tol)
                        if out[3] in ("optimal", "time_limit"):
                            S2, ub2, lb2, status, nodes = out
                            msg = (f"Schur/Gershgorin branch and bound over {cand.size} features, {nodes} nodes"
                                   if status == "optimal" else _LIMIT_MESSAGES["time_limit"](""))
                            # Canonical among ties by construction (_BestTarget; a screened feature
                            # cannot reach the tie bar), like every branch-and-bound answer.
                            path = "bnb"
                            return result(S2, ub2, lb2, status, it + nodes, msg)
                        if out[1] < ub:  # not certified within gershgorin_nodes
                            S, ub = out[0], out[1]
                            self._add_cuts(S[None])
                            cand, min_lb = self._screen(cons, S, ub)
                        lb = max(lb, out[2])
                        gnodes = out[4]
                    if self.screen and cons.group is None and cand.size <= self.relax_bnb_max:
                        # Many survivors: their branch and bound all the same. The OA master loop
                        # sits at the relaxation's bound here (gravier: 70 masters at 29.711
                        # against 30.724, > 400 s; the search certifies in 1036 nodes). With
                        # screening off (an ablation) the master runs over all features, as documented.
                        path = "bnb"
                        return result(*self._survivors_result(cand, cons, S, ub, lb, min_lb, budget, gap_tol,
                                                              it + gnodes))
            rows = [self.cuts.index[k] for k in active if k in self.cuts.index]
            master = build_master(cand, self.cuts.const[rows], self.cuts.W[rows], cons)
            # A master before the k-support relaxation is a probe (over the <= relax_cand features
            # the cut screening kept): capped at first_master_nodes MILP nodes, so that one which
            # would stall hands over to the relaxation, deterministically, instead of running to
            # the safety net.
            probe = S is not None and self._relax_lb is None and it < self.relax_after
            res = self.solve_master(master, None if not math.isfinite(remaining) else remaining, gap_tol,
                                    min(self.master_node_limit, self.first_master_nodes) if probe
                                    else self.master_node_limit)
            it += 1
            if res.status == "infeasible":
                if S is None:  # nothing was screened: the master covered the full problem
                    return result(None, np.inf, np.inf, "infeasible", it, "no support satisfies the constraints")
                return result(S, ub, max(lb, 0.0), "error", it, "master infeasible although a support is known")
            if res.status == "error":
                return result(S, ub, max(lb, 0.0), "error", it, res.message)
            lb = max(lb, min(res.bound, min_lb))
            if S is not None and self._closed(ub, lb, gap_tol):
                return result(S, ub, lb, "optimal", it)
            if probe and res.status == "work_limit" and (
                    res.z is None or tuple(np.sort(cand[np.flatnonzero(res.z > 0.5)]).tolist()) in seen):
                continue  # nothing new from the capped probe: the relaxation comes next
            if res.z is None:
                stop = res.status if res.status in ("work_limit", "time_limit") else "error"
                return result(S, ub, max(lb, 0.0), stop, it, res.message or "master stopped")
            Z = np.sort(cand[np.flatnonzero(res.z > 0.5)])
            key = tuple(Z.tolist())
            if key in seen:
                if res.status in ("work_limit", "time_limit"):  # a limited master may repeat its incumbent
                    return result(S, ub, max(lb, 0.0), res.status, it, res.message)
                return result(S, ub, max(lb, 0.0), "error", it,
                              "outer approximation repeated a point (numerical trouble in the master)")
            seen.add(key)
            new = [key]
            self._add_cuts(Z[None])
            val = self.pool[key]
            if val < ub:
                S, ub = Z, val
                S2, ub2, neigh = self._local_search(S, cons)
                if S2 is not None and ub2 < ub:
                    S, ub = S2, ub2
                    self._add_cuts(S[None])
                    new.append(tuple(S.tolist()))
                if neigh is not None and len(neigh):
                    self._add_cuts(neigh)
                    new += [tuple(r) for r in neigh.tolist()]
                cand, min_lb = self._screen(cons, S, ub)
                if self._closed(ub, lb, gap_tol):
                    return result(S, ub, lb, "optimal", it)
            active |= set(new) | set(self._seed_cuts(S))

    # ------------------------------------------------------------- survivors of the screening
    def _restrict(self, keep, factor=RESTRICT_FACTOR):
        """Whether to search the screened survivors ``keep`` on their own columns (:meth:`_on_columns`):
        when they are at most 1/``factor`` of the features (a count, deterministic; default
        :data:`RESTRICT_FACTOR`). Below that the full session's caches (Gram rows, cuts at
        partial supports, shared across calls) are worth more than the narrower nodes."""
        return len(keep) * factor <= self.score.p

    def _survivor_space(self, cand, cons, factor=RESTRICT_FACTOR):
        """Where a search over the screened survivors ``cand`` of ``cons`` (no overlap group) runs.

        Returns
        -------
        session : OASession
            A fresh session on the survivors' own columns when :meth:`_restrict` says so
            (:meth:`_on_columns`), else this one.
        cons : ConstraintSet
            ``cons`` in that session's indices, every feature outside ``cand`` fixed out.
        pos : int array (p,) or None
            Local index of each feature (-1 outside ``cand``); None for this session.
        """
        if not self._restrict(cand, factor):
            return self, ConstraintSet.build(self.score.p, self.s, cons.exclude, None, cons.fixed_in,
                                             np.setdiff1d(self._all, cand)), None
        sub, local, pos = self._on_columns(cand, cons)
        return sub, ConstraintSet.build(cand.size, self.s, local["exclude"], None, local["fixed_in"],
                                        local["fixed_out"]), pos

    def _on_columns(self, keep, cons):
        """A fresh session over the columns ``keep`` only, and ``cons`` in its indices.

        R(S) reads only X_S and y, so every support inside ``keep`` has the same score in both
        sessions, and ``keep[i] <-> i`` (``keep`` sorted) preserves the lexicographic order of
        supports, hence the canonical tie-break. Each branch-and-bound node then costs
        O(n |keep|) instead of O(n p): at p = 10^6 with a few hundred survivors, seconds instead
        of minutes (issue 15). The dual points of the node relaxations live in R^n and are
        valid for both, so they carry over as warm starts.

        Parameters
        ----------
        keep : int array, sorted
            Columns kept; must contain ``cons.fixed_in``.
        cons : ConstraintSet

        Returns
        -------
        sub : OASession
        local : dict
            ``fixed_in``, ``fixed_out``, ``exclude``, ``overlap`` in the indices of ``sub``
            (excluded supports and fixed-out features outside ``keep`` are dropped: no support
            of ``sub`` can meet them).
        pos : int array (p,)
            Local index of each feature, -1 outside ``keep``.
        """
        sc = self.score
        keep = np.asarray(keep, dtype=np.int64)
        pos = np.full(sc.p, -1, dtype=np.int64)
        pos[keep] = np.arange(keep.size)
        sub = OASession(type(sc)(sc.X[:, keep], sc.y, lam=sc.lam, r=sc.r), self.s, self.backend, self.solve_master,
                        self.options)
        sub._relax_alphas = list(self._relax_alphas)
        fout = pos[cons.fixed_out]
        exclude = [pos[list(e)] for e in cons.exclude]
        overlap = None
        if cons.group is not None:
            g = pos[np.flatnonzero(cons.group)]
            overlap = (g[g >= 0], cons.k)
        local = {"fixed_in": pos[cons.fixed_in], "fixed_out": fout[fout >= 0],
                 "exclude": [e for e in exclude if (e >= 0).all()], "overlap": overlap}
        return sub, local, pos

    def _bnb_survivors(self, cand, cons, S, ub, budget, gap_tol):
        """Branch and bound with node relaxations over the screened survivors ``cand`` of ``cons``
        (no overlap), from the incumbent (S, ub); the return of :meth:`_branch_and_bound` in
        the original indices."""
        def run(session, sub_cons, S0):
            session._relax_budget = session.relax_nodes
            session._relax_delay = 0
            try:
                return session._branch_and_bound(sub_cons, S0, ub if S0 is not None else np.inf, budget, gap_tol,
                                                  session.leaf_limit)
            finally:
                session._relax_budget = 0

        sub, sub_cons, pos = self._survivor_space(cand, cons)
        if pos is None:
            return run(self, sub_cons, S)
        S_loc = None
        if S is not None and (pos[S] >= 0).all():
            S_loc = pos[S]
            sub._add_cuts(S_loc[None])  # the incumbent's cut, as the full session holds it
        S2, ub2, lb2, status, nodes = run(sub, sub_cons, S_loc)
        self._relax_alphas = sub._relax_alphas
        return (None if S2 is None else cand[S2]), ub2, lb2, status, nodes

    def _survivors_result(self, cand, cons, S, ub, lb, min_lb, budget, gap_tol, it):
        """:meth:`_bnb_survivors` as the arguments of ``_solve``'s ``result``: (S, ub, lb, status,
        iterations, message). ``lb`` (bounds proved before, valid for every feasible support)
        and ``min_lb`` (bounds the supports holding a screened feature) join the search's own.

        The answer is canonical already: the search keeps every support within tie_bar of its
        minimum (_BestTarget), and each screened-out feature's bound exceeds
        ub + 1e-9 max(1, ub) >= tie_bar(ub), so no tie contains one; ``_canonical`` is skipped.
        """
        S2, ub2, lb2, status, nodes = self._bnb_survivors(cand, cons, S, ub, budget, gap_tol)
        lb2 = max(min(lb2, min_lb), lb)
        if status == "optimal":
            msg = f"k-support branch and bound over {cand.size} screened features, {nodes} nodes"
        elif status in _LIMIT_MESSAGES:
            msg = _LIMIT_MESSAGES[status](f"node_limit = {budget.node_limit} branch-and-bound nodes")
        else:
            msg = f"branch and bound stopped ({status})"
        return S2, ub2, lb2, status if status != "infeasible" else "error", it + nodes, msg

    @staticmethod
    def _closed(ub, lb, gap_tol):
        """Certified gap: (ub - lb) <= gap_tol |ub|, plus rounding slack of the float64 cuts."""
        return ub - lb <= gap_tol * abs(ub) + 1e-12 * max(1.0, abs(ub))

    def _seed_cuts(self, S):
        """Pool cuts strongest at S (plus S's own cut): the master's initial rows."""
        if not len(self.cuts):
            return []
        if S is None:
            return self.cuts.keys[-self.master_cuts:]
        vals = self.cuts.values(S)
        return [self.cuts.keys[i] for i in np.argsort(-vals, kind="stable")[: self.master_cuts]]

    # ------------------------------------------------------------- k-support relaxation hook
    # Integration of dpbench/core/oracle/relaxation.py (issue 15). Once per OA call -- before the
    # first master when the cut screening leaves more than ``relax_cand`` candidates, else
    # after ``relax_after`` master solves without certification (probes capped at
    # ``first_master_nodes`` MILP nodes) -- the loop adds the k-support
    # dual bound (valid for every feasible support whatever the accuracy of its dual point),
    # its per-feature bounds to the safe screening (max with the cut bounds: a max of valid
    # bounds is valid) and its dual point as one more master cut. When at most ``relax_bnb``
    # features survive, the call finishes by branch and bound over them with node relaxations
    # (``_relax_node``, at most ``relax_nodes`` per call); with more, the Schur/Gershgorin search
    # goes first when it is hopeful, and what it leaves open goes to that same branch and bound
    # when at most ``relax_bnb_max`` survive (default: any number), else to the OA master loop
    # (after the relaxation its bound stayed at the root's on every measured instance, while
    # the branch and bound certified: issue 15, gravier). Overlap calls and threshold
    # enumerations with more than ``enum_limit`` feasible supports use node relaxations too,
    # after ``relax_overlap_after`` nodes (easy calls finish before; at most
    # ``relax_overlap_nodes``). All limits are counts: deterministic.
    def _gershgorin_hopeful(self, cons, cand):
        """Whether an unconstrained call should try :meth:`_gershgorin_bnb` over ``cand``.

        Not for overlap calls (they take the branch and bound anyway), p above
        :data:`~dpbench.core.oracle.bounds.GERSHGORIN_MAX_P`, ``gershgorin`` off, a zero node budget,
        or when a cheap floor on the root Gershgorin radius is >= 0.9 (the radius must be < 1
        for a finite bound: few rows or strongly correlated columns defeat it, e.g. Khan at
        n = 63, floor 2.2, or toeplitz n = 200, p = 10 000, s = 5, floor 0.95).
        """
        from dpbench.core.oracle.bounds import GERSHGORIN_MAX_P

        if (cons.group is not None or not self.gershgorin or self.gershgorin_nodes <= 0
                or self.score.p > GERSHGORIN_MAX_P):
            return False
        F = np.asarray(cons.fixed_in, dtype=np.int64)
        C = np.setdiff1d(cand, F)
        # The floor from 64 rows sat 10-15 % below the radius itself on the issue-15 instances
        # (0.30 vs 0.37 ... 0.95 vs 1.08 at n = 200, where the search cannot work): margin 0.9.
        return self._gershgorin_floor(F, C, self.s - F.size) < 0.9

    def _gershgorin_bnb(self, cons, cand, min_lb, S, ub, budget, gap_tol):
        """Branch and bound over the screened candidates with the Schur/Gershgorin node bounds.

        Node bounds of :meth:`_ridge_node` (curvature ``||x_b||^2 + lam`` per feature instead of
        lam alone, so strong at small Lambda where the k-support relaxation is weak; no node
        relaxations), at most ``gershgorin_nodes`` nodes (deterministic). ``min_lb`` bounds the
        supports holding a screened feature.

        Returns
        -------
        S, ub, lb, status, nodes
            As :meth:`_branch_and_bound`; ``lb`` is a valid bound on every feasible support.
        """
        sub = ConstraintSet.build(self.score.p, self.s, cons.exclude, None, cons.fixed_in,
                                  np.setdiff1d(self._all, cand))
        F = np.asarray(cons.fixed_in, dtype=np.int64)
        self._ensure_tops(np.setdiff1d(cand, F))  # the universe of the search below (same tops)
        if not self._ridge_node(F, np.setdiff1d(cand, F), self.s - F.size)[4] < 1.0:
            return S, ub, -np.inf, "work_limit", 0  # the root radius itself is >= 1: no search
        inner = Budget(min(self.gershgorin_nodes, budget.node_limit), budget.remaining())
        self._relax_budget = 0
        S2, ub2, lb2, status, nodes = self._branch_and_bound(sub, S, ub, inner, gap_tol, self.leaf_limit)
        if status == "infeasible":  # cannot happen with a feasible incumbent; keep what we had
            return S, ub, -np.inf, "work_limit", nodes
        return S2, ub2, min(lb2, min_lb), status, nodes

    def _relax_root(self, cons, S, **kw):
        """Root k-support dual bound of one call; returns (cut key or None, bound).

        Sets ``self._relax_lb`` (p,): for each feature a valid lower bound on R over the
        feasible supports that contain it (inf where none does).
        """
        from dpbench.core.oracle.relaxation import dual_cut, dual_norm, groups_of, relaxation_bound

        sc = self.score
        fixed, groups = groups_of(cons)
        if self.relax_method == "prox":  # the pg work counts in kw do not apply; prox solves to its tolerance
            kw = dict(self.PROX_NODE, method="prox")
        bound, alpha, per = relaxation_bound(sc, fixed, groups, start=S, per_feature=True, **kw)
        self._relax_lb = per
        a = sc.X.T @ alpha
        const, W = dual_cut(a, float(alpha @ sc.y), float(alpha @ alpha), sc.lam, sc.r,
                            float(dual_norm(a[None], fixed, groups)[0]))
        key = ("relax", self.calls)
        self.cuts.add([key], np.array([const]), W[None])
        return (key if key in self.cuts.index else None), bound

    def _relax_node(self, F, C, m, warm=None, close_at=None):
        """k-support dual bound of a branch-and-bound node (F fixed in, m more from C).

        Warm-started from the last dual points (any alpha is valid, so the pool only affects
        strength) and, with ``relax_method = "prox"``, from the parent's primal solution
        ``warm = (W, beta_W)``. With ``"prox"`` and ``close_at`` (the search's bar), the solve
        stops at the first working-set round whose bound reaches the bar (the node closes).
        Returns (bound, per (p,), warm): ``per[j]`` bounds the node's supports containing j;
        ``warm`` is this node's ``(W, beta_W)`` for its children (None for ``"pg"``).
        """
        from dpbench.core.oracle.relaxation import relaxation_bound

        if self.relax_method == "pg":
            # iters = 15 (was 30): the same nodes to +0.8 % on gravier, su, gordon, shipp, subramanian and
            # half the relaxed solves (gravier 36 256 vs 71 158: 44 s vs 61 s); christensen 1243 vs 914 nodes
            # but 19 057 vs 29 279 solves. Counts, so deterministic either way.
            kw = dict(width=20, rounds=3, iters=15)
        else:
            finite = close_at is not None and np.isfinite(close_at)
            kw = dict(self.PROX_NODE, warm=warm, close_at=close_at if finite else None)
        # "prox" solves the node's relaxation to its tolerance, so older dual points cannot raise the
        # node bound (the relaxation's optimum is the largest dual value) and they cost an O(n p)
        # product and per-feature bounds each: none (Khan, Lambda = 10: 155 nodes without, 158 with one).
        extra = self._relax_alphas[-3:] if self.relax_method == "pg" else ()
        b, alpha, per, (warm_out, a) = relaxation_bound(self.score, F, [(C, m)], alphas=extra, per_feature=True,
                                                        method=self.relax_method, with_warm=True, **kw)
        self._relax_alphas = (self._relax_alphas + [alpha])[-3:]
        self._relax_a = (alpha, a)
        return b, per, warm_out
