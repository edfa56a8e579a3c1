"""The privacy audit of a selector class, for a plugin's own tests (``dpbench audit`` for a class)."""

from __future__ import annotations

from dpbench.testing.checks import _declared


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

    _declared("selector", cls)
    return audit_instance(cls(**params), cls.name, AuditSetup(epsilon=epsilon, delta=delta),
                          QUICK_BUDGET if quick else DEFAULT_BUDGET, seed, pairs)
