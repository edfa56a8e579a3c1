"""Conformance checks for dpbench plugins, and the brute-force references they use.

A plugin author runs these in their own tests, the way scikit-learn's
``check_estimator`` is run on an estimator::

    from dpbench.testing import check_selector
    from my_package.dpbench_plugin import MySelector

    def test_my_selector_conforms():
        check_selector(MySelector, my_param=3)

Each ``check_*`` builds tiny problems (C(p, s) at most a few dozen supports), runs the
plugin on them and raises :class:`AssertionError` whose message names the plugin and
exactly what is wrong. dpbench's own test suite runs them over every registered plugin
(``tests/test_conformance.py``).

The brute-force helpers (:func:`all_supports`, :func:`brute_force_scores`,
:func:`exponential_mechanism_log_probs`, :func:`chi_square_gof`) enumerate every support
with :mod:`itertools` and score it with a fresh :class:`dpbench.core.score.RidgeScore`,
independently of the selectors' and oracles' own code paths.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import chisquare

from dpbench.core.contracts.selector import Draws, EXPONENTIAL_MECHANISM
from dpbench.core.preparation import Memo
from dpbench.bench.registry import check_plugin_class
from dpbench.core.privacy.sensitivity import sensitivity
from dpbench.core.problem import Problem
from dpbench.bench.results.store import decode_artefact, encode_artefact
from dpbench.core.score import RidgeScore
from dpbench.bench.trial import Trial
from dpbench.bench.registry import PluginInstances

__all__ = ["check_selector", "check_solver", "check_generator", "audit_selector", "all_supports", "brute_force_scores",
           "exponential_mechanism_log_probs", "chi_square_gof", "tiny_trial"]

#: Rejection level of the chi-square goodness-of-fit test of draws against ``log_prob``. The
#: seeds are fixed, so the outcome is deterministic; over seeds, a correct selector would be
#: rejected with probability 1e-4.
CHI2_ALPHA = 1e-4
#: Draws used by that test (with cells pooled to an expected count >= 5).
CHI2_DRAWS = 4000
#: Absolute tolerance on log-probabilities (sum to 1, agreement with the brute force).
LOG_TOL = 1e-9
#: Epsilons of the checks: spread mass, moderate, concentrated.
EPSILONS = (0.5, 4.0, 40.0)
#: The tiny problems (n, p, s, seed): 15 and 35 supports.
PROBLEMS = ((40, 6, 2, 0), (60, 7, 3, 1))


# --------------------------------------------------------------------------- brute force


def all_supports(p: int, s: int) -> np.ndarray:
    """Every support of size s of {0, ..., p-1}, shape (C(p, s), s), int64, lexicographic order
    (that of :func:`itertools.combinations`)."""
    return np.array(list(itertools.combinations(range(p), s)), dtype=np.int64).reshape(-1, s)


def brute_force_scores(trial: Trial) -> tuple[np.ndarray, np.ndarray]:
    """All supports (lexicographic) and their scores R(S, D) from a fresh RidgeScore.

    Returns
    -------
    supports : ndarray of shape (C(p, s), s), int64
    scores : ndarray of shape (C(p, s),), float64
        R(S, D) of docs/methods/score.md on ``trial.problem`` with the trial's Lambda and r.
    """
    S = all_supports(trial.p, trial.s)
    return S, RidgeScore(trial.problem.X, trial.problem.y, lam=trial.lam, r=trial.r)(S)


def exponential_mechanism_log_probs(trial: Trial, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The exponential mechanism on the shared score, by enumeration of every support.

    log P(S) = -ε R(S, D) / (2 Δ) - log Σ_S' exp(-ε R(S', D) / (2 Δ)) (McSherry & Talwar
    2007; docs/methods/exponential-mechanism.md), with Δ recomputed from the trial's bounds
    (:func:`dpbench.core.privacy.sensitivity.sensitivity`).

    Returns
    -------
    supports : ndarray of shape (C(p, s), s), int64, lexicographic
    log_probs : ndarray of shape (C(p, s),), natural logarithms summing (as probabilities) to 1
    """
    S, scores = brute_force_scores(trial)
    delta = sensitivity(trial.s, trial.b_x, trial.b_y, trial.r, trial.sensitivity_bound)
    lw = -epsilon * scores / (2 * delta)
    return S, lw - logsumexp(lw)


