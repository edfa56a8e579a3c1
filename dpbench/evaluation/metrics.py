"""Support-recovery metrics (design.md section 7) and the per-setting summary."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np


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


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error ``sd / sqrt(k)`` (ddof = 1) of per-trial values; se is nan for k < 2."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=np.float64)
    if v.size == 0:
        return math.nan, math.nan
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), se


SUMMARY_KEYS = ("method", "setting", "epsilon", "config")


def _diagnostics(row) -> dict:
    d = row.get("diagnostics")
    if isinstance(d, str):
        d = json.loads(d) if d else {}
    return d or {}


def summarize(rows) -> list[dict]:
    """One summary row per (method, data setting, epsilon, method configuration).

    Recovery is first averaged over the draws of a trial, then mean ± standard error is
    taken over trials. Failed and uncertified trials are counted, never averaged in.

    Parameters
    ----------
    rows : iterable of dict
        Per-(trial, method, epsilon) records as stored by :mod:`dpbench.store`.

    Returns
    -------
    list of dict
        Keys: method, n, p, s, epsilon, trials, recovery_rate, recovery_se, recovery_prob,
        f1, time_median_s, dp_type, failed, uncertified, plus the setting's other fields.
    """
    groups = defaultdict(list)
    for row in rows:
        key = tuple(json.dumps(row[k], sort_keys=True) if isinstance(row[k], dict) else row[k]
                    for k in SUMMARY_KEYS)
        groups[key].append(row)
    out = []
    for key, rs in groups.items():
        ok = [r for r in rs if r["status"] == "ok"]
        rate, se = mean_se(r["recovery"] for r in ok)
        probs = [r["recovery_prob"] for r in ok if r["recovery_prob"] is not None]
        times = [r["prepare_seconds"] + r["draw_seconds"] for r in ok]
        first = rs[0]
        eps_spent = [r["epsilon_spent"] for r in ok if r["epsilon_spent"] is not None]
        # mistakes is pure DP only when R(S2) - R(S1) > 2 Delta: count the trials where it held.
        diags = [_diagnostics(r) for r in ok]
        gap = [bool(d["gap_condition"]) for d in diags if "gap_condition" in d]
        out.append({
            "method": first["method"],
            "label": first.get("label") or first["method"],
            "data": first["data"],
            "n": first["n"], "p": first["p"], "s": first["s"],
            "epsilon": first["epsilon"],
            "trials": len(ok),
            "recovery_rate": rate,
            "recovery_se": se,
            "recovery_prob": float(np.mean(probs)) if probs and len(probs) == len(ok) else None,
            "f1": mean_se(r["f1"] for r in ok)[0],
            "topk": mean_se(r["topk"] for r in ok)[0],
            "time_median_s": float(np.median(times)) if times else math.nan,
            "dp_type": first["dp_type"],
            "epsilon_spent": max(eps_spent) if eps_spent else None,
            "reference": first["reference"],
            "gap_condition": f"{sum(gap)}/{len(gap)}" if gap else None,
            "failed": sum(r["status"] == "failed" for r in rs),
            "uncertified": sum(r["status"] == "uncertified" for r in rs),
            "setting": first["setting"],
            "config": first["config"],
        })
    out.sort(key=lambda d: (d["data"], d["p"], d["s"], d["n"], d["epsilon"], d["method"], str(d["config"])))
    return out
