"""Per-trial guarantees: one derivation (Draws.guarantee), never mixed in summaries."""

import json
import math

import numpy as np
import pytest

from dpbench.api import Draws
from dpbench.core.contracts.selector import has_guarantee
from dpbench.cli.main import main
from dpbench.bench.evaluation.metrics import summarize
from dpbench_plugins.selectors.swaps.mistakes import Mistakes

from flip_pair import flip_pair, trial_of


def test_guarantee_strings_cover_every_case():
    S = np.zeros((1, 2), dtype=np.int64)
    assert Draws(S).guarantee("pure", 1.0) == "pure ε=1"
    assert Draws(S, epsilon_spent=1.25).guarantee("pure", 1.0) == "pure ε=1.25"
    assert Draws(S, delta=1e-6).guarantee("approximate", 0.5) == "(ε=0.5, δ=1e-06)"
    assert Draws(S, delta=math.nan).guarantee("approximate", 0.5) == "none: δ unknown"
    assert Draws(S).guarantee("none", 1.0) == "none: not private"
    assert Draws(S, certified=False).guarantee("pure", 1.0) == "none: uncertified"
    assert Draws(S, no_guarantee="gap condition failed").guarantee("pure", 1.0) == "none: gap condition failed"
    # not private wins over everything, uncertified over a selector's own reason
    assert Draws(S, certified=False, no_guarantee="x").guarantee("none", 1.0) == "none: not private"
    assert Draws(S, certified=False, no_guarantee="x").guarantee("pure", 1.0) == "none: uncertified"
    assert has_guarantee("pure ε=1") and has_guarantee("(ε=1, δ=1e-06)")
    assert not has_guarantee("none: uncertified") and not has_guarantee(None)


def test_mistakes_without_gap_condition_has_no_guarantee():
    """On the twin-column pair S1 flips between neighbours: mistakes must not claim pure DP."""
    a, b = flip_pair()
    for prob in (a, b):
        trial = trial_of(prob)
        sel = Mistakes()
        prep = sel.prepare(trial, None)
        d = sel.draw(trial, prep, 1.0, 5, np.random.default_rng(0))
        assert not d.diagnostics["gap_condition"]
        assert d.guarantee(Mistakes.dp_type, 1.0) == "none: gap condition failed"


def _row(method, trial, recovery, guarantee, status="ok"):
    return {"method": method, "setting": {"generator": "g", "n": 10}, "epsilon": 1.0, "config": "{}",
            "data": "g", "n": 10, "p": 5, "s": 2, "trial": trial, "status": status, "guarantee": guarantee,
            "recovery": None if status == "failed" else recovery, "recovery_prob": None, "f1": recovery,
            "topk": recovery, "prepare_seconds": 0.1, "draw_seconds": 0.1, "dp_type": "pure",
            "epsilon_spent": None, "delta": 0.0, "reference": "true"}


def test_summary_never_mixes_rows_with_and_without_guarantee():
    rows = [_row("mistakes", t, 1.0, "pure ε=1") for t in range(7)]
    rows += [_row("mistakes", 7, 0.0, "none: gap condition failed"), _row("mistakes", 8, 0.5, "none: uncertified",
                                                                          status="uncertified"),
             _row("mistakes", 9, None, "none: failed", status="failed")]
    rows += [_row("bss", t, 1.0, "none: not private") for t in range(10)]
    out = summarize(rows)
    assert [(d["label"], d["guaranteed"]) for d in out] == [
        ("mistakes", True), ("bss (no guarantee)", False), ("mistakes (no guarantee)", False)]
    g, bss, ng = out
    assert g["trials"] == 7 and g["total_trials"] == 10 and g["recovery_rate"] == 1.0 and g["guarantee"] == "pure ε=1"
    assert ng["trials"] == 2 and ng["failed"] == 1 and ng["uncertified"] == 1
    assert ng["recovery_rate"] == pytest.approx(0.25)
    assert "none: gap condition failed ×1" in ng["guarantee"] and "none: uncertified ×1" in ng["guarantee"]
    assert bss["guarantee"] == "none: not private" and bss["recovery_rate"] == 1.0


def test_approximate_selector_needs_a_delta(tmp_path, capsys):
    args = ["compare", "--methods", "mcmc", "--n", "50", "--trials", "1", "--draws", "2", "--out",
            str(tmp_path / "r.db")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "approximate-DP" in err and "--delta" in err and "Traceback" not in err
    assert main([*args, "--delta", "1.5"]) == 2
    assert "[0, 1)" in capsys.readouterr().err


def test_rows_store_run_delta_and_their_guarantee(tmp_path):
    import sqlite3

    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "mcmc,mistakes-ptr,bss", "--n", "400", "--p", "8", "--s", "2",
                 "--trials", "2", "--draws", "3", "--delta", "1e-6", "--param", "mcmc.iterations=20",
                 "--out", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT method, delta, guarantee, diagnostics FROM results").fetchall()
    assert len(rows) == 6 and all(r[1] == 1e-6 for r in rows)
    got = {m: g for m, _, g, _ in rows}
    assert got == {"mcmc": "none: mixing not established", "mistakes-ptr": "(ε=1, δ=1e-06)",
                   "bss": "none: not private"}
    mcmc_diag = [json.loads(d) for m, _, _, d in rows if m == "mcmc"][0]
    assert mcmc_diag["requested_delta"] == 1e-6 and "no delta is computable for 20 iterations" in mcmc_diag["privacy"]
