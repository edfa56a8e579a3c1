"""Why a row is uncertified, and which work limit to raise: the advice ``dpbench compare`` prints.

A selector whose preparation stops at a deterministic work limit (branch-and-bound nodes per
oracle call, extra oracle calls, ...) returns ``Draws(certified=False)``: its rows carry the
guarantee ``"none: uncertified"`` and are never counted as private. The user must be told at
once, not after a long run: why (the selector's own ``reason`` in its diagnostics, when it
gives one) and what to raise — one of the selector's declared parameters that are work
budgets (:data:`dpbench.bench.keys.BUDGET_PARAMS`; they are not part of a row's identity,
so ``--retry-uncertified`` re-runs only the uncertified rows with the larger budget).
"""

from __future__ import annotations

import re

from dpbench.bench.registry import registry
from dpbench.bench.keys import BUDGET_PARAMS, selector_name

#: Work limits in the order they are suggested when the reason names none. The wall-clock
#: safety net is never suggested: no wall-clock limit may decide a result.
_PREFERRED = ("node_limit", "max_calls", "max_count", "master_iterations", "master_node_limit")
#: How much larger a limit the advice suggests (work, and time, grow at least as much).
RAISE_FACTOR = 10


def work_limits(method: str) -> dict:
    """``{name: default}`` of the work-budget parameters a registered selector declares.

    Parameters
    ----------
    method : str
        Selector name or variant label (``topr(R=300)``).

    Returns
    -------
    dict
        In suggestion order; empty when the selector is not registered or declares none.
    """
    try:
        params = getattr(registry().selector(selector_name(method)), "params", {}) or {}
    except KeyError:  # UnknownNameError: a plugin no longer installed when its rows are shown
        return {}
    names = [n for n in _PREFERRED if n in params] + sorted(n for n in params if n in BUDGET_PARAMS
                                                              and n not in _PREFERRED and n != "safety_time_limit")
    return {n: params[n].default for n in names}


def uncertified_advice(row: dict, method_params: dict | None = None, where: str | None = None) -> str | None:
    """One line saying why ``row`` is uncertified and which ``--param`` to raise; None if certified.

    The limit is the one the selector names in its diagnostics (``raise_limit``: ``param``,
    ``now``, ``suggest``), else the first of its declared work budgets that its ``reason``
    mentions, else its first declared work budget (:func:`work_limits`).

    Parameters
    ----------
    row : dict
        A result row of :func:`dpbench.bench.run.run_trial` (``status``, ``label`` or
        ``method``, ``data``, ``trial``, ``diagnostics``).
    method_params : dict, optional
        The run's ``{label: {param: value}}`` (``--param``), for the limit's current value.
    where : str, optional
        How to name the trial (default ``"<data> trial <trial>"``).

    Returns
    -------
    str or None
        E.g. ``"topr on khan s=5 trial 0: uncertified (not private): <reason>; raise the work
        limit --param topr.node_limit=200000 (now 20000), with --retry-uncertified to redo only
        these rows"``.
    """
    if row.get("status") != "uncertified":
        return None
    label = row.get("label") or row.get("method") or "?"
    diag = row.get("diagnostics") if isinstance(row.get("diagnostics"), dict) else {}
    reason = str(diag["reason"]) if diag.get("reason") else "the selector gave no reason"
    where = where or f"{row.get('data', '?')} trial {row.get('trial', '?')}"
    # A selector may certify some ε and not others (mistakes on bounded level minima decides its
    # draws per ε), so the line names the ε of the row it speaks for.
    eps = row.get("epsilon")
    at = f" at ε={float(eps):g}" if isinstance(eps, (int, float)) else ""
    text = f"{label} on {where}: uncertified{at}, so its rows say 'none: uncertified' (not private): {reason}"
    given = diag.get("raise_limit")
    if isinstance(given, dict) and given.get("param") and given.get("suggest") is not None:
        # the selector named the limit that stopped it (toplist.limit_advice): a selector
        # parameter "topr.node_limit", or a parameter of the oracle backend "node_limit", which
        # dpbench compare takes as --param <solver>.node_limit
        param = str(given["param"])
        if "." not in param:
            param = f"{(row.get('config') or {}).get('solver') or 'highs'}.{param}"
        option = f"--param {param}={given['suggest']}"
        if option in reason and "--retry-uncertified" in reason:
            return text
        return f"{text}; raise the work limit: {option} (now {given.get('now')}), with --retry-uncertified"
    limits = work_limits(label)
    named = [n for n in limits if re.search(rf"\b{re.escape(n)}\b", reason)]
    if not limits:
        return text
    name = (named or list(limits))[0]
    method = selector_name(label)  # --param names the selector; it applies to all its variants
    run_params = (method_params or {}).get(label) or (method_params or {}).get(method) or {}
    now = run_params.get(name, limits[name])
    try:
        suggest = f"{int(float(now) * RAISE_FACTOR)}"
    except (TypeError, ValueError, OverflowError):
        suggest = "<larger>"
    return (f"{text}; raise the work limit --param {method}.{name}={suggest} (now {now}; the preparation may take "
            f"up to ~{RAISE_FACTOR}x longer), with --retry-uncertified to redo only these rows")