def chi_square_gof(draws, supports, log_probs, min_expected: float = 5.0) -> tuple[float, int]:
    """Chi-square goodness of fit of drawn supports to exact probabilities.

    Cells are pooled, smallest expected count first, until each expects at least
    ``min_expected`` draws (Cochran's rule).

    Parameters
    ----------
    draws : array_like of shape (m, s), int
        Drawn supports (each row sorted).
    supports : array_like of shape (K, s), int
        Every support with positive probability, sorted rows, in any order.
    log_probs : array_like of shape (K,)
        Their exact natural-log probabilities.

    Returns
    -------
    pvalue : float
        From :func:`scipy.stats.chisquare`; 0.0 if a draw is not among ``supports``.
    cells : int
        Number of cells after pooling.
    """
    S = np.asarray(supports, dtype=np.int64)
    idx = {tuple(r): i for i, r in enumerate(S.tolist())}
    keys = [idx.get(tuple(r), -1) for r in np.asarray(draws, dtype=np.int64).tolist()]
    if min(keys, default=0) < 0:
        return 0.0, 0
    counts = np.bincount(keys, minlength=len(S)).astype(float)
    exp = np.exp(np.asarray(log_probs, dtype=float)) * len(keys)
    obs_c, exp_c, acc_o, acc_e = [], [], 0.0, 0.0
    for i in np.argsort(exp, kind="stable"):
        acc_o += counts[i]
        acc_e += exp[i]
        if acc_e >= min_expected:
            obs_c.append(acc_o)
            exp_c.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e or acc_o:
        if not obs_c:
            return 1.0, 1
        obs_c[-1] += acc_o
        exp_c[-1] += acc_e
    if len(obs_c) < 2:
        return 1.0, len(obs_c)
    exp_c = np.array(exp_c) * sum(obs_c) / sum(exp_c)  # the draws' total, to rounding
    return float(chisquare(obs_c, exp_c).pvalue), len(obs_c)


