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
