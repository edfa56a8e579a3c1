"""(epsilon, delta) accounting of iterative mechanisms with Google's ``dp-accounting`` library.

An iterative selector (``noisy-iht``, ``fw-lasso``) runs T steps, each a
small differentially private mechanism whose noise is set by one *noise multiplier* sigma
(noise scale over the step's sensitivity). Given the run's (epsilon, delta) and T, the
selector asks :func:`calibrate` for the smallest sigma (to a relative 1e-3) at which the
accountant states that the whole run is (epsilon, delta)-DP; every row then records the
accountant, the per-step parameters and the (epsilon, delta) the accountant states
(:func:`accounting_diagnostics`). The same accountant composes the selection with a private
estimate (``--estimate``) when that is tighter than basic composition
(:func:`compose_with_pure`).

A run is described by a tuple of :class:`Step`; three kinds of step are known:

``"laplace"``
    The Laplace mechanism: noise Lap(sigma * Delta) on a scalar whose value changes by at most
    Delta between replace-one neighbouring data sets. Its privacy-loss pair is exactly that of
    dp-accounting's ``LaplaceDpEvent(sigma)`` / ``from_laplace_mechanism(sigma)`` (which call
    Delta the add/remove sensitivity; the pair of distributions is the same whatever relation
    defines Delta). A d-dimensional release with Delta bounding *each* coordinate is d steps
    (the privacy loss of independent coordinates adds, and each coordinate's pair is
    dominated by the one-dimensional pair). Pure (1/sigma)-DP alone (Dwork & Roth 2014,
    Theorem 3.6).
``"pure"``
    Any epsilon_0-DP mechanism (report-noisy-max with Laplace noise, peeling). Accounted by its
    dominating pair, binary randomized response with flip probability 1/(1 + e^epsilon_0)
    (Kairouz, Oh & Viswanath 2015, Theorem 3.4: every epsilon_0-DP pair is a post-processing
    of it): dp-accounting's ``RandomizedResponseDpEvent(2 / (1 + e^epsilon_0), 2)`` under
    ``REPLACE_ONE``.
``"exponential"``
    The exponential mechanism with privacy parameter epsilon_0 (McSherry & Talwar 2007): it is
    epsilon_0-DP and epsilon_0-bounded-range, hence (epsilon_0^2 / 8)-zCDP (Cesar & Rogers
    2021, "Bounding, concentrating, and truncating", Lemma 3.2 / Theorem 3.5 with Bun &
    Steinke 2016). The RDP accountant uses the zCDP bound (``ZCDpEvent``); the PLD accountant
    the pure-DP pair above (sound, not tight for this mechanism).

Accountants (``accountant`` argument): ``"pld"`` -- privacy loss distributions (Meiser &
Mohammadi 2018; Koskela et al. 2020; dp-accounting's ``privacy_loss_distribution``, pessimistic
discretisation, interval :data:`PLD_DISCRETISATION`), tight for the composition of the pairs
above; ``"rdp"`` -- Renyi DP (Mironov 2017; ``RdpAccountant``), with dp-accounting's
conversion to (epsilon, delta). For delta = 0 both reduce to ``"basic"`` composition (the sum
of the steps' pure epsilons; Dwork & Roth 2014, Theorem 3.16), the only one that states a pure
guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from dpbench.core.errors import UserInputError

#: Accountants a selector may be asked to use.
ACCOUNTANTS = ("pld", "rdp")
#: Kinds of step (see the module docstring).
STEP_KINDS = ("pure", "exponential", "laplace")
#: Value discretisation interval of the PLD accountant (dp-accounting's default).
PLD_DISCRETISATION = 1e-4
#: Relative precision of :func:`calibrate`: the returned sigma is at most this much above the
#: smallest one the accountant accepts.
CALIBRATION_RTOL = 1e-3


@dataclass(frozen=True)
class Step:
    """``count`` independent repetitions of one private step.

    Attributes
    ----------
    kind : {"pure", "exponential", "laplace"}
    parameter : float
        epsilon_0 of a ``"pure"`` or ``"exponential"`` step; the noise multiplier sigma
        (Laplace scale over sensitivity) of a ``"laplace"`` step. Positive and finite.
    count : int
        Number of repetitions, >= 1.
    """

    kind: str
    parameter: float
    count: int

    def __post_init__(self):
        if self.kind not in STEP_KINDS:
            raise ValueError(f"unknown step kind {self.kind!r}; use one of {STEP_KINDS}")
        if not (math.isfinite(self.parameter) and self.parameter > 0) or self.count < 1:
            raise ValueError(f"step {self.kind}: parameter {self.parameter!r} must be positive and finite "
                             f"and count {self.count!r} >= 1")

    @property
    def pure_epsilon(self) -> float:
        """The step's pure-DP epsilon: epsilon_0, or 1/sigma for the Laplace mechanism."""
        return 1.0 / self.parameter if self.kind == "laplace" else self.parameter

    def as_json(self) -> list:
        """``[kind, parameter, count]`` (a row's ``dp_steps`` diagnostic)."""
        return [self.kind, float(self.parameter), int(self.count)]


