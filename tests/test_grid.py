"""Grids over run options and plugin parameters: one setting per value, existing rows unchanged."""

import json
import sqlite3

import pytest

from dpbench.bench.config import COMPARE_DEFAULTS, build_run_configs
from dpbench.cli.main import main
from dpbench.bench.config import grid_points, load_config

SMALL = ["--p", "10", "--s", "2", "--n", "150", "--trials", "2", "--draws", "6"]


def _rows(db):
    with sqlite3.connect(db) as conn:
        return {k: (m, lab, json.loads(c), sup) for k, m, lab, c, sup in
                conn.execute("SELECT key, method, label, config, supports FROM results")}


def test_adding_a_value_to_a_run_option_leaves_the_existing_rows_identical(tmp_path):
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    assert main(["compare", "--methods", "exhaustive,mcmc", *SMALL, "--b-x", "0.5",
                 "--param", "mcmc.iterations=30", "--delta", "1e-6", "--out", str(one)]) == 0
    assert main(["compare", "--methods", "exhaustive,mcmc", *SMALL, "--b-x", "0.5,0.75",
                 "--param", "mcmc.iterations=30", "--delta", "1e-6", "--out", str(two)]) == 0
    a, b = _rows(one), _rows(two)
    assert len(a) == 2 * 2 and len(b) == 2 * len(a)  # 2 methods x 2 trials, then per b_x
    assert {k: v for k, v in b.items() if v[2]["b_x"] == 0.5} == a
    assert {v[2]["b_x"] for v in b.values()} == {0.5, 0.75}
    # b_x changes the mechanism: the 0.75 rows are not copies of the 0.5 rows
    sup = {(v[0], v[2]["b_x"]): v[3] for v in b.values()}
    assert any(sup[(m, 0.5)] != sup[(m, 0.75)] for m in ("exhaustive",))


def test_parameter_list_makes_labelled_variants_equal_to_single_runs(tmp_path):
    grid, plain, r10 = tmp_path / "grid.db", tmp_path / "plain.db", tmp_path / "r10.db"
    assert main(["compare", "--methods", "topr", *SMALL, "--param", "topr.R=auto,10", "--out", str(grid),
                 "--json", str(tmp_path / "g.json")]) == 0
    labels = {r["label"].replace(" (no guarantee)", "") for r in json.loads((tmp_path / "g.json").read_text())}
    assert labels == {"topr", "topr(R=10)"}  # the summary keeps the variants apart
    assert main(["compare", "--methods", "topr", *SMALL, "--param", "topr.R=auto", "--out", str(plain)]) == 0
    assert main(["compare", "--methods", "topr", *SMALL, "--param", "topr.R=10", "--out", str(r10)]) == 0
    g = _rows(grid)
    assert sorted({v[1] for v in g.values()}) == ["topr", "topr(R=10)"]
    assert all(v[0] == "topr" for v in g.values())
    # each variant's rows are exactly the rows of the single run with that parameter as given
    assert {k: v[2:] for k, v in g.items() if v[1] == "topr"} == {k: v[2:] for k, v in _rows(plain).items()}
    assert {k: v[2:] for k, v in g.items() if v[1] == "topr(R=10)"} == {k: v[2:] for k, v in _rows(r10).items()}


def test_toml_lists_expand_to_the_product(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('methods = ["topr", "exhaustive"]\nn = [150]\np = [10]\ns = [2]\n'
                    'b_x = [0.5, 1.0]\nlam = "10, 20, 30"\n'
                    '[params]\ntopr = { R = ["auto", 5, 7] }\nhighs = { node_limit = [30, 60] }\n')
    opts = {**COMPARE_DEFAULTS, **load_config(path)}
    assert opts["b_x"] == [0.5, 1.0] and opts["lam"] == [10.0, 20.0, 30.0]
    points = grid_points(opts)
    assert len(points) == 2 * 3 * 2  # b_x x lam x highs.node_limit
    assert [(p["b_x"], p["lam"]) for p in points[:4:2]] == [(0.5, 10.0), (0.5, 20.0)]
    cfgs = build_run_configs(opts)
    assert len(cfgs) == 12
    assert cfgs[0].methods == ["topr", "topr(R=5)", "topr(R=7)", "exhaustive"]
    assert cfgs[0].method_params["topr(R=7)"] == {"R": "7"}
    assert {c.solver_params["node_limit"] for c in cfgs} == {"30", "60"}


def test_generator_parameter_list_makes_data_settings():
    opts = {**COMPARE_DEFAULTS, "methods": ["exhaustive"], "n": [100], "p": [10], "s": [2],
            "param": ["toeplitz.rho=0.1,0.5"]}
    (cfg,) = build_run_configs(opts)
    assert [st["rho"] for st in cfg.data] == ["0.1", "0.5"]


@pytest.mark.parametrize("args, message", [
    (["--b-x", "0.5,0.5"], "repeats a value"),
    (["--param", "topr.R=5,5"], "repeats a value"),
    (["--param", "topr.R=5,,6"], "empty item"),
    (["--lam", "1,abc"], "--lam"),
])
def test_bad_grids_are_one_line_errors(tmp_path, capsys, args, message):
    code = main(["compare", "--methods", "topr", *SMALL, *args, "--out", str(tmp_path / "x.db")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_table_and_json_key_on_the_swept_option(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["compare", "--methods", "exhaustive", *SMALL, "--lam", "5,50", "--out", str(tmp_path / "t.db"),
                 "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "Λ" in table.splitlines()[2] or "Λ" in table
    summary = json.loads(out.read_text())
    assert sorted(r["config"]["lam"] for r in summary) == [5.0, 50.0]


def test_plot_against_a_swept_run_option(tmp_path):
    pytest.importorskip("matplotlib")
    db = tmp_path / "p.db"
    assert main(["compare", "--methods", "exhaustive", *SMALL, "--b-x", "0.5,1", "--lam", "5,50",
                 "--out", str(db)]) == 0
    for x in ("b_x", "lam"):
        png = tmp_path / f"{x}.png"
        assert main(["plot", str(db), "--x", x, "-o", str(png)]) == 0
        assert png.stat().st_size > 10_000


def test_resumed_variants_reuse_their_own_stored_preparation(tmp_path):
    """A new ε on a grid run loads each variant's own preparation: rows equal a fresh run's."""
    resumed, fresh = tmp_path / "resumed.db", tmp_path / "fresh.db"
    args = ["compare", "--methods", "topr", *SMALL, "--param", "topr.R=auto,10"]
    assert main([*args, "--epsilon", "1", "--out", str(resumed)]) == 0
    assert main([*args, "--epsilon", "1,3", "--out", str(resumed)]) == 0
    assert main([*args, "--epsilon", "1,3", "--out", str(fresh)]) == 0
    a, b = _rows(resumed), _rows(fresh)
    assert len(a) == 2 * 2 * 2 and a == b
