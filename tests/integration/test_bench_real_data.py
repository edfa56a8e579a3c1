"""The real-data benchmark's measurement, caps and report (benchmarks/bench_real_data.py; not timed).

Checked against exact answers on hitters (263 x 19, C(19, 5) = 11 628 supports, brute force):
the measured optimum is the best support, the preparations are certified, the work counts are
deterministic (the report of two runs side by side shows the same nodes), a configuration
stopped at the CPU cap keeps a row that says so, and the summary counts what it is given.
"""

import itertools
import json

import numpy as np
import pytest
from helpers.paths import REPO, benchmark_module

ROOT = REPO


@pytest.fixture(scope="module")
def bench():
    return benchmark_module("bench_real_data")


@pytest.fixture(scope="module")
def hitters_rows(bench):
    return bench.measure("hitters", 120.0, "standardize", stages=("optimum", "mistakes", "topr"))


def test_measured_optimum_is_the_brute_force_best(bench, hitters_rows):
    trial = bench.make_trial("hitters", 120.0, "standardize")
    supports = np.array(list(itertools.combinations(range(trial.p), trial.s)), dtype=np.int64)
    scores = trial.score(supports)
    opt = hitters_rows[0]
    assert [r["stage"] for r in hitters_rows] == ["optimum", "topr", "mistakes"]  # the main job's order
    assert opt["certified"] and opt["support"] == supports[np.argmin(scores)].tolist()
    assert opt["objective"] == pytest.approx(scores.min(), rel=1e-10)
    assert (opt["n"], opt["p"], opt["s"]) == (263, 19, 5)
    assert all(r["certified"] and r["reason"] is None for r in hitters_rows[1:])
    assert all(r["seconds"] >= 0 and r["cpu"] >= 0 and r["nodes"] >= 0 for r in hitters_rows)


def test_work_counts_are_deterministic_and_reported_side_by_side(bench, hitters_rows):
    again = bench.measure("hitters", 120.0, "standardize", stages=("optimum", "mistakes", "topr"))
    assert [(r["stage"], r["nodes"], r["calls"], r["certified"]) for r in again] == \
           [(r["stage"], r["nodes"], r["calls"], r["certified"]) for r in hitters_rows]
    text = bench.report(again, hitters_rows)
    lines = [ln for ln in text.splitlines() if ln.startswith("| hitters")]
    assert len(lines) == 3
    for ln in lines:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        now, before = cells[4], cells[5]
        # same node count and certification in both columns (seconds may differ)
        assert now.split(",", 1)[1] == before.split(",", 1)[1] and "cert" in now, ln


def test_work_counter_counts_outer_oracle_calls(bench):
    trial = bench.make_trial("khan", 120.0, "standardize")
    counter = bench.WorkCounter(type(trial.oracle()))
    try:
        res = trial.optimum()
    finally:
        counter.restore()
    assert res.certified and counter.calls == 1 and counter.work == res.iterations >= 1
    assert "wrapped" not in type(trial.oracle()).solve.__qualname__  # restored


def test_capped_configuration_is_reported_not_dropped(bench):
    # 1 CPU second cannot even import the project: the child is stopped and the row says so
    rows = bench.run_config([("hitters", 120.0, "standardize")], ("optimum",), cpu_cap=1, timeout=120, mem_gb=6)
    assert len(rows) == 1 and rows[0]["stage"] == "optimum" and "1 CPU-s cap" in rows[0]["stopped"]
    assert rows[0]["load1_start"] >= 0 and rows[0]["child_cpu"] >= 0.5
    assert bench._cell(rows[0]) == "> 1 cpu-s cap"
    assert bench.summary(rows)["standardize lam=120"]["optimum_certified"] == 0


def test_batched_configurations_keep_their_rows(bench):
    rows = bench.run_config([("hitters", 120.0, "standardize"), ("diabetes", 10.0, "dpsis")], ("optimum",),
                            cpu_cap=60, timeout=300, mem_gb=6)
    assert [(r["set"], r["standardize"], r["lam"], r["stage"]) for r in rows] == \
           [("hitters", "standardize", 120.0, "optimum"), ("diabetes", "dpsis", 10.0, "optimum")]
    assert all(r["certified"] and "stopped" not in r for r in rows)


def test_summary_and_report_of_stored_rows(bench, hitters_rows, tmp_path, capsys):
    rows = [{**r, "load1_start": 1.0} for r in hitters_rows]
    s = bench.summary(rows)["standardize lam=120"]
    assert s["sets"] == 1 and s["optimum_certified"] == 1 and s["prep_certified"] == 1
    assert s["prep_median_s"] == pytest.approx(rows[1]["seconds"] + rows[2]["seconds"])
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"rows": rows}))
    assert bench.main(["--report", str(path), "--before", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| hitters | standardize | 120 | topr |" in out and '"prep_certified": 1' in out


def test_bad_choice_is_one_line(bench):
    with pytest.raises(SystemExit, match="unknown 'nosuchset'"):
        bench.main(["--sets", "nosuchset"])


@pytest.mark.slow
def test_l0bnb_finds_the_certified_optimum_on_hitters(bench, hitters_rows):
    pytest.importorskip("l0bnb")
    trial = bench.make_trial("hitters", 120.0, "standardize")
    res = bench.l0bnb_optimum(trial.problem.X, trial.problem.y, 5, 120.0)
    assert res["support"] == hitters_rows[0]["support"] and res["solves"] >= 1


def test_compare_mode_reads_the_commands_summary(bench, tmp_path):
    """Issue 22's main job on hitters through the CLI: per-method preparation and certification."""
    row = bench.run_compare("hitters", cpu_cap=120, timeout=600, mem_gb=6, workdir=tmp_path)
    assert row["stopped"] is None, row
    assert row["command"].startswith("dpbench compare --methods topr,mistakes,mcmc --dataset hitters --s 5")
    for method in ("topr", "mistakes", "mcmc"):
        assert row[method]["uncertified"] == 0 and row[method]["failed"] == 0 and row[method]["prep_s"] >= 0
    assert row["topr"]["guarantee"] == ["pure ε=1"]
    text = bench.compare_report([row])
    assert "| hitters |" in text and "| yes |" in text and "certified on 1 sets" in text


def test_stage_cpu_counts_the_workers_it_reaped(bench):
    """topr's roots run on forked workers: a stage's CPU seconds include theirs once reaped."""
    import subprocess
    import sys

    class Counter:
        work = calls = 0

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    _, row = bench._stage(lambda: subprocess.run([sys.executable, "-c", burn], check=True), Counter())
    assert row["cpu"] >= 0.25  # the parent alone spends a few ms waiting