def tiny_problem(n: int, p: int, s: int, seed: int) -> Problem:
    """A small Gaussian design with a planted support (y = X β + noise, β = 1 on the support)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    support = np.sort(rng.choice(p, size=s, replace=False)).astype(np.int64)
    y = X[:, support].sum(axis=1) / math.sqrt(s) + 0.5 * rng.standard_normal(n)
    return Problem(X, y, s, true_support=support, name=f"conformance-{n}x{p}-s{s}")


def tiny_trial(n: int = 40, p: int = 6, s: int = 2, seed: int = 0, lam: float = 1.0,
               solver: str = "enumerate", clip: bool = True, delta: float = 1e-6) -> Trial:
    """The trial of :func:`tiny_problem`: b_x = b_y = 0.5 (data clipped to them if ``clip``),
    r = 1.1, oracle ``solver``, run-level DP δ ``delta`` (for approximate-DP selectors)."""
    b = 0.5
    problem = tiny_problem(n, p, s, seed)
    return Trial(problem.clipped(b, b) if clip else problem, b_x=b, b_y=b, r=1.1, lam=lam, solver=solver,
                 delta=delta, instances=PluginInstances())


# --------------------------------------------------------------------------- helpers


def _fail(label: str, what: str):
    raise AssertionError(f"{label}: {what}")


def _check_supports(label, S, n_draws, p, s, what="supports"):
    if not isinstance(S, np.ndarray):
        _fail(label, f"{what} is a {type(S).__name__}, expected a numpy int64 array of shape {(n_draws, s)}")
    if S.shape != (n_draws, s):
        _fail(label, f"{what} has shape {S.shape}, expected (n_draws, s) = {(n_draws, s)}")
    if S.dtype != np.int64:
        _fail(label, f"{what} has dtype {S.dtype}, expected int64")
    bad = np.flatnonzero((S < 0).any(axis=1) | (S >= p).any(axis=1))
    if bad.size:
        _fail(label, f"{what} row {bad[0]} = {S[bad[0]].tolist()} has an index outside [0, p) = [0, {p}) "
                     "(an uncertified draw must still return valid supports, never -1 placeholders)")
    steps = np.diff(S, axis=1)
    bad = np.flatnonzero((steps <= 0).any(axis=1)) if s > 1 else np.array([], dtype=int)
    if bad.size:
        row = S[bad[0]]
        why = "repeated indices" if len(set(row.tolist())) < s else "not sorted ascending"
        _fail(label, f"{what} row {bad[0]} = {row.tolist()}: {why}")


def _check_draws(label, d, n_draws, p, s, dp_type):
    if not isinstance(d, Draws):
        _fail(label, f"draw returned a {type(d).__name__}, expected dpbench.core.contracts.Draws")
    _check_supports(label, d.supports, n_draws, p, s, "Draws.supports")
    if not isinstance(d.certified, (bool, np.bool_)):
        _fail(label, f"Draws.certified is {d.certified!r}, expected a bool")
    es = d.epsilon_spent
    if es is not None and not (isinstance(es, (int, float)) and es > 0):
        _fail(label, f"Draws.epsilon_spent = {es!r}, expected None or a positive float")
    if not (isinstance(d.delta, (int, float)) and (0 <= d.delta < 1 or math.isnan(d.delta))):
        _fail(label, f"Draws.delta = {d.delta!r}, expected the DP delta in [0, 1) (NaN if unknown)")
    if dp_type == "pure" and d.delta != 0:
        _fail(label, f"Draws.delta = {d.delta!r} but dp_type is 'pure' (delta must be 0)")
    ng = getattr(d, "no_guarantee", None)
    if ng is not None and not (isinstance(ng, str) and ng.strip()):
        _fail(label, f"Draws.no_guarantee = {ng!r}, expected None or a short reason")
    if not isinstance(d.diagnostics, dict):
        _fail(label, f"Draws.diagnostics is a {type(d.diagnostics).__name__}, expected a dict")
    try:
        json.dumps(d.diagnostics, allow_nan=True)
    except (TypeError, ValueError) as exc:
        _fail(label, f"Draws.diagnostics is not JSON-serialisable ({exc})")


def _fingerprint(obj, path="prepared", out=None, seen=None) -> dict:
    """path -> digest of every array, scalar and container inside ``obj`` (Memo contents left out).

    Objects other than containers, arrays, scalars and dataclasses (oracle sessions,
    functions) count by identity only: they may keep their own caches.
    """
    out = {} if out is None else out
    seen = set() if seen is None else seen
    if isinstance(obj, Memo):
        return out
    if isinstance(obj, np.ndarray):
        data = repr(obj.tolist()).encode() if obj.dtype == object else np.ascontiguousarray(obj).tobytes()
        out[path] = f"{obj.dtype}{obj.shape}:{hashlib.sha1(data).hexdigest()}"
        return out
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, np.generic)):
        out[path] = repr(obj)
        return out
    if id(obj) in seen:
        return out
    seen.add(id(obj))
    if isinstance(obj, dict):
        out[path] = f"dict with keys {sorted(map(repr, obj))}"
        for k, v in obj.items():
            _fingerprint(v, f"{path}[{k!r}]", out, seen)
    elif isinstance(obj, (list, tuple)):
        out[path] = f"{type(obj).__name__} of length {len(obj)}"
        for i, v in enumerate(obj):
            _fingerprint(v, f"{path}[{i}]", out, seen)
    elif isinstance(obj, (set, frozenset)):
        out[path] = repr(sorted(map(repr, obj)))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _fingerprint(getattr(obj, f.name), f"{path}.{f.name}", out, seen)
    else:
        out[path] = f"{type(obj).__qualname__} at {id(obj):#x}"
    return out


def _compare_fingerprints(label, before, after, during):
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            _fail(label, f"{during} mutated `prepared` at {path} (before: {before.get(path, 'absent')}, "
                         f"after: {after.get(path, 'absent')}); prepared is read-only after prepare "
                         "(per-epsilon caches belong in a dpbench.core.contracts.Memo)")


def _draws_difference(a: Draws, b: Draws) -> str | None:
    """What differs between two Draws (None if nothing; NaN equals NaN)."""
    if not np.array_equal(np.asarray(a.supports), np.asarray(b.supports)):
        return f"supports {np.asarray(a.supports).tolist()} then {np.asarray(b.supports).tolist()}"
    for f in ("certified", "epsilon_spent", "delta"):
        u, v = getattr(a, f), getattr(b, f)
        if not (u == v or (isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v))):
            return f"{f} {u!r} then {v!r}"
    return None


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng([20240601, *key])


# --------------------------------------------------------------------------- selectors


def check_selector(cls: type, problems=PROBLEMS, **params) -> None:
    """Check a :class:`dpbench.core.contracts.Selector` subclass against the selector contract.

    On each tiny problem (``problems``: (n, p, s, seed) tuples; Λ = 1, the ``enumerate``
    oracle, run δ = 1e-6, data clipped unless the class declares ``preprocessing =
    "none"``) it checks:

    * the class declarations (base class, name, ``dp_type``, ``neighbouring``, ``params``),
      as the plugin registry does;
    * every :class:`~dpbench.core.contracts.Draws` at several ε: supports int64 of shape
      (n_draws, s), rows sorted, distinct, in [0, p) (also when uncertified); valid
      ``certified``, ``epsilon_spent``, ``delta`` (0 for pure DP), JSON diagnostics;
    * randomness only from the rng: the same seed gives the same draws, and a fresh
      ``prepare`` (same seed, fresh trial) gives the same draws as one reused across ε;
    * ``prepared`` not mutated by ``draw`` or ``log_prob`` (a digest of every array and
      value in it, :class:`~dpbench.core.contracts.Memo` contents excepted, before and after);
    * a preparation stored as the results store does (``save_prepared``, the artefact
      encoding, ``load_prepared``, no pickle) gives the same draws and ``log_prob`` as the
      fresh one;
    * where ``log_prob`` returns numbers: finite or -inf, independent of index order,
      summing to 1 over all C(p, s) supports (tolerance :data:`LOG_TOL`), never -inf for a
      drawn support, equal to :func:`exponential_mechanism_log_probs` when the class
      declares ``output_law = EXPONENTIAL_MECHANISM``, and otherwise in agreement with the
      frequencies of :data:`CHI2_DRAWS` draws (chi-square, level :data:`CHI2_ALPHA`, fixed seed).

    Parameters
    ----------
    cls : type
        The selector class.
    problems : sequence of (n, p, s, seed)
        The tiny problems; keep C(p, s) small (the log_prob checks enumerate all supports).
    **params
        Passed to ``cls(**params)``.

    Raises
    ------
    AssertionError
        Naming the selector, the problem and what is wrong.
    """
    try:
        check_plugin_class("selector", cls)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"selector {getattr(cls, '__qualname__', cls)!r}: {exc}") from None
    for n, p, s, seed in problems:
        _check_selector_on(cls, params, n, p, s, seed)


def _check_selector_on(cls, params, n, p, s, seed):
    label = f"selector {cls.name!r} on a tiny problem (n={n}, p={p}, s={s}, seed={seed})"
    sel = cls(**params)
    clip = getattr(cls, "preprocessing", "clip") == "clip"  # the data the runner would give it
    trial = tiny_trial(n, p, s, seed, clip=clip)
    prepared = sel.prepare(trial, _rng(seed, 0))
    before = _fingerprint(prepared)
    n_draws = 7
    first = {}
    for k, eps in enumerate(EPSILONS):
        d = sel.draw(trial, prepared, eps, n_draws, _rng(seed, 1, k))
        _check_draws(f"{label}, epsilon={eps}", d, n_draws, p, s, cls.dp_type)
        _compare_fingerprints(label, before, _fingerprint(prepared), f"draw at epsilon={eps}")
        first[eps] = d
    one = sel.draw(trial, prepared, EPSILONS[0], 1, _rng(seed, 2))
    _check_draws(f"{label}, n_draws=1", one, 1, p, s, cls.dp_type)
    _compare_fingerprints(label, before, _fingerprint(prepared), "draw with n_draws=1")
    for k, eps in enumerate(EPSILONS):
        diff = _draws_difference(first[eps], sel.draw(trial, prepared, eps, n_draws, _rng(seed, 1, k)))
        if diff:
            _fail(label, f"two draws with the same rng seed differ at epsilon={eps} ({diff}); all randomness "
                         "must come from the rng argument, and a draw must not depend on earlier calls")
    # One prepare reused across epsilons must equal a fresh prepare for the last epsilon alone.
    fresh_trial = tiny_trial(n, p, s, seed, clip=clip)
    fresh = cls(**params)
    fresh_prep = fresh.prepare(fresh_trial, _rng(seed, 0))
    eps = EPSILONS[-1]
    alone = fresh.draw(fresh_trial, fresh_prep, eps, n_draws, _rng(seed, 1, len(EPSILONS) - 1))
    diff = _draws_difference(alone, first[eps])
    if diff:
        _fail(label, f"draws at epsilon={eps} depend on what ran before: after a fresh prepare, then after draws "
                     f"at {list(EPSILONS[:-1])} with the same prepared: {diff} (prepare must be deterministic "
                     "given its rng, and a Memo entry a pure function of its key)")
    _check_stored(label, cls, params, prepared, first, n, p, s, seed, clip)
    _check_log_prob(label, sel, trial, prepared, before)


def _check_stored(label, cls, params, prepared, first, n, p, s, seed, clip):
    """A preparation stored and loaded as the results store does gives the same draws and log_prob."""
    sel = cls(**params)
    try:
        state = sel.save_prepared(prepared)
        if state is None:
            return
        text, blob, _ = encode_artefact(state)
    except (TypeError, ValueError) as exc:
        _fail(label, f"save_prepared gave a state the results store cannot hold without pickle ({exc})")
    try:
        loaded = sel.load_prepared(decode_artefact(text, blob))
    except Exception as exc:  # noqa: BLE001 - any failure is the message
        _fail(label, f"load_prepared failed on the state save_prepared gave ({type(exc).__name__}: {exc})")
    trial = tiny_trial(n, p, s, seed, clip=clip)  # as on resume: a fresh trial, no shared work
    for k, eps in enumerate(EPSILONS):
        d = sel.draw(trial, loaded, eps, len(first[eps].supports), _rng(seed, 1, k))
        diff = _draws_difference(first[eps], d)
        if diff:
            _fail(label, f"draws at epsilon={eps} from the stored and reloaded preparation differ from those of "
                         f"the fresh one ({diff}); load_prepared must rebuild what prepare returned, bit for bit")
        support = first[eps].supports[0]
        a, b = sel.log_prob(trial, prepared, eps, support), sel.log_prob(trial, loaded, eps, support)
        if not (a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))):
            _fail(label, f"log_prob({support.tolist()}) at epsilon={eps} is {a!r} from the fresh preparation "
                         f"but {b!r} from the stored and reloaded one")


def _check_log_prob(label, sel, trial, prepared, before):
    S = all_supports(trial.p, trial.s)
    for k, eps in enumerate(EPSILONS):
        lp = [sel.log_prob(trial, prepared, eps, row) for row in S]
        known = [v is not None for v in lp]
        if not any(known):
            _compare_fingerprints(label, before, _fingerprint(prepared), "log_prob")
            return
        if not all(known):
            i = known.index(False)
            _fail(label, f"log_prob at epsilon={eps} is None for {S[i].tolist()} but a number for other "
                         "supports; return None for all supports of a trial or for none")
        bad = [i for i, v in enumerate(lp) if not isinstance(v, (float, int, np.floating)) or math.isnan(v)
               or v > LOG_TOL]
        if bad:
            _fail(label, f"log_prob({S[bad[0]].tolist()}) at epsilon={eps} = {lp[bad[0]]!r}; expected a float <= 0 "
                         "(the natural log of a probability)")
        lp = np.array(lp, dtype=float)
        total = logsumexp(lp)
        if not abs(total) <= LOG_TOL:
            _fail(label, f"probabilities over all C({trial.p}, {trial.s}) = {len(S)} supports sum to "
                         f"{math.exp(total):.12g}, not 1, at epsilon={eps}")
        rev = sel.log_prob(trial, prepared, eps, S[len(S) // 2][::-1].copy())
        if rev is None or not math.isclose(rev, lp[len(S) // 2], rel_tol=0, abs_tol=LOG_TOL):
            _fail(label, f"log_prob depends on the order of the indices: {S[len(S) // 2].tolist()} gives "
                         f"{lp[len(S) // 2]!r}, reversed gives {rev!r}")
        if sel.output_law == EXPONENTIAL_MECHANISM:
            _, ref = exponential_mechanism_log_probs(trial, eps)
            err = np.abs(np.exp(lp) - np.exp(ref))
            i = int(np.argmax(err))
            if err[i] > LOG_TOL and not np.allclose(lp, ref, rtol=0, atol=LOG_TOL):
                _fail(label, f"declares output_law = {EXPONENTIAL_MECHANISM!r} but at epsilon={eps} "
                             f"P({S[i].tolist()}) = {math.exp(lp[i]):.6g}, while the exponential mechanism "
                             f"exp(-eps R / (2 Delta)) by enumeration gives {math.exp(ref[i]):.6g}")
        if k == 1:
            draws = sel.draw(trial, prepared, eps, CHI2_DRAWS, _rng(trial.p, trial.s, 3)).supports
            inside = {tuple(r) for r, v in zip(S.tolist(), lp) if v > -math.inf}
            out = [r for r in draws.tolist() if tuple(r) not in inside]
            if out:
                _fail(label, f"draw returned {out[0]} at epsilon={eps}, a support log_prob says is impossible")
            pos = lp > -math.inf
            pval, cells = chi_square_gof(draws, S[pos], lp[pos])
            if pval < CHI2_ALPHA:
                _fail(label, f"the frequencies of {CHI2_DRAWS} draws at epsilon={eps} disagree with exp(log_prob) "
                             f"(chi-square p-value {pval:.3g} < {CHI2_ALPHA} over {cells} cells, fixed seed)")
    _compare_fingerprints(label, before, _fingerprint(prepared), "log_prob")


# --------------------------------------------------------------------------- privacy audit


def audit_selector(cls: type, *, quick: bool = False, seed: int = 0, epsilon: float = 1.0, delta: float = 1e-6,
                   pairs=None, **params):
    """Audit a selector's privacy claim on neighbouring data sets (``dpbench audit`` for a class).

    Exact mode when the class gives ``log_prob`` (privacy loss and hockey-stick divergence over
    all C(p, s) supports), Monte-Carlo lower bounds on ε otherwise; each pair is held to the
    guarantee its rows state (:mod:`dpbench.bench.audit`, docs/auditing.md). Use it in a plugin's own
    tests next to :func:`check_selector`::

        def test_my_selector_is_private():
            audit = audit_selector(MySelector, quick=True)
            assert not audit.finding, audit.reproduce

    Parameters
    ----------
    cls : type
        The selector class (registered or not).
    quick : bool
        The small budget (:data:`dpbench.bench.audit.QUICK_BUDGET`) instead of the default one.
    seed : int
        Seed of every pair and draw.
    epsilon, delta : float
        Requested ε and the run's δ.
    pairs : list of str, optional
        Audit only these pairs (as printed in ``reproduce``).
    **params
        Passed to ``cls(**params)``.

    Returns
    -------
    dpbench.bench.audit.SelectorAudit
        ``finding`` (bool), ``worst`` (the pair and its figures), ``mode``, ``claims``,
        ``reproduce`` (the command line of the worst pair).

    Raises
    ------
    AssertionError
        The class breaks the selector contract's declarations.
    UserInputError
        A refused parameter or audit size.
    """
    from dpbench.bench.audit import DEFAULT_BUDGET, QUICK_BUDGET, AuditSetup, audit_instance

    try:
        check_plugin_class("selector", cls)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"selector {getattr(cls, '__qualname__', cls)!r}: {exc}") from None
    return audit_instance(cls(**params), cls.name, AuditSetup(epsilon=epsilon, delta=delta),
                          QUICK_BUDGET if quick else DEFAULT_BUDGET, seed, pairs)


# --------------------------------------------------------------------------- solvers


def _rel_close(a, b, tol=1e-6) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


def check_solver(cls: type, problems=((40, 8, 3, 0), (30, 7, 2, 1)), lam: float = 1.0, **params) -> None:
    """Check a :class:`dpbench.core.contracts.Solver` subclass against brute force on tiny problems.

    For each problem (clipped Gaussian design, Λ = ``lam``, r = 1.1) it checks that the
    session's certified answers equal the enumeration of every support: the optimum, the
    k-th best support (the k - 1 best excluded, k = 2, 3), the best support at each
    overlap ``|S ∩ S1| = k`` with the optimum S1, the best with a column forced in and
    out, and the supports below a threshold (``supports_below``). Objectives must agree
    to a relative 1e-6, returned supports be sorted int64 and valid, each
    ``objective`` be R(S, D) of the returned support and ``lower_bound <= objective``.

    Raises
    ------
    AssertionError
        Naming the solver, the query and the disagreement.
    dpbench.core.errors.SolverLimitError
        From ``session`` when the backend is unavailable here (callers may skip).
    """
    try:
        check_plugin_class("solver", cls)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"solver {getattr(cls, '__qualname__', cls)!r}: {exc}") from None
    for n, p, s, seed in problems:
        trial = tiny_trial(n, p, s, seed, lam=lam)
        label = f"solver {cls.name!r} on a tiny problem (n={n}, p={p}, s={s}, seed={seed}, lam={lam})"
        S_all, v_all = brute_force_scores(trial)
        session = cls(**params).session(trial.score, s)
        order = np.lexsort((np.arange(len(v_all)), v_all))

        def expect(query, mask, **kw):
            res = session.solve(**kw)
            _check_oracle_result(label, query, res, trial.score, p, s)
            if not mask.any():
                if res.status != "infeasible":
                    _fail(label, f"{query}: no support is feasible but the status is {res.status!r}")
                return res
            best = float(v_all[mask].min())
            if res.status != "optimal":
                _fail(label, f"{query}: status {res.status!r} on a {len(v_all)}-support problem; expected 'optimal'")
            k = int(np.flatnonzero((S_all == res.support).all(axis=1))[0])
            if not mask[k]:
                _fail(label, f"{query}: returned {res.support.tolist()}, which violates the constraints")
            if not _rel_close(res.objective, best):
                _fail(label, f"{query}: objective {res.objective!r} but brute force gives {best!r} "
                             f"at {S_all[mask][np.argmin(v_all[mask])].tolist()}")
            return res

        opt = expect("solve()", np.ones(len(v_all), bool))
        for k in (2, 3):
            excl = S_all[order[:k - 1]]
            mask = np.ones(len(v_all), bool)
            mask[order[:k - 1]] = False
            expect(f"{k}-th best (solve(exclude=the {k - 1} best))", mask, exclude=excl)
        overlap = np.isin(S_all, opt.support).sum(axis=1)
        for k in range(s + 1):
            expect(f"solve(overlap=(S1, {k}))", overlap == k, overlap=(opt.support, k))
        j = int(np.setdiff1d(np.arange(p), opt.support)[0])
        expect(f"solve(fixed_in=[{j}])", (S_all == j).any(axis=1), fixed_in=[j])
        j = int(opt.support[0])
        expect(f"solve(fixed_out=[{j}])", ~(S_all == j).any(axis=1), fixed_out=[j])
        tau = float(v_all[order[4]])
        res = session.supports_below(tau)
        want = {tuple(r) for r in S_all[v_all <= tau].tolist()}
        got = {tuple(r) for r in np.asarray(res.supports).tolist()}
        if not res.certified or got != want:
            _fail(label, f"supports_below({tau!r}) returned {len(got)} supports (certified={res.certified}); "
                         f"brute force has {len(want)} (missing {sorted(want - got)[:3]}, extra {sorted(got - want)[:3]})")


def _check_oracle_result(label, query, res, score, p, s):
    if res.support is None:
        return
    sup = np.asarray(res.support)
    if sup.dtype != np.int64 or sup.shape != (s,):
        _fail(label, f"{query}: support has dtype {sup.dtype} and shape {sup.shape}, expected int64 of shape ({s},)")
    _check_supports(label, sup[None, :], 1, p, s, f"{query} support")
    true = float(score(sup[None, :])[0])
    if not _rel_close(res.objective, true, 1e-9):
        _fail(label, f"{query}: objective {res.objective!r} is not R(S, D) = {true!r} of its support {sup.tolist()}")
    if res.lower_bound > res.objective + 1e-9 * max(1.0, abs(res.objective)):
        _fail(label, f"{query}: lower_bound {res.lower_bound!r} above the objective {res.objective!r}")


# --------------------------------------------------------------------------- generators


def check_generator(cls: type, **params) -> None:
    """Check a :class:`dpbench.core.contracts.Generator` subclass on one small setting (``**params``).

    Checks: ``X`` float64 of shape (n, p) and ``y`` of shape (n,), finite; n, p, s equal
    to the declared parameters of that name; a true support int64 of shape (s,), sorted,
    distinct, in [0, p); the same rng seed gives bit-identical data and another seed
    different data (the rng is used); ``setting()`` is a JSON-serialisable dict naming
    the generator.

    Raises
    ------
    AssertionError
        Naming the generator and what is wrong.
    """
    try:
        check_plugin_class("generator", cls)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"generator {getattr(cls, '__qualname__', cls)!r}: {exc}") from None
    gen = cls(**params)
    label = f"generator {cls.name!r} with {params}"
    a, b, c = (gen.generate(np.random.default_rng(seed)) for seed in (11, 11, 12))
    if not isinstance(a, Problem):
        _fail(label, f"generate returned a {type(a).__name__}, expected dpbench.core.problem.Problem")
    X, y = a.X, a.y
    if X.ndim != 2 or X.dtype != np.float64 or y.shape != (X.shape[0],):
        _fail(label, f"X has shape {X.shape} and dtype {X.dtype}, y shape {y.shape}; expected float64 (n, p) and (n,)")
    n, p = X.shape
    for key, got in (("n", n), ("p", p), ("s", a.s)):
        want = gen.config.get(key)
        if want is not None and key in cls.params and want != got:
            _fail(label, f"parameter {key} = {want} but the problem has {key} = {got}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        _fail(label, "X or y has NaN or inf")
    if a.true_support is None:
        _fail(label, "a simulation design must set the true support")
    _check_supports(label, np.asarray(a.true_support)[None, :], 1, p, a.s, "true_support")
    if not (np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
            and np.array_equal(a.true_support, b.true_support)):
        _fail(label, "two generate calls with the same rng seed give different data; use only the rng argument")
    if np.array_equal(a.X, c.X) and np.array_equal(a.y, c.y):
        _fail(label, "different rng seeds give identical data: generate ignores its rng")
    setting = gen.setting()
    if not isinstance(setting, dict) or setting.get("generator") != cls.name:
        _fail(label, f"setting() = {setting!r} must be a dict with 'generator': {cls.name!r}")
    try:
        json.dumps(setting)
    except (TypeError, ValueError) as exc:
        _fail(label, f"setting() is not JSON-serialisable ({exc})")

