"""The audit of one selector: pair search, exact or Monte-Carlo statistics, verdict.

it builds trials and calls selectors through the public contract
only (:class:`dpbench.api.Selector`: ``prepare``, ``draw``, ``log_prob``; the guarantee a
row states, :meth:`dpbench.api.Draws.guarantee`), so any registered or third-party selector
is audited the same way.

**What is audited.** On a pair (D, D') each side's draw states a guarantee (``pure ε``,
``(ε, δ)`` or ``none: <reason>``); a stated guarantee is a claim about its data set and
every neighbour of it, so the pair is held to the weaker of the guarantees its two sides
state, or to nothing when neither states one (then the figures are reported for information
and can never be a finding). ``prepare`` runs on both sides with the same named random
stream, so the audit checks the law of ``draw`` given the preparation, which is what
``log_prob`` states (randomness a mechanism's privacy relies on belongs in ``draw``).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import asdict, dataclass, field

import numpy as np

from dpbench.core.contracts.selector import BatchLogProb, Draws, has_guarantee
from dpbench.core.errors import UserInputError
from dpbench.core.seeding import rng_for
from dpbench.core.supports import iter_supports, n_supports
from dpbench.bench.trial import PrivacySetup, Trial
from dpbench.bench.audit.laws import EXACT_TOL, choose_event, evaluate_event, hockey_stick, privacy_loss
from dpbench.bench.audit.pairs import Pair, neighbour_move, pair_problems, search_pairs
from dpbench.bench.registry import PluginInstances

#: Largest C(p, s) for which the exact mode enumerates both laws.
EXACT_LIMIT = 5000
#: Replacement rows of a selector that runs on unclipped data (``preprocessing = "none"``)
#: reach this many times the clipping box (an outlier; nothing bounds it).
UNCLIPPED_BOX = 4.0


@dataclass(frozen=True)
class Budget:
    """The deterministic work limits of one selector's audit (never a time limit).

    Parameters
    ----------
    pairs : int
        Exact mode: candidate pairs of the search (structured rows first, :func:`search_pairs`).
    climb : int
        Exact mode: hill-climb steps from the best pair (each one more pair).
    mc_pairs, mc_climb : int
        The same in Monte-Carlo mode (each pair costs ``2 * search_draws`` draws).
    search_draws : int
        Monte-Carlo mode: draws per side on each searched pair (event choice and ranking).
    final_draws : int
        Monte-Carlo mode: fresh draws per side on each finalist (the reported bound).
    finalists : int
        Monte-Carlo mode: best pairs re-drawn; the confidence is split among them (Bonferroni).
    """

    pairs: int = 120
    climb: int = 120
    mc_pairs: int = 16
    mc_climb: int = 4
    search_draws: int = 1000
    final_draws: int = 30000
    finalists: int = 2

    def __post_init__(self):
        for name, value in asdict(self).items():
            least = 0 if name.endswith("climb") else 1
            if not (isinstance(value, int) and value >= least):
                raise UserInputError(f"audit budget {name} = {value!r}: give an integer >= {least}")


#: Default budget (about 10 minutes for the seven built-ins on 2 cores, docs/auditing.md).
DEFAULT_BUDGET = Budget()
#: ``--quick``: a smoke audit (about a minute for the seven built-ins).
QUICK_BUDGET = Budget(pairs=24, climb=24, mc_pairs=4, mc_climb=0, search_draws=300, final_draws=3000, finalists=1)


@dataclass(frozen=True)
class AuditSetup:
    """The privacy setup and problem sizes of an audit.

    Parameters
    ----------
    epsilon, delta : float
        Requested ε and the run's δ (what approximate-DP selectors calibrate to).
    lam, b_x, b_y, r, sensitivity_bound
        As in :class:`dpbench.bench.trial.PrivacySetup` (Λ = 1: small penalties let one row move the
        optimum).
    solver : str
        Oracle backend of the trials (``enumerate``: exact on these sizes).
    confidence : float
        Monte-Carlo mode: confidence of the reported lower bound.
    sizes : tuple of (n, p, s)
        Exact mode: problem sizes the search cycles over (C(p, s) <= :data:`EXACT_LIMIT`); large
        n concentrates the law on the optimum, where one row moves the loss most.
    mc_sizes : tuple of (n, p, s)
        Monte-Carlo mode: the same (small n: a draw's cost often grows with n).
    """

    epsilon: float = 1.0
    delta: float = 1e-6
    lam: float = 1.0
    b_x: float = 0.5
    b_y: float = 0.5
    r: float = 1.1
    sensitivity_bound: str = "tight"
    solver: str = "enumerate"
    confidence: float = 0.95
    sizes: tuple = ((200, 7, 2), (100, 8, 3), (50, 6, 2))
    mc_sizes: tuple = ((20, 7, 2), (12, 8, 3), (8, 5, 2))

    def __post_init__(self):
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise UserInputError(f"--epsilon {self.epsilon!r}: give a finite ε > 0")
        if not 0 <= self.delta < 1:
            raise UserInputError(f"--delta {self.delta!r}: give a δ in [0, 1)")
        if not (math.isfinite(self.lam) and self.lam >= 0):
            raise UserInputError(f"--lam {self.lam!r}: give a ridge penalty Lambda >= 0")
        if not 0 < self.confidence < 1:
            raise UserInputError(f"--confidence {self.confidence!r}: give a level in (0, 1), e.g. 0.95")

    def privacy(self) -> PrivacySetup:
        return PrivacySetup(b_x=self.b_x, b_y=self.b_y, r=self.r, lam=self.lam,
                            sensitivity_bound=self.sensitivity_bound, delta=self.delta)


@dataclass(frozen=True)
class Claim:
    """The guarantee a pair is held to: ``text`` as rows state it, ε and δ (None: no claim)."""

    text: str
    epsilon: float | None = None
    delta: float | None = None


def claim_of(draws: Draws, dp_type: str, epsilon: float) -> Claim:
    """The guarantee one side's draw states (:meth:`Draws.guarantee`, the rows' own decision)."""
    text = draws.guarantee(dp_type, epsilon)
    if not has_guarantee(text):
        return Claim(text)
    eps = float(epsilon if draws.epsilon_spent is None else draws.epsilon_spent)
    return Claim(text, eps, float(draws.delta))


def pair_claim(a: Claim, b: Claim) -> Claim:
    """The weaker of two sides' guarantees; the one stated when only one is; none otherwise."""
    stated = [c for c in (a, b) if c.epsilon is not None]
    if not stated:
        return a
    if len(stated) == 1:
        return stated[0]
    weaker = max(stated, key=lambda c: (c.delta, c.epsilon))
    return Claim(weaker.text, max(a.epsilon, b.epsilon), max(a.delta, b.delta))


