"""End-to-end tests of `dpbench compare`, resume, export, JSON summary and bad input."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from dpbench.api import Draws, Problem, Selector
from dpbench import UserInputError
from dpbench.cli.main import main
from helpers.paths import THIRDPARTY

DPBENCH = [sys.executable, "-m", "dpbench.cli"]


def run_cli(*args):
    return subprocess.run([*DPBENCH, *args], capture_output=True, text=True, timeout=300)


def default_sigint():
    """``preexec_fn`` of a child that must take SIGINT: restore its default disposition (a shell
    starts background jobs with SIGINT ignored, and Python then installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def count_rows(db):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def test_default_run_json_summary_and_export(tmp_path, capsys):
    db, js = tmp_path / "r.db", tmp_path / "s.json"
    assert main(["compare", "--methods", "exhaustive", "--out", str(db), "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "exhaustive" in out and "pure" in out
    summary = json.loads(js.read_text())
    # the built-in default: toeplitz, p = 20, s = 3, n = 200, 400, 800, 10 trials
    assert [row["n"] for row in summary] == [200, 400, 800]
    required = {"method", "n", "p", "s", "epsilon", "trials", "recovery_rate", "recovery_se", "recovery_prob",
                "f1", "time_median_s", "dp_type", "failed", "uncertified"}
    for row in summary:
        assert required <= set(row)
        assert row["trials"] == 10 and row["failed"] == 0 and row["uncertified"] == 0
        assert row["dp_type"] == "pure" and 0 <= row["recovery_prob"] <= 1
        # sampled recovery agrees with the analytic probability (1000 draws per setting)
        assert abs(row["recovery_rate"] - row["recovery_prob"]) < 5 * max(row["recovery_se"], 0.01)
    assert summary[-1]["recovery_prob"] > summary[0]["recovery_prob"]  # recovery rises with n
    assert count_rows(db) == 30

    csv_path, json_path = tmp_path / "rows.csv", tmp_path / "rows.json"
    assert main(["export", str(db), "-o", str(csv_path)]) == 0
    assert main(["export", str(db), "-o", str(json_path), "--supports"]) == 0
    lines = csv_path.read_text().strip().splitlines()
    assert len(lines) == 31 and lines[0].startswith("method,method_label,data,n,p,s,epsilon,trial,key")
    rows = json.loads(json_path.read_text())
    assert len(rows) == 30 and all(len(r["supports"]) == 100 for r in rows)

    # running the same command again recomputes nothing and duplicates nothing
    before = {r["key"]: r["created"] for r in rows}
    assert main(["compare", "--methods", "exhaustive", "--out", str(db)]) == 0
    assert count_rows(db) == 30
    with sqlite3.connect(db) as conn:
        after = dict(conn.execute("SELECT key, created FROM results"))
    assert after == before

    assert main(["report", str(db), "--markdown", str(tmp_path / "r.md")]) == 0
    assert "| exhaustive | 800 | 1 | 10 |" in (tmp_path / "r.md").read_text()


def test_seed_reproducible_and_seed_sensitive(tmp_path):
    def supports(seed, db):
        main(["compare", "--methods", "exhaustive", "--n", "300", "--trials", "2", "--draws", "5",
              "--seed", str(seed), "--out", str(db)])
        with sqlite3.connect(db) as conn:
            return [r[0] for r in conn.execute("SELECT supports FROM results ORDER BY trial")]

    a = supports(1, tmp_path / "a.db")
    assert a == supports(1, tmp_path / "b.db")
    assert a != supports(2, tmp_path / "c.db")


def test_interrupt_then_resume_without_loss_or_duplication(tmp_path):
    db = tmp_path / "r.db"
    args = ["compare", "--methods", "exhaustive", "--p", "24", "--s", "4", "--n", "200", "--trials", "400",
            "--draws", "20", "--out", str(db)]
    # the child takes Ctrl-C as a terminal's process would: a suite started as a background job of a
    # script (`pytest &`) ignores SIGINT, and its children inherited that and ran to the end (exit 0)
    proc = subprocess.Popen([*DPBENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    # off a terminal the run logs one line per finished trial: interrupt right after the fifth
    head = [proc.stderr.readline() for _ in range(5)]
    assert all(" done " in line for line in head), head
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = "".join(head) + err
    assert proc.returncode == 130, err
    assert "resume" in err and "Traceback" not in err
    partial = count_rows(db)
    assert 5 <= partial < 400
    with sqlite3.connect(db) as conn:
        first = dict(conn.execute("SELECT key, created FROM results"))

    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr
    assert count_rows(db) == 400
    with sqlite3.connect(db) as conn:
        again = dict(conn.execute("SELECT key, created FROM results"))
    assert all(again[k] == v for k, v in first.items())  # finished trials were not recomputed


def test_resuming_with_another_work_limit_says_the_stored_rows_are_kept(tmp_path):
    """A work limit is not part of a row's identity (certified rows do not depend on it): a rerun
    into the same database with another limit resumes every row, and says so instead of seeming to
    ignore the new limit; the same limit again says nothing."""
    db = tmp_path / "r.db"
    base = ["compare", "--methods", "mistakes", "--p", "10", "--s", "2", "--n", "60", "--trials", "1",
            "--draws", "2", "--out", str(db)]
    assert run_cli(*base).returncode == 0
    again = run_cli(*base, "--param", "mistakes.node_limit=50")
    assert again.returncode == 0, again.stderr
    assert "the stored rows of mistakes(node_limit=50) were computed as mistakes;" in again.stderr
    assert "--retry-uncertified" in again.stderr
    same = run_cli(*base)
    assert same.returncode == 0 and "resuming" in same.stderr and "were computed as" not in same.stderr


def test_sigkill_leaves_database_consistent(tmp_path):
    db = tmp_path / "r.db"
    args = ["compare", "--methods", "exhaustive", "--p", "24", "--s", "4", "--n", "200", "--trials", "300",
            "--draws", "20", "--out", str(db)]
    proc = subprocess.Popen([*DPBENCH, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and not (db.exists() and _safe_count(db) >= 3):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert count_rows(db) == 300


def _safe_count(db):
    try:
        return count_rows(db)
    except sqlite3.OperationalError:
        return 0


@pytest.mark.parametrize("args, fragment", [
    (["--methods", "exhaustive", "--s", "20"], "1 <= s < p"),
    (["--methods", "exhaustive", "--s", "0"], "1 <= s < p"),
    (["--methods", "exhaustive", "--n", "1"], "at least 2 rows"),
    (["--methods", "exhaustive", "--epsilon", "0"], "epsilon"),
    (["--methods", "exhaustive", "--epsilon", "-1"], "epsilon"),
    (["--methods", "exhaustive", "--epsilon", "nan"], "epsilon"),
    (["--methods", "exhaustiv"], "Did you mean 'exhaustive'"),
    (["--methods", "exhaustive", "--generator", "toeplits"], "Did you mean 'toeplitz'"),
    (["--methods", "exhaustive", "--p", "200", "--s", "6"], "C(200, 6) = 82,408,626,300"),
    (["--methods", "exhaustive", "--param", "exhaustive.nope=1"], "no parameter 'nope'"),
    (["--methods", "exhaustive", "--param", "limit=3"], "NAME.KEY=VALUE"),
    (["--methods", "exhaustive", "--trials", "0"], "positive integer"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, fragment):
    res = run_cli("compare", *args, "--out", str(tmp_path / "x.db"))
    assert res.returncode == 2, res.stderr
    assert fragment in res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("dpbench: warning")]
    assert len(errors) == 1 and errors[0].startswith("dpbench: error:")


@pytest.mark.parametrize("args, fragment", [
    (["--n", "100,abc"], "argument --n: '100,abc' has an item 'abc' that must be an integer"),
    (["--n", ""], "empty"),
    (["--epsilon", ","], "empty"),
])
def test_bad_lists_exit_2(tmp_path, args, fragment):
    res = run_cli("compare", "--methods", "exhaustive", *args, "--out", str(tmp_path / "x.db"))
    assert res.returncode == 2 and fragment in res.stderr and "Traceback" not in res.stderr


def test_nan_in_data_is_rejected_with_location():
    X = np.zeros((5, 4))
    X[3, 2] = np.nan
    with pytest.raises(UserInputError, match=r"row 3, column 2"):
        Problem(X, np.zeros(5), 2)
    with pytest.raises(UserInputError, match="inf"):
        Problem(np.zeros((5, 4)), np.array([0, 0, np.inf, 0, 0]), 2)


class _Flaky(Selector):
    name = "flaky"
    dp_type = "none"
    summary = "fails on odd trials (test only)"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        if trial.problem.y[0] > 0:
            raise RuntimeError("deliberate failure")
        return Draws(np.tile(np.arange(trial.s), (n_draws, 1)))


def test_failing_selector_is_recorded_and_others_go_on(tmp_path, register_selectors, capsys):
    register_selectors(_Flaky)
    db, js = tmp_path / "r.db", tmp_path / "s.json"
    assert main(["compare", "--methods", "flaky,exhaustive", "--n", "100", "--trials", "8", "--draws", "3",
                 "--out", str(db), "--json", str(js)]) == 0
    summary = {r["method"]: r for r in json.loads(js.read_text())}
    assert summary["exhaustive"]["failed"] == 0 and summary["exhaustive"]["trials"] == 8
    assert 0 < summary["flaky"]["failed"] < 8
    assert summary["flaky"]["trials"] + summary["flaky"]["failed"] == 8
    with sqlite3.connect(db) as conn:
        errors = [e for (e,) in conn.execute("SELECT error FROM results WHERE status = 'failed'")]
    assert errors and all("deliberate failure" in e for e in errors)
    assert "failed" in capsys.readouterr().err


def test_list_json_names_every_kind_and_distribution(capsys):
    assert main(["list", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert set(info) == {"selectors", "generators", "solvers", "datasets", "losses", "estimators"}
    assert {"least-squares", "hinge"} <= {lo["name"] for lo in info["losses"]}
    ex = next(s for s in info["selectors"] if s["name"] == "exhaustive")
    assert ex["dp_type"] == "pure" and ex["neighbouring"] == "replace-one"
    assert ex["distribution"].startswith("dpbench ") and "limit" in ex["params"]
    assert any(g["name"] == "toeplitz" for g in info["generators"])
    assert main(["list"]) == 0
    assert "exhaustive" in capsys.readouterr().out


def test_third_party_selector_via_entry_point(tmp_path):
    """Install a throwaway package that registers a selector, and run it in `dpbench compare`."""
    target = tmp_path / "site"
    src = THIRDPARTY
    build = tmp_path / "src"
    import shutil

    shutil.copytree(src, build)  # build outside the repository so no build/ dirs are left behind
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
                          "--target", str(target), str(build)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    listing = subprocess.run([*DPBENCH, "list", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert listing.returncode == 0, listing.stderr
    names = {s["name"]: s for s in json.loads(listing.stdout)["selectors"]}
    assert names["coinflip"]["distribution"] == "dpbench-coinflip 0.0.1"
    # the broken entry point warns once, naming its distribution; the others still load
    assert "dpbench-coinflip" in listing.stderr and "broken on purpose" in listing.stderr
    assert "exhaustive" in names

    js = tmp_path / "s.json"
    res = subprocess.run([*DPBENCH, "compare", "--methods", "coinflip,exhaustive", "--n", "200", "--trials", "3",
                          "--out", str(tmp_path / "r.db"), "--json", str(js)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "coinflip" in res.stdout
    rows = {r["method"]: r for r in json.loads(js.read_text())}
    # coinflip's analytic recovery probability is 1 / C(20, 3)
    assert rows["coinflip"]["recovery_prob"] == pytest.approx(1 / 1140)
    assert rows["coinflip"]["trials"] == 3 and rows["coinflip"]["failed"] == 0


def test_recovery_interval_is_rounded_outwards():
    # 0 exact recoveries in 1000 draws: Wilson upper bound 3.84/1003.84 = 0.0038, which
    # rounding to nearest printed as "0.00 [0.00,0.00]"
    from dpbench.cli.tables import rate_text
    from dpbench.bench.results.summary import rate_interval

    lo, hi = rate_interval(0, 1000, "wilson")
    assert 0.003 < hi < 0.004
    assert rate_text({"recovery": 0.0, "recovery_lo": lo, "recovery_hi": hi}, ".2f") == "0.00 [0.00, 0.01]"
    assert rate_text({"recovery": 0.5, "recovery_lo": 0.4649, "recovery_hi": 0.25 + 0.25}, ".2f") \
        == "0.50 [0.46, 0.50]"  # a bound on the printed grid stays where it is
    assert rate_text({"recovery": 1.0, "recovery_lo": 0.9962, "recovery_hi": 1.0}, ".2f") == "1.00 [0.99, 1.00]"


def test_version(capsys):
    from dpbench import __version__
    from dpbench.cli.main import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"dpbench {__version__}"


def test_footnote_explains_every_header_that_is_not_self_evident():
    # the "3/10" in the trials column of the README's first table was the one column the
    # table's own footnote did not explain
    from dpbench.cli.tables import FOOTNOTE

    for header in ("trials: k/N", "exact recovery", "P(exact)", "prep s", "trial s", "ms/draw", "fail/unc."):
        assert header in FOOTNOTE


def test_times_of_ten_or_more_are_not_in_exponent_notation():
    from dpbench.cli.tables import _short

    assert [_short(v, ".1g") for v in (0.0004, 0.2, 9.6, 13.7, 130.0)] == ["0.0004", "0.2", "10", "14", "130"]
    assert _short(float("nan"), ".1g") == "—"


def test_long_method_labels_do_not_crop_the_guarantee(tmp_path, capsys):
    # "exhaustive(limit=12345678)" with n and ε columns left the guarantee column no room:
    # rich cropped "pure ε=0.5" to "pure ε"
    from dpbench.cli.main import main

    args = ["compare", "--methods", "exhaustive", "--param", "exhaustive.limit=12345678", "--epsilon", "0.5,1",
            "--p", "8", "--n", "60,80", "--s", "2", "--trials", "1", "--draws", "5", "--out", str(tmp_path / "r.db")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "pure ε=0.5" in out and max(len(line) for line in out.splitlines()) <= 100
