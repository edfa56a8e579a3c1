"""Privacy audit of selectors on neighbouring data sets (``dpbench audit``; docs/auditing.md).

Exact mode where a selector gives its output law (``log_prob``): the privacy loss and
the hockey-stick divergence over all C(p, s) supports. Monte-Carlo mode otherwise: a lower
bound on ε with Clopper–Pearson confidence. A pair search (box corners, rows aimed at the
optimum or the top-s order, twin columns, near ties, random rows, a hill climb) looks for the
pair that shows the most. Each selector is held to the guarantee its rows state.
"""

from __future__ import annotations

from dpbench.core.errors import UserInputError
from dpbench.bench.registry import registry
from dpbench.bench.audit.engine import (DEFAULT_BUDGET, QUICK_BUDGET, AuditSetup, Budget, Claim, PairResult, SelectorAudit,
                     audit_instance)
from dpbench.bench.audit.pairs import FAMILIES, GRID, Pair

__all__ = ["audit_instance", "audit_methods", "sweep", "AuditSetup", "Budget", "Claim", "PairResult",
           "SelectorAudit", "Pair", "DEFAULT_BUDGET", "QUICK_BUDGET", "FAMILIES", "GRID"]


def audit_methods(names, setup: AuditSetup = AuditSetup(), budget: Budget = DEFAULT_BUDGET, seed: int = 0,
                  pairs=None, params: dict | None = None, command: str | None = None,
                  progress=None) -> list[SelectorAudit]:
    """Audit registered selectors by name (the ``dpbench audit`` command).

    Parameters
    ----------
    names : list of str
        Registered selector names (entry points, third-party ones included).
    setup, budget, seed, pairs, command
        As in :func:`audit_instance`.
    params : dict of str to dict, optional
        Parameters per selector name.
    progress : callable, optional
        Called with each name before its audit.

    Returns
    -------
    list of SelectorAudit

    Raises
    ------
    UserInputError
        An unknown name or refused parameter, before any audit runs.
    """
    reg = registry()
    params = params or {}
    instances = [(name, reg.selector(name)(**params.get(name, {}))) for name in names]
    out = []
    for name, sel in instances:
        if progress is not None:
            progress(name)
        out.append(audit_instance(sel, name, setup, budget, seed, pairs, command=command and
                                  command.replace("{method}", name)))
    return out


def sweep(name: str, param: str, values, setup: AuditSetup = AuditSetup(), budget: Budget = DEFAULT_BUDGET,
          seed: int = 0, reference: str | None = "exhaustive", pairs=None) -> dict:
    """Audit one selector at several values of one parameter, next to an exact reference.

    The MCMC case study (docs/auditing.md): ``mcmc`` at ``iterations`` = 1, 10, ..., and the
    exact exponential mechanism it approximates (``exhaustive``) on the pair where the chain's
    bound at the largest value was found.

    ``pairs`` (optional) fixes the pairs, as in :func:`audit_instance`.

    Returns
    -------
    dict
        ``values``, ``audits`` (one :class:`SelectorAudit` per value), ``reference`` (the
        reference's exact audit on that pair, or None) and ``param``.

    Raises
    ------
    UserInputError
        The selector does not declare ``param``, or a value it refuses.
    """
    cls = registry().selector(name)
    if param not in cls.params:
        raise UserInputError(f"--sweep {param}=...: {name} has no parameter {param!r} "
                             f"(its parameters: {', '.join(cls.params) or 'none'})")
    audits = [audit_instance(cls(**{param: v}), name, setup, budget, seed, pairs) for v in values]
    ref = None
    last = audits[-1].worst
    if reference and last is not None and reference in registry().names("selector"):
        ref = audit_instance(registry().selector(reference)(), reference, setup, budget, seed, [last.spec])
    return {"param": param, "values": list(values), "audits": audits, "reference": ref}
