"""An uncertified trial is announced at once: why, and which ``--param`` work limit to raise (issue 22)."""

import io

from rich.console import Console

from dpbench.cli.progress import RunProgress
from dpbench.bench.keys import BUDGET_PARAMS
from dpbench.bench.uncertified import RAISE_FACTOR, uncertified_advice, work_limits
from dpbench.core.toplist import SWAP_LEVEL_NODE_LIMIT, UNCERTIFIED_CALL


def _row(label, reason=None, status="uncertified", eps=1.0):
    diag = {"reason": reason} if reason else {}
    return {"label": label, "method": label.split("(")[0], "status": status, "data": "khan",
            "setting": {"dataset": "khan", "s": 5}, "trial": 0, "epsilon": eps, "diagnostics": diag}


def test_work_limits_are_the_declared_budget_params():
    topr = work_limits("topr")
    assert list(topr)[0] == "node_limit" and topr["node_limit"] == SWAP_LEVEL_NODE_LIMIT
    assert set(topr) <= BUDGET_PARAMS and "max_calls" in topr and "safety_time_limit" not in topr
    assert work_limits("mistakes") == {"node_limit": SWAP_LEVEL_NODE_LIMIT}
    assert work_limits("topr(R=300)") == topr  # a variant has its selector's limits
    assert work_limits("dpsis") == {} and work_limits("no-such-method") == {}


def test_certified_rows_get_no_advice():
    assert uncertified_advice(_row("topr", status="ok")) is None
    assert uncertified_advice(_row("topr", status="failed")) is None


def test_advice_names_the_reason_and_the_limit_it_names():
    reason = "threshold enumeration of level 4 incomplete (an oracle call ended with status work_limit; raise node_limit)"
    text = uncertified_advice(_row("topr", reason))
    assert reason in text and "none: uncertified" in text and "khan trial 0" in text
    assert "uncertified at ε=1," in text  # certification may differ between the ε of one trial (mistakes)
    assert f"--param topr.node_limit={SWAP_LEVEL_NODE_LIMIT * RAISE_FACTOR} (now {SWAP_LEVEL_NODE_LIMIT};" in text
    assert "--retry-uncertified" in text
    text = uncertified_advice(_row("topr", "extra oracle-call budget exhausted (raise max_calls)"))
    assert f"--param topr.max_calls={1000 * RAISE_FACTOR} (now 1000;" in text


def test_advice_uses_the_runs_own_value_and_the_selector_name():
    row = _row("topr(node_limit=300)", UNCERTIFIED_CALL)
    text = uncertified_advice(row, {"topr(node_limit=300)": {"node_limit": 300}})
    assert f"--param topr.node_limit={300 * RAISE_FACTOR} (now 300;" in text and UNCERTIFIED_CALL in text
    text = uncertified_advice(_row("mistakes"), {"mistakes": {"node_limit": 7}}, where="alon s=5 trial 3")
    assert "the selector gave no reason" in text and "alon s=5 trial 3" in text and "mistakes.node_limit=70 " in text


def test_progress_prints_one_line_per_uncertified_method():
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=400)
    rows = [_row("topr", UNCERTIFIED_CALL, eps=e) for e in (1.0, 5.0)] + [_row("mcmc", status="ok")]
    with RunProgress(con, 1) as prog:
        prog.task_done(rows, {"topr": {"node_limit": 50}})
    lines = [ln for ln in buf.getvalue().splitlines() if "uncertified" in ln]
    assert len(lines) == 1, buf.getvalue()
    assert "topr on khan s=5 trial 0" in lines[0] and "--param topr.node_limit=500 (now 50;" in lines[0]
    assert "trial 1/1 done" in buf.getvalue()


def test_the_limit_the_selector_names_is_used():
    """A selector's own ``raise_limit`` diagnostic wins; a backend limit is spelt as compare takes it."""
    row = _row("mistakes", "level 4 minimum not certified: work_limit (node limit)")
    row["diagnostics"]["raise_limit"] = {"param": "mistakes.node_limit", "now": 300, "suggest": 3000,
                                         "option": "--param mistakes.node_limit=3000"}
    text = uncertified_advice(row)
    assert "level 4 minimum not certified" in text and "--param mistakes.node_limit=3000 (now 300)" in text
    row = _row("topr", "the optimum S1 not certified: work_limit")
    row["config"] = {"solver": "highs"}
    row["diagnostics"]["raise_limit"] = {"param": "node_limit", "now": 500, "suggest": 5000,
                                         "option": "--solver-param node_limit=5000"}
    assert "--param highs.node_limit=5000 (now 500)" in uncertified_advice(row)
    # a reason that already gives the option and the retry flag is not repeated
    reason = "level 5 minimum not certified; raise it (e.g. --param topr.node_limit=90) and rerun with --retry-uncertified"
    row = _row("topr", reason)
    row["diagnostics"]["raise_limit"] = {"param": "topr.node_limit", "now": 9, "suggest": 90}
    assert uncertified_advice(row).endswith(reason)
