"""The result schema is the one list of result columns: the table, exports, frame and summary follow it."""

from __future__ import annotations

import json
import sqlite3

import pytest

import dpbench
from dpbench.cli.main import main
from dpbench.bench.results import schema
from dpbench.bench.results.store import ResultStore
from dpbench.bench.results.summary import summary_frame


@pytest.fixture(scope="module")
def run_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("schema") / "r.db"
    assert main(["compare", "--methods", "exhaustive", "--p", "6", "--n", "50", "--trials", "2", "--draws", "5",
                 "--epsilon", "1,4", "--out", str(db)]) == 0
    return db


def test_table_and_exports_have_exactly_the_declared_columns(run_db, tmp_path):
    con = sqlite3.connect(run_db)
    table = [(r[1], r[2]) for r in con.execute("PRAGMA table_info(results)")]
    con.close()
    assert table == [(c.name, schema.SQL_TYPES[c.type]) for c in schema.COLUMNS]
    store = ResultStore(run_db, readonly=True)
    store.export(tmp_path / "r.csv")
    store.export(tmp_path / "r.json")
    store.close()
    assert (tmp_path / "r.csv").read_text().splitlines()[0].split(",") == list(schema.names())
    rows = json.loads((tmp_path / "r.json").read_text())
    assert list(rows[0]) == list(schema.names())
    for name in schema.names(type="json"):  # decoded, not left as JSON text
        assert not isinstance(rows[0][name], str), name


def test_frame_dtypes_follow_the_declared_types(run_db):
    df = dpbench.load_results(run_db)
    for col in schema.all_columns():
        if col.name in df and col.type in ("integer", "real"):
            assert str(df[col.name].dtype) == {"integer": "Int64", "real": "float64"}[col.type], col.name
    assert "data_file" not in df and "run_delta" in df and "sensitivity_bound" in df


def test_a_new_column_is_one_declaration(run_db, tmp_path, monkeypatch):
    """Declared once: an older database gains it (NULL), rows carry it, the summary aggregates it."""
    db = tmp_path / "old.db"
    db.write_bytes(run_db.read_bytes())
    monkeypatch.setattr(schema, "COLUMNS", schema.COLUMNS + (
        schema.Column("test_mse", "real", "held-out mean squared error", summary="mean"),))
    # read-only: the old file is not touched and the column is missing (NaN in the summary)
    sf = summary_frame(dpbench.load_results(db))
    assert sf["test_mse"].isna().all()
    store = ResultStore(db)  # writable: the column is added, old rows NULL
    rows = store.rows()
    assert all(r["test_mse"] is None for r in rows)
    store.write([{**r, "key": r["key"] + "x", "test_mse": 2.0 + (r["epsilon"] > 1)} for r in rows])
    store.close()
    sf = summary_frame(dpbench.load_results(db))
    assert sorted(sf["test_mse"].dropna()) == [2.0, 3.0]  # the new rows' mean per ε; old rows NaN
    assert len(sf) == 2  # an outcome never splits a summary


def test_an_undeclared_or_missing_required_field_is_refused(run_db, tmp_path):
    db = tmp_path / "c.db"
    db.write_bytes(run_db.read_bytes())
    store = ResultStore(db)
    row = store.rows()[0]
    with pytest.raises(ValueError, match="not declared"):
        store.write([{**row, "key": "new", "typo_column": 1.0}])
    with pytest.raises(ValueError, match=r"required fields \['method'\]"):
        store.write([{**row, "key": "new", "method": None}])
    store.close()


def test_summary_fields_are_the_declared_aggregates(run_db):
    sf = summary_frame(dpbench.load_results(run_db))
    for col in schema.all_columns():
        if col.summary:
            how, name, _ = col.summary_spec
            assert name in sf, name
            if how in ("rate", "mean_ci"):
                assert {f"{name}_lo", f"{name}_hi"} <= set(sf.columns)
    # draw_ms is the median per-draw time in milliseconds (scale 1000)
    df = dpbench.load_results(run_db)
    g = df[df["epsilon"] == 1.0]
    assert sf.loc[sf["epsilon"] == 1.0, "draw_ms"].item() == pytest.approx(1e3 * g["draw_seconds_per_draw"].median())


def test_a_bad_declaration_is_refused():
    with pytest.raises(ValueError, match="unknown summary"):
        schema.Column("x", "real", "d", summary="average")
    with pytest.raises(ValueError, match="bad type"):
        schema.Column("x", "float", "d")