@dataclass
class PairResult:
    """What one pair showed. ``excess`` is the figure over what the claim allows (> 1: finding)."""

    spec: str
    claim: str
    excess: float
    finding: bool
    loss: float | None = None  # exact: max |log P_D - log P_D'| in nats
    hockey_stick: float | None = None  # exact: at the claimed ε (the run's ε without a claim)
    support: list | None = None  # exact: where the loss is reached
    epsilon_lb: float | None = None  # Monte-Carlo: lower bound on ε (nats)
    bound: dict | None = None  # Monte-Carlo: p_lo, p_hi, counts, draws
    error: str | None = None


@dataclass
class SelectorAudit:
    """The audit of one selector (one row of the table, ``--json`` and the HTML section)."""

    method: str
    dp_type: str
    mode: str
    claims: list
    pairs_tried: int
    worst: PairResult | None
    finding: bool
    epsilon: float
    delta: float
    confidence: float | None = None
    draws: int | None = None
    reproduce: str = ""
    errors: int = 0
    pairs: list = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.worst is None:
            return "error"
        if self.finding:
            return "FINDING"
        return "ok" if any(has_guarantee(c) for c in self.claims) else "nothing claimed"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["verdict"] = self.verdict
        return d


class _Auditor:
    """The state of one selector's audit: its trials, laws and draws, all from named streams."""

    def __init__(self, sel, name: str, setup: AuditSetup, budget: Budget, seed: int):
        self.sel, self.name, self.setup, self.budget, self.seed = sel, name, setup, budget, seed
        scale = 1.0 if sel.preprocessing == "clip" else UNCLIPPED_BOX
        self.box = (setup.b_x * scale, setup.b_y * scale)
        self._supports = {}

    def trials(self, pair: Pair):
        for prob in pair_problems(pair, *self.box):
            yield Trial.from_problem(prob, self.setup.privacy(), preprocessing=self.sel.preprocessing,
                                     solver=self.setup.solver, instances=PluginInstances())

    def prepared(self, pair: Pair):
        out = []
        for trial in self.trials(pair):
            # the same stream on both sides: the law of draw given the preparation is audited
            out.append((trial, self.sel.prepare(trial, rng_for(self.seed, "audit-prepare", self.name, pair.spec()))))
        return out

    def all_supports(self, p, s):
        if (p, s) not in self._supports:
            self._supports[p, s] = np.concatenate(list(iter_supports(p, s)))
        return self._supports[p, s]

    def claim(self, draws: Draws) -> Claim:
        return claim_of(draws, self.sel.dp_type, self.setup.epsilon)

    def exact(self, pair: Pair) -> PairResult | None:
        (ta, pa), (tb, pb) = self.prepared(pair)
        return exact_pair(self.sel, ta, pa, tb, pb, self.setup.epsilon, pair.spec(), self.seed, self.name,
                          self.all_supports(pair.p, pair.s))

    def sample(self, pair: Pair, n: int, stage: str):
        out = []
        for side, (trial, prep) in zip(("D", "D'"), self.prepared(pair)):
            rng = rng_for(self.seed, "audit-draw", self.name, pair.spec(), side, stage)
            out.append(self.sel.draw(trial, prep, self.setup.epsilon, n, rng))
        return out

    def _mc_alpha(self):
        return (1 - self.setup.confidence) / self.budget.finalists

    def search_mc(self, pair: Pair) -> tuple[PairResult, tuple]:
        da, db = self.sample(pair, self.budget.search_draws, "search")
        claim = pair_claim(self.claim(da), self.claim(db))
        delta = claim.delta if claim.delta is not None else self.setup.delta
        event, forward, score = choose_event(da.supports, db.supports, delta, self._mc_alpha())
        eps = claim.epsilon if claim.epsilon is not None else self.setup.epsilon
        res = PairResult(pair.spec(), claim.text, max(score, 0.0) / eps, False, epsilon_lb=score)
        return res, (event, forward, claim)

    def final_mc(self, pair: Pair, chosen) -> PairResult:
        event, forward, _ = chosen
        da, db = self.sample(pair, self.budget.final_draws, "final")
        claim = pair_claim(self.claim(da), self.claim(db))
        delta = claim.delta if claim.delta is not None else self.setup.delta
        bound = evaluate_event(event, forward, da.supports, db.supports, delta, self._mc_alpha())
        eps = claim.epsilon if claim.epsilon is not None else self.setup.epsilon
        lb = bound["epsilon_lb"]
        finding = claim.epsilon is not None and lb > claim.epsilon
        bound["event_size"] = len(event)
        bound["direction"] = "D over D'" if forward else "D' over D"
        return PairResult(pair.spec(), claim.text, max(lb, 0.0) / eps, finding, epsilon_lb=lb, bound=bound)


