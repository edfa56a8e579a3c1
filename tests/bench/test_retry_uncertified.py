"""``dpbench compare --retry-uncertified``: re-run only uncertified rows with a larger work
budget; certified rows are neither recomputed nor duplicated (issue 15)."""

import sqlite3

from dpbench.cli.main import main

BASE = ["compare", "--methods", "topr,mistakes,exhaustive", "--p", "20", "--n", "100", "--trials", "2",
        "--draws", "5", "--seed", "3", "--param", "highs.enum_limit=0"]


def _rows(path):
    con = sqlite3.connect(path)
    out = {k: (m, st, sup, c) for k, m, st, sup, c in
           con.execute("SELECT key, method, status, supports, created FROM results")}
    con.close()
    return out


def test_retry_uncertified_reruns_only_uncertified_rows(tmp_path):
    db = str(tmp_path / "r.db")
    # No OA master iteration allowed: the optimum is not certified, so topr and mistakes are not.
    assert main(BASE + ["--out", db, "--param", "highs.master_iterations=0"]) == 0
    first = _rows(db)
    assert {st for m, st, _, _ in first.values() if m != "exhaustive"} == {"uncertified"}
    assert {st for m, st, _, _ in first.values() if m == "exhaustive"} == {"ok"}
    # A plain re-run resumes: nothing changes.
    assert main(BASE + ["--out", db]) == 0
    assert _rows(db) == first
    assert main(BASE + ["--out", db, "--retry-uncertified"]) == 0
    second = _rows(db)
    assert second.keys() == first.keys()  # replaced under the same keys, not duplicated
    for k, (m, st, sup, created) in second.items():
        assert st == "ok"
        if first[k][1] == "ok":
            assert (sup, created) == first[k][2:]  # certified rows untouched
    # The retried rows equal a fresh run with the default budget.
    fresh = str(tmp_path / "fresh.db")
    assert main(BASE + ["--out", fresh]) == 0
    assert {k: v[:3] for k, v in _rows(fresh).items()} == {k: v[:3] for k, v in second.items()}


def test_where_the_work_runs_is_not_part_of_a_rows_identity():
    """``workers`` (a selector's or the solver's) and the split of long searches change neither a
    certified answer nor, for ``workers``, the node counts: a resumed run with other values keeps
    its rows, as with a larger work budget. Parameters that change results stay in the key."""
    from dpbench.bench.config import RunConfig
    from dpbench.bench.keys import EXECUTION_PARAMS, method_config, row_key

    setting = {"dataset": "khan", "s": 5}

    def key(**kw):
        cfg = RunConfig(methods=["topr"], data=[setting], **kw)
        return row_key(cfg, setting, 0, "topr", 1.0)

    base = key()
    assert EXECUTION_PARAMS == {"workers", "split_parts", "split_after"}
    assert key(solver_params={"workers": 1, "split_parts": 1, "split_after": 50}) == base
    assert key(method_params={"topr": {"workers": 1}}) == base
    assert key(solver_params={"node_limit": 10}) == base  # a budget, as before
    assert key(solver_params={"leaf_limit": 10}) != base and key(lam=3.0) != base
    cfg = RunConfig(methods=["topr"], data=[setting], solver_params={"workers": 1, "leaf_limit": 10})
    assert method_config(cfg, "topr")["solver_params"] == {"leaf_limit": 10}  # stored config too
