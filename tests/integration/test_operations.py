"""Issue 24: bounded resources, clean failures, one signal path, machine-readable output, versions.

Each test is the regression test of one class of the issue: the command ends with one line naming
the problem and the fix, exit status 2 (130 / 143 for signals), and leaves an existing database
byte for byte as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpbench.cli.main import main
from helpers.cli import sha256

#: A run of a few seconds: two methods with exact laws on a small generated design.
SMALL = ["compare", "--methods", "exhaustive,topr", "--n", "60", "--p", "6", "--s", "2", "--trials", "2",
         "--draws", "20"]


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("dpbench: error:") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("ops") / "small.db"
    assert main([*SMALL, "--out", str(db)]) == 0
    return db


@pytest.fixture
def db_copy(small_db, tmp_path):
    db = tmp_path / "copy.db"
    shutil.copy(small_db, db)
    return db


def refused(capsys, argv, db=None, match=None) -> str:
    """Run ``argv``; assert exit 2, one line, and ``db`` unchanged; return the line."""
    before = sha256(db) if db is not None and Path(db).exists() else None
    assert main([str(a) for a in argv]) == 2
    err = one_line_error(capsys)
    if before is not None:
        assert sha256(db) == before, "the database changed"
    if match is not None:
        assert match in err, err
    return err


# ----------------------------------------------------------------------------- resources


def test_jobs_above_the_usable_cores_is_refused_unless_forced(capsys, tmp_path, monkeypatch):
    from dpbench.cli import resources as cli

    monkeypatch.setattr(cli, "usable_cores", lambda: 2)
    refused(capsys, [*SMALL, "--out", tmp_path / "a.db", "--jobs", "1000"], match="--force-jobs")
    assert not (tmp_path / "a.db").exists()
    assert cli.check_jobs(-1) == 2 and cli.check_jobs(2) == 2
    assert cli.check_jobs(8, force=True) == 8  # forced: up to FORCED_JOBS_PER_CORE per core, never unbounded
    with pytest.raises(cli.UserInputError, match="even with --force-jobs"):
        cli.check_jobs(9, force=True)


def test_draws_are_bounded_by_the_memory_estimate(capsys, tmp_path, monkeypatch):
    from dpbench.cli import main as climain, resources as cli
    from dpbench.bench import config as execute
    from dpbench.bench.config import COMPARE_DEFAULTS, build_run_configs

    refused(capsys, [*SMALL, "--out", tmp_path / "a.db", "--draws", "1000000000"], match="GiB")
    # the estimate: per (method, ε) row of a trial a + b s bytes per draw, times the processes holding a trial
    cfgs = build_run_configs({**COMPARE_DEFAULTS, "methods": ["topr"], "n": [100], "p": [10], "s": [3],
                                  "draws": [1000]})
    one = cli.memory_estimate(cfgs, 1)
    assert one == 24 * 100 * 10 + 1000 * (cli.DRAW_BYTES[0] + 3 * cli.DRAW_BYTES[1])
    assert cli.memory_estimate(cfgs, 2) == 3 * one
    # stated before a run above SHOW_MEMORY_ABOVE
    monkeypatch.setattr(execute, "available_memory", lambda: 10 * 2**30)
    monkeypatch.setattr(cli, "SHOW_MEMORY_ABOVE", one - 1)
    capsys.readouterr()
    cli.check_resources(cfgs, 1, climain.err_console)
    assert "memory estimate" in capsys.readouterr().err


# ----------------------------------------------------------------------------- clean failures


def test_unreadable_data_file(capsys, tmp_path, monkeypatch):
    f = tmp_path / "d.csv"
    f.write_text("a,b,y\n1,2,3\n2,1,5\n3,3,4\n")

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)  # as root, chmod 000 would not stop the read
    refused(capsys, ["compare", "--methods", "topr", "--data", f, "--target", "y", "--s", "1",
                     "--out", tmp_path / "a.db"], match="Permission denied")


def test_read_only_database_is_refused_before_any_trial(capsys, db_copy, monkeypatch):
    from dpbench.bench.results import store
    from dpbench.bench import run as execute

    real = os.access
    monkeypatch.setattr(store.os, "access", lambda p, mode: False if Path(p) == db_copy and mode == os.W_OK
                        else real(p, mode))
    monkeypatch.setattr(execute, "run_trial", lambda *a, **k: pytest.fail("a trial ran before the check"))
    refused(capsys, [*SMALL, "--trials", "3", "--out", db_copy], db=db_copy, match="read-only")


def _corrupt(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    data = bytearray(db.read_bytes())
    assert len(data) > 3 * page
    data[2 * page + 8: 2 * page + 200] = b"\xff" * 192  # one damaged page of the results table
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("command", [[*SMALL, "--trials", "3", "--out"], ["report"], ["export", "-o", "x.csv"],
                                     ["report", "--html", "x.html"]])
def test_a_damaged_page_is_refused_the_same_way_by_every_command(capsys, db_copy, command, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    _corrupt(db_copy)
    argv = [*command[:-1], command[-1], db_copy] if command[0] == "compare" else [command[0], db_copy, *command[1:]]
    refused(capsys, argv, db=db_copy, match="damaged")


def test_a_database_without_the_primary_key_is_left_untouched(capsys, tmp_path):
    from dpbench.bench.results import schema

    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    cols = ", ".join(f"{c.name} {schema.SQL_TYPES[c.type]}" for c in schema.COLUMNS if not c.nullable)
    con.execute(f"CREATE TABLE results ({cols})")
    con.commit()
    con.close()
    refused(capsys, [*SMALL, "--out", db], db=db, match="primary key")
    assert {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(results)")} == set(
        c.name for c in schema.COLUMNS if not c.nullable)


def test_a_newer_schema_version_is_refused(capsys, db_copy):
    con = sqlite3.connect(db_copy)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    refused(capsys, [*SMALL, "--out", db_copy], db=db_copy, match="newer dpbench")


def test_dask_scheduler_that_is_not_an_address(capsys, db_copy):
    pytest.importorskip("distributed")
    refused(capsys, [*SMALL, "--trials", "3", "--out", db_copy, "--backend", "dask", "--scheduler", "not a url"],
            db=db_copy, match="not a dask scheduler address")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_on_stdout(small_db):
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "dpbench.cli", "report", str(small_db)], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "No space left" in r.stderr, r.stderr


# ----------------------------------------------------------------------------- input checks


@pytest.mark.parametrize("content, match", [
    ("a,b,y\n1e308,1,2\n1e308,2,1\n3,3,5\n", "too large"),
    ("a,b,y\n1,2,3\n2,1,3\n4,4,3\n", "constant"),
    ("a;b;y\n1;2;3\n2;1;5\n", "semicolon"),
    ("a\tb\ty\n1\t2\t3\n2\t1\t5\n", "tab"),
])
def test_malformed_csv_files(capsys, tmp_path, content, match):
    f = tmp_path / "d.csv"
    f.write_text(content)
    refused(capsys, ["compare", "--methods", "topr", "--data", f, "--target", "y", "--s", "1",
                     "--out", tmp_path / "a.db"], match=match)
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize("arrays, match", [
    ({"X": np.ones((5, 3)) + 1j, "y": np.arange(5.0)}, "complex"),
    ({"X": np.random.default_rng(0).normal(size=(6, 3)), "y": np.arange(12.0).reshape(6, 2)}, "shape (6, 2)"),
    (None, "not an .npz archive (text)"),
])
def test_malformed_npz_files(capsys, tmp_path, arrays, match):
    f = tmp_path / "d.npz"
    if arrays is None:
        f.write_text("a,b,y\n1,2,3\n")
    else:
        np.savez(f, **arrays)
    refused(capsys, ["compare", "--methods", "topr", "--data", f, "--target", "y", "--s", "1",
                     "--out", tmp_path / "a.db"], match=match)


def test_option_combinations_that_were_ignored(capsys, db_copy, tmp_path):
    refused(capsys, [*SMALL, "--out", db_copy, "--scheduler", "tcp://localhost:8786"], db=db_copy,
            match="--backend dask")
    refused(capsys, ["compare", "--methods", "exhaustive", "--n", "60", "--p", "6", "--s", "2", "--solver", "gurobi",
                     "--out", db_copy], db=db_copy, match="drop --solver")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'methods = "topr"\nout = "{tmp_path / "missing" / "r.db"}"\n')
    refused(capsys, ["compare", "--config", cfg], match="does not exist")
    assert not (tmp_path / "missing").exists()


def test_toml_with_a_byte_order_mark(tmp_path):
    from dpbench.bench.config import load_config

    cfg = tmp_path / "c.toml"
    cfg.write_bytes("\ufeffmethods = \"topr\"\ntrials = 2\n".encode("utf-8"))
    assert load_config(cfg) == {"methods": ["topr"], "trials": 2}


def test_report_to_an_html_name_writes_html(small_db, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(small_db), "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")


# ----------------------------------------------------------------------------- machine-readable output


def test_export_to_stdout_is_exactly_the_table(small_db, capfd):
    import pandas as pd

    assert main(["export", str(small_db), "-o", "-", "--format", "json"]) == 0
    out = capfd.readouterr().out
    assert len(json.loads(out)) == len(pd.read_json(__import__("io").StringIO(out)))
    assert not Path("-").exists()


def test_machine_output_keeps_what_libraries_print_off_stdout(capfd):
    """What a C library writes on file descriptor 1 (HiGHS's banner) goes to stderr, also when buffered."""
    import ctypes

    from dpbench.cli.main import machine_stdout

    libc = ctypes.CDLL(None)
    with machine_stdout() as out:
        os.write(1, b"Running HiGHS 1.16.0\n")
        libc.printf(b"buffered banner\n")
        out.write(b'{"ok": true}\n')
    captured = capfd.readouterr()
    assert json.loads(captured.out) == {"ok": True}
    assert "HiGHS" in captured.err and "buffered banner" in captured.err


def test_bss_json_parses_with_the_installed_highspy():
    """`dpbench bss ... --json | python -m json.tool` (p = 300 is above the enumeration limit: HiGHS runs)."""
    r = subprocess.run([sys.executable, "-m", "dpbench.cli", "bss", "--n", "200", "--p", "300", "--s", "5", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "optimal"


# ----------------------------------------------------------------------------- versions, summaries, report


def test_every_run_records_its_package_versions(small_db):
    import numpy

    from dpbench.bench.results.store import ResultStore

    store = ResultStore(small_db, readonly=True)
    runs = store.runs()
    store.close()
    assert len(runs) == 1 and runs[0]["versions"]["numpy"] == numpy.__version__
    assert runs[0]["argv"][:2] == ["compare", "--methods"]
    md = small_db.parent / "r.md"
    assert main(["report", str(small_db), "--markdown", str(md)]) == 0
    assert f"numpy {numpy.__version__}" in md.read_text()


def test_summarize_never_averages_rows_with_and_without_a_guarantee(tmp_path):
    import dpbench

    db = tmp_path / "g.db"
    # mistakes: pure DP only under the gap condition; at n = 60 some trials meet it and some do not
    assert main(["compare", "--methods", "mistakes,topr", "--n", "40,200", "--p", "6", "--s", "2", "--trials", "6",
                 "--draws", "10", "--out", str(db)]) == 0
    df = dpbench.load_results(db)
    assert df["guaranteed"].any() and not df["guaranteed"].all()
    sf = dpbench.summarize(df)
    for _, row in sf.iterrows():
        sub = df[(df["method_label"] == row["method_label"].replace(" (no guarantee)", "")) & (df["n"] == row["n"])
                 & (df["guaranteed"] == row["guaranteed"])]
        assert len(sub) == row["rows_all"]
        assert row["method_label"].endswith("(no guarantee)") == (not row["guaranteed"])
        # the pooled recovery is that of this row's trials only
        assert row["recovery"] == pytest.approx((sub["recovery"] * sub["n_draws"]).sum() / sub["n_draws"].sum())


def test_report_marks_trials_without_a_guarantee_apart(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    import dpbench
    from dpbench.cli import html_report
    from dpbench.cli.plot import make_figure

    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "topr,mcmc", "--delta", "1e-6", "--n", "60,120", "--p", "6", "--s", "2",
                 "--trials", "2", "--draws", "10", "--out", str(db)]) == 0
    sf = dpbench.summarize(dpbench.load_results(db))
    from matplotlib.colors import to_rgb

    fig, _ = make_figure(sf, x="n")
    legend = fig.legends[0]
    grey = {t.get_text(): len(set(np.round(h.get_color()[0][:3], 6))) == 1
            for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert grey == {lab: lab.endswith("(no guarantee)") for lab in grey} and any(grey.values()), grey
    # the lines themselves: dashed exactly when grey (the series without a guarantee)
    lines = [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert any(ln.get_linestyle() == "--" for ln in lines)
    for ln in lines:
        assert (ln.get_linestyle() == "--") == (len(set(to_rgb(ln.get_color()))) == 1)
    page = html_report.render(dpbench.load_results(db), str(db))
    config = page.split("<h2>Configuration</h2>", 1)[1].split("<h2>", 1)[0]
    assert "mcmc" in config and "(no guarantee)" not in config
    import numpy

    assert f"numpy {numpy.__version__}" in page.split("Package versions of the runs", 1)[1]
    # without matplotlib: the page says so and the terminal is warned
    monkeypatch.setattr(html_report, "have_matplotlib", lambda: False)
    assert main(["report", str(db), "--html", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "matplotlib is not installed" in err


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium on this machine")
def test_html_summary_fits_1400_pixels_in_chromium(small_db, tmp_path):
    """DOM check in headless Chromium at 1 400 px: the summary table has every column in view, no scrollbar."""
    from dpbench.cli.html_report import write_report

    page = tmp_path / "r.html"
    write_report(small_db, page)
    probe = ("<script>window.addEventListener('load',()=>{const t=document.querySelector('.summary table');"
             "const r=t.getBoundingClientRect();document.body.setAttribute('data-fit',JSON.stringify({"
             "right:r.right,left:r.left,inner:window.innerWidth,scroll:document.documentElement.scrollWidth,"
             "box:t.parentElement.scrollWidth-t.parentElement.clientWidth}))});</script></body>")
    page.write_text(page.read_text().replace("</body>", probe))
    r = subprocess.run([_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                        "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    import html as _html
    import re

    m = re.search(r'data-fit="([^"]+)"', r.stdout)
    assert m, r.stderr[-500:]
    fit = json.loads(_html.unescape(m.group(1)))
    assert fit["left"] >= 0 and fit["right"] <= fit["inner"] and fit["scroll"] <= fit["inner"] and fit["box"] <= 0, fit


def test_plot_against_a_setting_with_one_value(small_db, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    refused(capsys, ["plot", small_db, "--x", "epsilon", "-o", tmp_path / "f.png"], match="nothing varies")
    assert not (tmp_path / "f.png").exists()


def test_no_number_is_wrapped_in_list_and_tables(capsys):
    from rich.console import Console

    from dpbench.bench.registry import registry

    assert main(["list", "selectors"]) == 0
    out = capsys.readouterr().out
    for e in registry().describe()["selectors"]:
        for k, v in e.get("params", {}).items():
            assert f"{k}={v['default']}" in out, (k, v)
    import dpbench

    db = None  # a summary with a long variant label on a narrow console
    sf = dpbench.summarize(dpbench.load_results(_variant_db()))
    from dpbench.cli.tables import print_table, rich_table

    con = Console(width=80, file=__import__("io").StringIO())
    print_table(con, rich_table(sf, width=80))
    assert "exhaustive(limit=2000000)" in con.file.getvalue(), db


_VARIANT = {}


def _variant_db():
    if "db" not in _VARIANT:
        import tempfile

        d = Path(tempfile.mkdtemp()) / "v.db"
        assert main([*SMALL, "--param", "exhaustive.limit=2000000", "--out", str(d)]) == 0
        _VARIANT["db"] = d
    return _VARIANT["db"]


def test_help_names_every_subcommand_and_the_limits(capsys):
    with pytest.raises(SystemExit):
        from dpbench.cli.main import build_parser

        build_parser().parse_args(["--help"])
    top = capsys.readouterr().out
    assert "plot" in top.split("positional arguments")[0]
    assert main(["compare", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--force-jobs" in text and "usable cores" in text and "memory estimate" in text


@pytest.mark.slow
def test_ctrl_c_on_a_dask_run_prints_no_worker_tracebacks(tmp_path):
    # Ctrl-C reaches the whole process group: every LocalCluster worker printed a
    # KeyboardInterrupt traceback, although dpbench itself stopped with status 130
    import signal
    import sqlite3
    import subprocess
    import sys

    pytest.importorskip("dask.distributed")
    db = tmp_path / "d.db"
    proc = subprocess.Popen([sys.executable, "-m", "dpbench.cli", "compare", "--methods", "exhaustive", "--p", "26",
                             "--s", "5", "--n", "100", "--trials", "300", "--draws", "5", "--backend", "dask",
                             "--jobs", "2", "--out", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as test_cli's
    # off a terminal the run logs one line per finished trial: interrupt right after the second
    head = []
    while len([ln for ln in head if " done " in ln]) < 2:
        head.append(proc.stderr.readline())
        assert head[-1], "".join(head)  # the run ended before two trials were done
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole process group
    _, err = proc.communicate(timeout=60)
    err = "".join(head) + err
    with sqlite3.connect(db) as conn:
        assert 2 <= conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] < 300
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "run the same command again to resume" in " ".join(err.split())


def test_an_uncertified_bss_reference_keeps_the_rows_and_says_what_to_raise(tmp_path, capsys):
    """Issue 22, item 4: one trial whose bss reference stops at the optimum's work limit no longer
    ends the run with exit 2. Its rows are stored with recovery and F1 undefined, and the
    progress line names the limit to raise; topr's advice names the same --param."""
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "mcmc,topr", "--n", "100", "--p", "300", "--s", "5", "--trials", "1",
                 "--draws", "10", "--delta", "1e-6", "--reference", "bss", "--param", "highs.node_limit=1",
                 "--out", str(db)]) == 0
    err = capsys.readouterr().err
    assert "no reference to score against" in err and "--param highs.node_limit=10)" in err, err
    assert "raise highs.node_limit above 1 (e.g. --param highs.node_limit=10)" in err, err
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT method, status, recovery, f1, reference_support, diagnostics FROM results").fetchall()
    assert sorted(r[0] for r in rows) == ["mcmc", "topr"]
    for method, status, recovery, f1, ref, diag in rows:
        assert recovery is None and f1 is None and ref in (None, "null"), (method, recovery, ref)
        assert "bss reference could not be certified" in json.loads(diag)["reference_uncertified"]
        assert status == ("uncertified" if method == "topr" else "ok")
    # the limit the line names, with --retry-uncertified: both rows redone and scored
    assert main(["compare", "--methods", "mcmc,topr", "--n", "100", "--p", "300", "--s", "5", "--trials", "1",
                 "--draws", "10", "--delta", "1e-6", "--reference", "bss", "--out", str(db),
                 "--retry-uncertified"]) == 0
    assert "2 uncertified result(s) of this run" in capsys.readouterr().err
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT method, status, recovery, diagnostics FROM results").fetchall()
    assert len(rows) == 2 and all(r[1] == "ok" and r[2] is not None for r in rows), rows
    assert not any("reference_uncertified" in r[3] for r in rows)