def steps_from_json(obj) -> tuple[Step, ...]:
    """The steps of a row's ``dp_steps`` diagnostic (inverse of :meth:`Step.as_json`)."""
    return tuple(Step(str(k), float(v), int(c)) for k, v, c in obj)


def basic_epsilon(steps) -> float:
    """Basic composition: the sum of the steps' pure epsilons (Dwork & Roth 2014, Theorem 3.16)."""
    return float(sum(st.count * st.pure_epsilon for st in steps))


def _rr_noise(eps0: float) -> float:
    # RandomizedResponseDpEvent(p, 2) outputs the input with probability 1 - p/2, so its
    # epsilon is log((2 - p) / p); p = 2 / (1 + e^eps0) gives eps0.
    return 2.0 / (1.0 + math.exp(eps0))


def _pld(steps):
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for st in steps:
        if st.kind == "laplace":
            one = pld.from_laplace_mechanism(parameter=st.parameter, value_discretization_interval=PLD_DISCRETISATION)
        else:
            one = pld.from_randomized_response(noise_parameter=_rr_noise(st.parameter), num_buckets=2,
                                               value_discretization_interval=PLD_DISCRETISATION,
                                               neighboring_relation=NeighboringRelation.REPLACE_ONE)
        one = one.self_compose(st.count) if st.count > 1 else one
        total = one if total is None else total.compose(one)
    return total


def _rdp(steps):
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

    acc = RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    for st in steps:
        if st.kind == "laplace":
            event = dp_event.LaplaceDpEvent(st.parameter)
        elif st.kind == "exponential":
            event = dp_event.ZCDpEvent(st.parameter ** 2 / 8.0)
        else:
            event = dp_event.RandomizedResponseDpEvent(_rr_noise(st.parameter), 2)
        acc.compose(event, st.count)
    return acc


def _check(accountant: str, delta: float):
    if accountant not in ACCOUNTANTS:
        raise UserInputError(f"unknown accountant {accountant!r}; use one of {', '.join(ACCOUNTANTS)}")
    if not (0.0 <= delta < 1.0):
        raise UserInputError(f"delta = {delta!r} must be in [0, 1); set --delta")


