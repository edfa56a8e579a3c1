"""Support-recovery metrics (docs/metrics.md) and the per-setting summary."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import numpy as np

from dpbench.core.contracts.selector import has_guarantee


def support_metrics(supports, reference) -> dict[str, np.ndarray]:
    """Compare each output support with the reference (true) support.

    Parameters
    ----------
    supports : ndarray of shape (D, s)
        One output support per draw.
    reference : ndarray of shape (s_ref,)
        True support (simulations) or reference support (real data).

    Returns
    -------
    dict of ndarray of shape (D,)
        ``exact`` (1.0 if the support equals the reference), ``precision``
        ``|Ŝ ∩ S| / |Ŝ|``, ``recall`` ``|Ŝ ∩ S| / |S|``, ``f1`` (their harmonic mean),
        ``topk`` top-k accuracy ``|Ŝ ∩ S| / s`` (swope2024 section 3) and ``hamming``
        ``|Ŝ Δ S|``.
    """
    S = np.asarray(supports, dtype=np.int64)
    ref = np.asarray(reference, dtype=np.int64)
    hits = np.isin(S, ref).sum(axis=1).astype(np.float64)
    k, m = S.shape[1], ref.size
    precision = hits / k
    recall = hits / m
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(hits), where=denom > 0)
    return {
        "exact": ((hits == m) & (k == m)).astype(np.float64),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "topk": hits / m,
        "hamming": (k - hits) + (m - hits),
    }


#: The order-statistic metrics of swope2024 section 5 (Figure 8), after Shekelyan & Loukides (2022).
RANK_METRICS = ("top", "great", "good")


def rank_positions(ranking) -> np.ndarray:
    """Position of every feature in a full reference ranking (0 = best).

    Parameters
    ----------
    ranking : ndarray of shape (p,), int
        A permutation of ``0 .. p-1``, best feature first.

    Returns
    -------
    ndarray of shape (p,), int64
        ``pos[j]`` = place of feature ``j`` in ``ranking``.

    Raises
    ------
    ValueError
        If ``ranking`` is not a permutation.
    """
    r = np.asarray(ranking, dtype=np.int64)
    pos = np.full(r.size, -1, dtype=np.int64)
    if r.size and (r.min() < 0 or r.max() >= r.size):
        raise ValueError("ranking is not a permutation of 0..p-1")
    pos[r] = np.arange(r.size)
    if np.any(pos < 0):
        raise ValueError("ranking is not a permutation of 0..p-1")
    return pos


def rank_metrics(supports, positions) -> dict[str, np.ndarray]:
    """TOP / GREAT / GOOD of each output support against a full reference ranking.

    With ``h`` the largest integer such that the output contains the reference's top ``h``
    features and ``t`` the reference place (1-based) of the worst feature it contains
    (the utility class ``C_{h,t}`` of the canonical Lipschitz mechanism, swope2024 appendix A),
    for an output of ``k`` features (swope2024 section 5, defined after Shekelyan & Loukides 2022):

    * ``top``: the output is the reference top-k (``h = k``, equivalently ``t = k``);
    * ``great``: ``h >= k/10`` and ``t <= 11k/10`` (all of the top k/10, the rest within the top 11k/10);
    * ``good``: ``h >= k/100`` and ``t <= 3k/2`` (the paper's third item, printed "GREAT" by mistake).

    As ``h`` and ``t`` are integers, the bounds mean ``h >= ceil(k/10)``, ``t <= floor(11k/10)``,
    ``h >= ceil(k/100)`` (so GOOD always needs the top-1) and ``t <= floor(3k/2)``; they are
    evaluated in exact integer arithmetic. The paper's example k = 200: GREAT needs the top 20
    and the other 180 within the top 220. For k < 10, GREAT is TOP.

    Parameters
    ----------
    supports : ndarray of shape (D, k), int
        One output support per draw (distinct feature indices).
    positions : ndarray of shape (p,), int
        :func:`rank_positions` of the reference ranking.

    Returns
    -------
    dict of ndarray of shape (D,), float64 in {0, 1}
        ``top``, ``great``, ``good``.
    """
    S = np.asarray(supports, dtype=np.int64)
    k = S.shape[1]
    places = np.sort(np.asarray(positions, dtype=np.int64)[S], axis=1)  # 0-based, ascending
    head = places == np.arange(k)  # the output holds the top i+1 iff places[:i+1] == 0..i
    h = np.where(head.all(axis=1), k, np.argmin(head, axis=1))
    t = places[:, -1] + 1
    return {
        "top": (h == k).astype(np.float64),
        "great": ((10 * h >= k) & (10 * t <= 11 * k)).astype(np.float64),
        "good": ((100 * h >= k) & (2 * t <= 3 * k)).astype(np.float64),
    }


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error ``sd / sqrt(k)`` (ddof = 1) of per-trial values; se is nan for k < 2."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=np.float64)
    if v.size == 0:
        return math.nan, math.nan
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), se


SUMMARY_KEYS = ("method", "setting", "epsilon", "config")


def _guarantee_label(guarantees) -> str:
    """The guarantee strings of a group's rows: one string, or each with its count."""
    counts = Counter(guarantees)
    if len(counts) == 1:
        return next(iter(counts))
    return "; ".join(f"{g} ×{k}" for g, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(rows) -> list[dict]:
    """Summary rows per (method, data setting, epsilon, method configuration), split by guarantee.

    Each result row carries the guarantee that holds for it (``guarantee``, decided by
    :meth:`dpbench.api.Draws.guarantee`). Rows with a guarantee and rows without one are
    **never averaged together**: each (method, setting, epsilon, configuration) gives one
    summary row over its guaranteed trials (``guaranteed=True``, listed first) and, if any
    trial has none, a second one over those (``guaranteed=False``, label
    ``"<method> (no guarantee)"``). Uncertified trials are averaged into the second row,
    counted in ``uncertified``, never dropped. Failed trials are counted in ``failed`` of the
    second row, never averaged. Recovery is first averaged over the draws of a trial, then
    mean ± standard error is taken over trials.

    Parameters
    ----------
    rows : iterable of dict
        Per-(trial, method, epsilon) records as stored by :mod:`dpbench.store`.

    Returns
    -------
    list of dict
        Keys: method, label, guaranteed, guarantee, n, p, s, epsilon, trials (rows averaged),
        total_trials (all rows of the method/setting/epsilon/configuration), recovery_rate,
        recovery_se, recovery_prob, f1, topk, rank_top, rank_great, rank_good (nan without a
        ranked reference), time_median_s, dp_type, epsilon_spent, failed,
        uncertified, reference, setting, config, and utility_loss, test_mse, test_accuracy
        (means over the rows that have them, else None: runs with ``--estimate``).
    """
    groups = defaultdict(list)
    totals = Counter()
    for row in rows:
        key = tuple(json.dumps(row[k], sort_keys=True) if isinstance(row[k], dict) else row[k]
                    for k in SUMMARY_KEYS)
        totals[key] += 1
        groups[key + (has_guarantee(row.get("guarantee")),)].append(row)
    out = []
    for key, rs in groups.items():
        guaranteed = key[-1]
        ok = [r for r in rs if r["status"] != "failed"]
        rate, se = mean_se(r["recovery"] for r in ok)
        probs = [r["recovery_prob"] for r in ok if r["recovery_prob"] is not None]
        times = [r["prepare_seconds"] + r["draw_seconds"] for r in ok]
        first = rs[0]
        eps_spent = [r["epsilon_spent"] for r in ok if r["epsilon_spent"] is not None]
        out.append({
            "method": first["method"],
            # the method's label shows its non-default parameters (a variant of a grid: topr(R=300))
            "label": (first.get("label") or first["method"]) + ("" if guaranteed else " (no guarantee)"),
            "guaranteed": guaranteed,
            "guarantee": _guarantee_label(r.get("guarantee") or "none: unknown" for r in rs),
            "data": first["data"],
            "n": first["n"], "p": first["p"], "s": first["s"],
            "epsilon": first["epsilon"],
            "trials": len(ok),
            "total_trials": totals[key[:-1]],
            "recovery_rate": rate,
            "recovery_se": se,
            "recovery_prob": float(np.mean(probs)) if probs and len(probs) == len(ok) else None,
            "f1": mean_se(r["f1"] for r in ok)[0],
            "topk": mean_se(r["topk"] for r in ok)[0],
            **{f"rank_{m}": mean_se(r.get(f"rank_{m}") for r in ok)[0] for m in RANK_METRICS},
            "time_median_s": float(np.median(times)) if times else math.nan,
            "dp_type": first["dp_type"],
            "epsilon_spent": max(eps_spent) if eps_spent else None,
            "delta": first.get("delta"),
            "reference": first["reference"],
            "failed": sum(r["status"] == "failed" for r in rs),
            "uncertified": sum(r["status"] == "uncertified" for r in rs),
            "setting": first["setting"],
            "config": first["config"],
            # --estimate (dpbench.bench.evaluation.estimation): means over the ok rows that have them
            **{k: (float(np.mean(v)) if (v := [r[k] for r in ok if r.get(k) is not None]) else None)
               for k in ("utility_loss", "test_mse", "test_accuracy")},
        })
    # Per setting and epsilon: every guaranteed row first, the rows without a guarantee after them.
    out.sort(key=lambda d: (d["data"], d["p"], d["s"], d["n"], d["epsilon"], not d["guaranteed"], d["method"],
                            str(d["config"])))
    return out
