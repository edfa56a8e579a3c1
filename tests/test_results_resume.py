"""Stored preparations (artefacts): adding ε to a finished run reuses them and gives the rows a
fresh run gives; --retry-failed replaces failed rows; the encoding never pickles."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from dpbench.cli.main import main
from dpbench.bench.results.store import decode_artefact, encode_artefact

RUN = ["compare", "--methods", "topr,mistakes,exhaustive", "--n", "150", "--p", "10", "--trials", "2",
       "--draws", "30"]


def _rows(db):
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return {r["key"]: dict(r) for r in conn.execute("SELECT * FROM results")}


def _comparable(row):
    diag = {k: v for k, v in json.loads(row["diagnostics"] or "{}").items()
            if "seconds" not in k and k != "prepared_from_store"}
    return (row["supports"], row["status"], row["recovery"], row["recovery_prob"], row["objective_gap"],
            row["epsilon_spent"], diag)


def test_adding_epsilon_reuses_preparations_and_equals_a_fresh_run(tmp_path):
    resumed, fresh = tmp_path / "a.db", tmp_path / "b.db"
    assert main(RUN + ["--epsilon", "1", "--out", str(resumed)]) == 0
    with sqlite3.connect(resumed) as conn:
        stored = dict(conn.execute("SELECT method, COUNT(*) FROM artefacts GROUP BY method"))
    assert stored == {"topr": 2, "mistakes": 2, "exhaustive": 2}  # one per (trial, method)
    assert main(RUN + ["--epsilon", "1,4", "--out", str(resumed)]) == 0
    assert main(RUN + ["--epsilon", "1,4", "--out", str(fresh)]) == 0
    a, b = _rows(resumed), _rows(fresh)
    assert a.keys() == b.keys() and len(a) == 3 * 2 * 2
    for key in a:
        assert _comparable(a[key]) == _comparable(b[key]), a[key]["method"]
    new = [r for r in a.values() if r["epsilon"] == 4.0]
    assert all(json.loads(r["diagnostics"]).get("prepared_from_store") for r in new)
    assert not any("prepared_from_store" in (r["diagnostics"] or "") for r in b.values())


def test_retry_failed_replaces_failed_rows(tmp_path, monkeypatch):
    from dpbench_plugins.selectors.exhaustive import Exhaustive

    db = tmp_path / "r.db"
    args = ["compare", "--methods", "exhaustive", "--n", "100", "--p", "8", "--trials", "2", "--draws", "5",
            "--out", str(db)]
    original = Exhaustive.prepare

    def flaky(self, trial, rng):
        raise RuntimeError("transient")

    monkeypatch.setattr(Exhaustive, "prepare", flaky)
    assert main(args) == 0
    assert {r["status"] for r in _rows(db).values()} == {"failed"}
    monkeypatch.setattr(Exhaustive, "prepare", original)
    assert main(args) == 0  # failed rows count as done without the flag
    assert {r["status"] for r in _rows(db).values()} == {"failed"}
    assert main(args + ["--retry-failed"]) == 0
    rows = _rows(db)
    assert len(rows) == 2 and {r["status"] for r in rows.values()} == {"ok"}


def test_artefact_encoding_round_trips_without_pickle():
    state = {"a": np.arange(6, dtype=np.int64).reshape(2, 3), "b": np.array([0.1, np.inf]), "n": 3,
             "gap": float("inf"), "d": {"x": [1, 2]}, "none": None}
    text, blob, nbytes = encode_artefact(state)
    back = decode_artefact(text, blob)
    assert nbytes == 6 * 8 + 2 * 8
    np.testing.assert_array_equal(back["a"], state["a"])
    np.testing.assert_array_equal(back["b"], state["b"])
    assert back["n"] == 3 and back["gap"] == float("inf") and back["d"] == {"x": [1, 2]} and back["none"] is None
    with pytest.raises(TypeError):
        encode_artefact({"o": np.array([{"x": 1}], dtype=object)})