def selector_law(sel, trial, prepared, epsilon, supports):
    """``log P(draw returns S)`` for every row of ``supports`` (shape (K, s)), or None without a law.

    Uses the batched ``log_probs`` of a :class:`dpbench.api.BatchLogProb` selector, else one
    ``log_prob`` call per support (the public contract only).
    """
    if isinstance(sel, BatchLogProb):
        if not sel.has_law(prepared):
            return None
        return np.asarray(sel.log_probs(trial, prepared, epsilon, supports), dtype=float)
    out = np.empty(len(supports))
    for k, row in enumerate(supports):
        v = sel.log_prob(trial, prepared, epsilon, row)
        if v is None:
            return None
        out[k] = v
    return out


def exact_pair(sel, trial_a, prep_a, trial_b, prep_b, epsilon: float, spec: str = "", seed: int = 0,
               name: str = "", supports=None) -> PairResult | None:
    """The exact audit of one pair of prepared trials: privacy loss, hockey-stick, verdict.

    Parameters
    ----------
    sel : Selector
    trial_a, trial_b : Trial
        Neighbouring trials (replace-one).
    prep_a, prep_b
        Their preparations (``sel.prepare``).
    epsilon : float
        Requested ε.
    spec, seed, name : optional
        Label of the pair and the stream of the one draw that reads each side's guarantee.
    supports : ndarray of shape (C(p, s), s), optional
        All supports (lexicographic); enumerated when omitted.

    Returns
    -------
    PairResult or None
        None when the selector gives no law for one side.
    """
    if supports is None:
        supports = np.concatenate(list(iter_supports(trial_a.p, trial_a.s)))
    la = selector_law(sel, trial_a, prep_a, epsilon, supports)
    lb = selector_law(sel, trial_b, prep_b, epsilon, supports)
    if la is None or lb is None:
        return None
    claims = [claim_of(sel.draw(tr, pr, epsilon, 1, rng_for(seed, "audit-claim", name, spec, side)), sel.dp_type,
                       epsilon) for tr, pr, side in ((trial_a, prep_a, "D"), (trial_b, prep_b, "D'"))]
    claim = pair_claim(*claims)
    loss, k = privacy_loss(la, lb)
    eps = claim.epsilon if claim.epsilon is not None else epsilon
    hs = hockey_stick(la, lb, eps)
    if claim.epsilon is None:
        excess, finding = loss / eps, False
    elif claim.delta == 0:
        excess = loss / eps
        finding = loss > eps * (1 + EXACT_TOL) + EXACT_TOL
    else:
        excess = max(hs / claim.delta, min(loss / eps, 1.0))
        finding = hs > claim.delta * (1 + 1e-6) + 1e-12
    return PairResult(spec, claim.text, excess, finding, loss=loss, hockey_stick=hs, support=supports[k].tolist())


