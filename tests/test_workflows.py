"""Config files, parallel and distributed runs, plots and reports."""

import json
import sqlite3
from pathlib import Path

import pytest

from dpbench.bench.config import build_run_configs
from dpbench.cli.main import main
from dpbench.bench.config import load_config
from dpbench.bench.config import COMPARE_DEFAULTS

CONFIGS = sorted((Path(__file__).parent.parent / "configs").glob("*.toml"))


def _rows(db):
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT key, status, supports, recovery FROM results"))


def test_serial_jobs_and_dask_give_identical_results(tmp_path):
    args = ["compare", "--methods", "exhaustive,mcmc,dpsis", "--n", "100,300", "--trials", "4", "--draws", "10",
            "--param", "mcmc.iterations=200", "--delta", "1e-6"]
    assert main([*args, "--out", str(tmp_path / "serial.db")]) == 0
    assert main([*args, "--jobs", "2", "--out", str(tmp_path / "jobs.db")]) == 0
    pytest.importorskip("dask.distributed")
    assert main([*args, "--backend", "dask", "--out", str(tmp_path / "dask.db")]) == 0
    serial = _rows(tmp_path / "serial.db")
    assert len(serial) == 2 * 4 * 3 and all(r[1] == "ok" for r in serial)
    assert _rows(tmp_path / "jobs.db") == serial
    assert _rows(tmp_path / "dask.db") == serial


def test_unreachable_dask_scheduler_is_a_clear_error(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    code = main(["compare", "--methods", "exhaustive", "--n", "100", "--trials", "1", "--backend", "dask",
                 "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path / "x.db")])
    assert code == 2 and "cannot reach the dask scheduler" in capsys.readouterr().err


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_configs_parse_and_a_scaled_down_version_runs(path, tmp_path):
    opts = load_config(path, COMPARE_DEFAULTS)
    assert opts["methods"] and opts["epsilon"]
    for full in build_run_configs({**COMPARE_DEFAULTS, **opts}):
        assert full.trials >= 10 and full.data
    # scaled down: one trial, few draws, two epsilons, small problems
    small = ["--trials", "1", "--draws", "5", "--out", str(tmp_path / "r.db"), "--json", str(tmp_path / "s.json")]
    if isinstance(opts.get("dataset"), list) and len(opts["dataset"]) > 2:
        small += ["--dataset", "sorlie,alon"]  # the two smallest microarray sets stand for the fourteen
    if "dataset" not in opts and opts.get("generator") in ("toeplitz", "classification"):
        small += ["--p", "30", "--n", "120"]  # classification: the hinge config's p = 1000, n = 3000 took 4 minutes
    small += ["--epsilon", ",".join(str(e) for e in opts["epsilon"][:2])]
    if opts.get("solver") == "gurobi":
        pytest.importorskip("gurobipy")
    params = []
    if "mcmc" in opts["methods"]:
        params += ["--param", "mcmc.iterations=100"]
    if any(item.startswith("topr.R=") and "," in item for item in opts.get("param", [])):
        params += ["--param", "topr.R=2,300"]  # a grid of list lengths, scaled to C(30, s)
    assert main(["compare", "--config", str(path), *small, *params]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary and all(r["total_trials"] == 1 and r["trials"] + r["failed"] == 1 for r in summary)
    assert all(r["failed"] == 0 for r in summary), summary


def test_config_errors_and_cli_override(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('methods = ["exhaustive"]\nbogus = 1\n')
    assert main(["compare", "--config", str(bad)]) == 2
    assert "unknown option(s) bogus" in capsys.readouterr().err
    bad.write_text("methods = [")
    assert main(["compare", "--config", str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    good = tmp_path / "good.toml"
    good.write_text('methods = "exhaustive"\nn = [150]\ntrials = 3\ndraws = 4\n[params]\nexhaustive = { chunk = 500 }\n')
    assert main(["compare", "--config", str(good), "--trials", "2", "--out", str(tmp_path / "g.db"),
                 "--json", str(tmp_path / "g.json")]) == 0
    (row,) = json.loads((tmp_path / "g.json").read_text())
    assert row["n"] == 150 and row["trials"] == 2  # the command line overrides the file


def test_plot_and_report(tmp_path):
    pytest.importorskip("matplotlib")
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "exhaustive,dpsis", "--n", "100,200", "--epsilon", "1,4",
                 "--trials", "3", "--draws", "10", "--out", str(db)]) == 0
    png = tmp_path / "fig.png"
    assert main(["plot", str(db), "--x", "n", "--metric", "recovery", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert main(["plot", str(db), "--x", "epsilon", "--logx", "-o", str(tmp_path / "eps.png")]) == 0
    md = tmp_path / "r.md"
    assert main(["report", str(db), "--markdown", str(md)]) == 0
    lines = [line for line in md.read_text().splitlines() if line.startswith("|")]
    assert "guarantee" in md.read_text().splitlines()[-1]
    assert len(lines) == 2 + 2 * 2 * 2  # header, rule, 2 methods x 2 n x 2 epsilon
    assert main(["plot", str(tmp_path / "missing.db"), "-o", str(png)]) == 2


def test_config_params_merge_with_command_line_and_unused_ones_are_ignored(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('methods = "exhaustive,mcmc"\nn = [120]\ntrials = 1\ndraws = 3\ndelta = 1e-6\n'
                   '[params]\nmcmc = { iterations = 50 }\ntopr = { R = 100 }\n')
    opts = {**COMPARE_DEFAULTS, **load_config(cfg, COMPARE_DEFAULTS)}
    assert "topr.R=100" in opts["param"]
    # topr is not run: its parameter from the file is ignored; the command line adds one for exhaustive
    assert main(["compare", "--config", str(cfg), "--methods", "exhaustive,mcmc", "--param", "exhaustive.chunk=99",
                 "--out", str(tmp_path / "r.db")]) == 0
    import sqlite3

    with sqlite3.connect(tmp_path / "r.db") as conn:
        configs = dict(conn.execute("SELECT method, config FROM results"))
    assert json.loads(configs["mcmc"])["params"] == {"iterations": "50"}
    assert json.loads(configs["exhaustive"])["params"] == {"chunk": "99"}
    # a command-line parameter for a method that is not run is still an error
    assert main(["compare", "--config", str(cfg), "--param", "topr.R=5", "--out", str(tmp_path / "x.db")]) == 2