def epsilon(steps, delta: float, accountant: str = "pld") -> float:
    """The epsilon the accountant states for the composition of ``steps`` at ``delta``.

    Parameters
    ----------
    steps : sequence of Step
    delta : float
        Target delta in [0, 1); 0 gives basic composition (:func:`basic_epsilon`).
    accountant : {"pld", "rdp"}

    Returns
    -------
    float
        epsilon such that the composition is (epsilon, delta)-DP under replace-one, as the
        accountant states it (never above basic composition: the minimum of both is returned).

    Raises
    ------
    UserInputError
        Unknown accountant or delta outside [0, 1).
    """
    steps = tuple(steps)
    _check(accountant, delta)
    basic = basic_epsilon(steps)
    if delta == 0:
        return basic
    if accountant == "pld":
        eps = _pld(steps).get_epsilon_for_delta(delta)
    else:
        eps = _rdp(steps).get_epsilon(delta)
    return float(min(eps, basic))


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`calibrate`.

    Attributes
    ----------
    sigma : float
        The noise multiplier.
    steps : tuple of Step
        The run's steps at that sigma.
    epsilon : float
        The epsilon the accountant states for them at ``delta`` (<= the target).
    delta : float
    accountant : str
        ``"pld"``, ``"rdp"`` or ``"basic"`` (delta = 0).
    """

    sigma: float
    steps: tuple
    epsilon: float
    delta: float
    accountant: str


def template_steps(template, sigma: float) -> tuple[Step, ...]:
    """The steps of a run template at noise multiplier sigma.

    Parameters
    ----------
    template : tuple of (kind, count, coefficient)
        A ``"laplace"`` entry has noise multiplier ``coefficient * sigma``; a ``"pure"`` or
        ``"exponential"`` entry has epsilon_0 = ``coefficient / sigma``. So every step's noise
        grows with sigma.
    sigma : float
        Positive.

    Returns
    -------
    tuple of Step
    """
    return tuple(Step(kind, coef * sigma if kind == "laplace" else coef / sigma, int(count))
                 for kind, count, coef in template)


@lru_cache(maxsize=256)
def calibrate(template: tuple, target_epsilon: float, delta: float, accountant: str = "pld") -> Calibration:
    """The smallest noise multiplier at which the accountant states (target_epsilon, delta).

    Bisection on log sigma (the accountant's epsilon decreases as sigma grows): starting from
    the sigma of basic composition, which always meets the target, sigma is halved until
    the accountant's epsilon exceeds the target, then the bracket is bisected until its ends
    are within a relative :data:`CALIBRATION_RTOL`; the upper end is returned, so the
    accountant's epsilon never exceeds the target. Cached per process (it is a pure function
    of its arguments), so a run pays it once per (template, epsilon, delta).

    Parameters
    ----------
    template : tuple of (kind, count, coefficient)
        See :func:`template_steps`; hashable.
    target_epsilon : float
        Positive and finite.
    delta : float
        In [0, 1); 0 calibrates by basic composition (pure DP).
    accountant : {"pld", "rdp"}

    Returns
    -------
    Calibration

    Raises
    ------
    UserInputError
        Bad epsilon, delta or accountant.
    """
    if not (math.isfinite(target_epsilon) and target_epsilon > 0):
        raise UserInputError(f"epsilon = {target_epsilon!r} must be positive and finite")
    _check(accountant, delta)
    # basic composition at sigma = 1 gives basic(1); it scales as 1/sigma
    hi = basic_epsilon(template_steps(template, 1.0)) / target_epsilon
    # a Laplace step's pure epsilon is 1/(coef sigma): basic(sigma) = basic(1)/sigma exactly
    if delta == 0:
        steps = template_steps(template, hi)
        return Calibration(hi, steps, basic_epsilon(steps), 0.0, "basic")

    def eps_at(sigma):
        return epsilon(template_steps(template, sigma), delta, accountant)

    lo = hi / 2.0
    while eps_at(lo) <= target_epsilon:
        hi, lo = lo, lo / 2.0
        if lo < 1e-12:
            raise UserInputError(f"the accountant accepts any noise for epsilon = {target_epsilon}; "
                                 "check the template")
    while hi / lo > 1.0 + CALIBRATION_RTOL:
        mid = math.sqrt(hi * lo)
        if eps_at(mid) <= target_epsilon:
            hi = mid
        else:
            lo = mid
    steps = template_steps(template, hi)
    return Calibration(hi, steps, eps_at(hi), float(delta), accountant)


def accounting_diagnostics(cal: Calibration, target_epsilon: float) -> dict:
    """The JSON diagnostics a row of an accounted selector records.

    Returns
    -------
    dict
        ``accountant`` (``"pld"``, ``"rdp"`` or ``"basic"``, with the library version),
        ``noise_multiplier`` (sigma), ``dp_steps`` (the steps, :meth:`Step.as_json`),
        ``epsilon_target``, ``epsilon_accountant`` and ``delta_accountant`` (what the
        accountant states for the whole run).
    """
    return {
        "accountant": _label(cal.accountant),
        "noise_multiplier": float(cal.sigma),
        "dp_steps": [st.as_json() for st in cal.steps],
        "epsilon_target": float(target_epsilon),
        "epsilon_accountant": float(cal.epsilon),
        "delta_accountant": float(cal.delta),
    }


def _label(accountant: str) -> str:
    if accountant == "basic":
        return "basic composition"
    from importlib.metadata import version

    return f"{accountant} (dp-accounting {version('dp-accounting')})"


def accountant_of(label: str) -> str | None:
    """``"pld"`` / ``"rdp"`` from a row's ``accountant`` diagnostic, None for another label."""
    head = str(label).split(" ", 1)[0]
    return head if head in ACCOUNTANTS else None


def compose_with_pure(steps, accountant: str, epsilon_first: float, delta_first: float,
                      epsilon_second: float) -> tuple[float, str]:
    """The epsilon of a selection (``steps``) followed by a pure epsilon_second-DP release.

    Adaptive composition of the selection's steps with one ``"pure"`` step (the estimate:
    its guarantee holds for every fixed support, Dwork & Roth 2014, Theorem B.1), as the
    accountant states it at the selection's delta, against basic composition
    ``epsilon_first + epsilon_second`` (Theorem 3.16); the smaller is returned.

    Parameters
    ----------
    steps : sequence of Step
        The selection's steps (a row's ``dp_steps``).
    accountant : {"pld", "rdp"}
    epsilon_first, delta_first : float
        The selection's stated guarantee.
    epsilon_second : float
        The estimate's pure epsilon, positive.

    Returns
    -------
    epsilon : float
        Of the pair, at delta ``delta_first``.
    composition : str
        ``"<accountant label>"`` when the accountant was tighter, else ``"basic composition"``.
    """
    basic = float(epsilon_first + epsilon_second)
    if delta_first <= 0:
        return basic, "basic composition"
    joint = epsilon((*tuple(steps), Step("pure", float(epsilon_second), 1)), delta_first, accountant)
    if joint < basic:
        return float(joint), _label(accountant)
    return basic, "basic composition"