def _safe(fn, pair):
    try:
        return fn(pair), None
    except UserInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failing pair is recorded and the audit goes on
        return None, PairResult(pair.spec(), "", -1.0, False, error=f"{type(exc).__name__}: {exc}")


def _key(res: PairResult):
    # findings first, then pairs that state a guarantee (what is audited), then the figure
    return (res.finding, has_guarantee(res.claim), res.excess, res.loss or 0.0)


def audit_instance(sel, name: str, setup: AuditSetup = AuditSetup(), budget: Budget = DEFAULT_BUDGET,
                   seed: int = 0, pairs=None, command: str | None = None) -> SelectorAudit:
    """Audit one selector instance on neighbouring pairs (exact mode when it gives ``log_prob``).

    Parameters
    ----------
    sel : Selector
        The instance (its parameters already set).
    name : str
        Its name in the output and in the random streams.
    setup : AuditSetup
    budget : Budget
    seed : int
        Everything (base problems, rows, hill climb, draws) comes from named streams of it.
    pairs : list of Pair or str, optional
        Audit exactly these pairs (``--pair``: reproduce a finding) instead of searching.
    command : str, optional
        The command line prefix that reproduces this audit (a finding appends ``--pair``).

    Returns
    -------
    SelectorAudit

    Raises
    ------
    UserInputError
        A size the selector refuses (:meth:`Selector.check_setting`) or a malformed pair.
    """
    fixed = [Pair.parse(p) if isinstance(p, str) else p for p in (pairs or [])]
    sizes = sorted({(p.n, p.p, p.s) for p in fixed}) or list(setup.sizes)
    for n, p, s in sizes + list(setup.mc_sizes):
        sel.check_setting(p, s)
    aud = _Auditor(sel, name, setup, budget, seed)
    probe = fixed[:1] or search_pairs(seed, sizes, 1, setup.lam, setup.r)
    exact_ok = n_supports(probe[0].p, probe[0].s) <= EXACT_LIMIT
    first, err = _safe(aud.exact, probe[0]) if exact_ok else (None, None)
    mode = "exact" if first is not None else "monte-carlo"
    if mode != "exact" and not fixed:
        sizes = list(setup.mc_sizes)
    count, climb = (budget.pairs, budget.climb) if mode == "exact" else (budget.mc_pairs, budget.mc_climb)
    candidates = fixed or search_pairs(seed, sizes, count, setup.lam, setup.r)
    results, errors = [], [err] if err is not None else []
    if mode == "exact":
        results.append(first)
        evaluate = aud.exact
    else:
        evaluate = aud.search_mc
    chosen = {}
    for pair in candidates[1:] if mode == "exact" else candidates:
        res, err = _safe(evaluate, pair)
        if err is not None or res is None:
            errors.append(err or PairResult(pair.spec(), "", -1.0, False, error="no law for this pair"))
            continue
        if mode != "exact":
            res, chosen[res.spec] = res[0], res[1]
        results.append(res)
    if not fixed and results:
        rng = rng_for(seed, "audit-climb", name)
        best = max(results, key=_key)
        best_pair = Pair.parse(best.spec)
        for _ in range(climb):
            trial_pair = neighbour_move(best_pair, rng)
            res, err = _safe(evaluate, trial_pair)
            if res is None:
                errors.append(err or PairResult(trial_pair.spec(), "", -1.0, False, error="no law for this pair"))
                continue
            if mode != "exact":
                res, chosen[res.spec] = res[0], res[1]
            results.append(res)
            if _key(res) > _key(best):
                best, best_pair = res, trial_pair
    confidence = draws = None
    if mode != "exact" and results:
        finalists = sorted(results, key=_key, reverse=True)[:budget.finalists]
        finals = []
        for res in finalists:
            out, err = _safe(lambda pr: aud.final_mc(pr, chosen[res.spec]), Pair.parse(res.spec))
            if out is None:
                errors.append(err)
            else:
                finals.append(out)
        results = finals + [r for r in results if r not in finalists]
        confidence, draws = setup.confidence, budget.final_draws
        ranked = finals
    else:
        ranked = results
    worst = max(ranked, key=_key) if ranked else None
    claims = sorted({r.claim for r in results if r.claim})
    finding = bool(worst and worst.finding)
    base = command or f"dpbench audit --methods {name} --epsilon {setup.epsilon:g} --delta {setup.delta:g} --seed {seed}"
    reproduce = f"{base} --pair {shlex.quote(worst.spec)}" if worst is not None else base
    top = sorted(results, key=_key, reverse=True)[:10]
    return SelectorAudit(name, sel.dp_type, mode, claims, len(results) + len(errors), worst, finding,
                         setup.epsilon, setup.delta, confidence, draws, reproduce, len(errors), top + errors[:3])
