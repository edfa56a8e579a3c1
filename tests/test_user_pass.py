"""Regression tests from a new user's pass over the command line (docs/user-guide/compare.md workflows).

Each test reproduces one problem found by running the documented commands: what the user saw
before the fix is in the comment, and the test fails on it.
"""

import os

import pytest
from rich.console import Console

import dpbench
from dpbench.cli.main import main
from dpbench.cli.tables import print_table, rich_table
from dpbench.bench.results.summary import display_columns, summary_frame

TINY = ["--p", "8", "--n", "60", "--s", "2", "--trials", "1", "--draws", "5"]


def one_error(capsys, *args) -> str:
    code = main(list(args))
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("dpbench: warning")]
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("dpbench: error:"), err
    return lines[0]


@pytest.fixture(scope="module")
def eps_db(tmp_path_factory):
    """Two ρ x two ε of exhaustive and a no-guarantee baseline: 8 summary rows (n = 60, p = 8)."""
    db = tmp_path_factory.mktemp("user") / "r.db"
    assert main(["compare", "--methods", "exhaustive,bss", "--rho", "0.1,0.5", "--epsilon", "1,8", *TINY,
                 "--out", str(db)]) == 0
    return db


def _render(sf, width):
    con = Console(width=width, record=True, file=open(os.devnull, "w"))
    print_table(con, rich_table(sf, width=width))
    return con.export_text()


def test_terminal_table_keeps_the_guarantee_in_80_columns(eps_db):
    # on an 80-column terminal rich dropped the guarantee column altogether and wrapped numbers
    # inside their cells (F1 "0.38" printed as "0.3" over "8")
    sf = summary_frame(dpbench.load_results(eps_db))
    text = _render(sf, 80)
    assert max(len(ln) for ln in text.splitlines()) <= 80
    assert text.count("pure ε=1") == 2 and text.count("pure ε=8") == 2
    assert text.count("none: not") == 4  # the bss rows: "none: not private", folded at a space
    assert "not shown in 80 columns: trial s" in text
    for d in sf.to_dict("records"):  # every number whole on one line
        assert f"{d['f1']:.2f}" in text


def test_table_too_wide_for_the_console_is_printed_whole(eps_db):
    # when even without the optional columns the table cannot fit, it is printed at its natural
    # width (the terminal wraps the lines) instead of losing its last column
    sf = summary_frame(dpbench.load_results(eps_db))
    text = _render(sf, 40)
    assert text.count("pure ε=1") == 2 and text.count("pure ε=8") == 2
    assert max(len(ln) for ln in text.splitlines()) > 40


def test_table_at_100_columns_is_unchanged(eps_db):
    sf = summary_frame(dpbench.load_results(eps_db))
    text = _render(sf, 100)
    assert "not shown" not in text and "trial" in text and "ms/" in text


def test_real_data_table_names_each_data_set_once_and_marks_the_preprocessing(tmp_path, capsys):
    # two data sets printed "diabetes" in both a data and a dataset column, which left no room
    # for the guarantee; a stored run's report said "pure ε=1" with no word that --standardize
    # (the default on real data) used the data and is not private
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "exhaustive", "--dataset", "diabetes,hitters", "--s", "2",
                 "--trials", "1", "--draws", "5", "--solver", "enumerate", "--out", str(db)]) == 0
    capsys.readouterr()
    sf = summary_frame(dpbench.load_results(db))
    assert "data" in display_columns(sf) and "dataset" not in display_columns(sf)
    assert main(["report", str(db)]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert out.count("pure ε=1 †") == 2 and "NOT differentially private" in flat
    assert main(["report", str(db), "--markdown", str(tmp_path / "r.md")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert md.count("pure ε=1 †") == 2 and "NOT differentially private" in md


def test_simulation_guarantee_has_no_preprocessing_mark(eps_db, capsys):
    assert main(["report", str(eps_db)]) == 0
    out = capsys.readouterr().out
    assert "†" not in out and "NOT differentially private" not in out


def test_hinge_footer_names_the_solver_that_ran(tmp_path, capsys):
    # the footer said solver=highs although the hinge loss's oracle is always generic
    db = tmp_path / "h.db"
    assert main(["compare", "--methods", "sampagg", "--loss", "hinge", "--generator", "classification",
                 *TINY, "--out", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "solver=generic" in out and "solver=highs" not in out
    assert main(["compare", "--methods", "sampagg", "--loss", "hinge", "--generator", "classification",
                 *TINY, "--out", str(db), "--json", str(tmp_path / "s.json")]) == 0
    import json

    assert {r["config"]["solver"] for r in json.loads((tmp_path / "s.json").read_text())} == {"generic"}
    assert set(dpbench.load_results(db)["solver"]) == {"generic"}
    # least squares keeps the solver it was given
    db2 = tmp_path / "l.db"
    assert main(["compare", "--methods", "exhaustive", *TINY, "--out", str(db2)]) == 0
    assert set(dpbench.load_results(db2)["solver"]) == {"highs"}


def test_hinge_refuses_solver_choices_it_would_ignore(tmp_path, capsys):
    base = ["compare", "--methods", "sampagg", "--loss", "hinge", "--generator", "classification", *TINY,
            "--out", str(tmp_path / "x.db")]
    # two solvers ran the same generic oracle twice: one table row with "trials 2" for --trials 1
    line = one_error(capsys, *base, "--solver", "highs,gurobi")
    assert "every one of these runs the generic oracle; give one --solver" in line
    # a highs parameter was dropped without a word
    line = one_error(capsys, *base, "--param", "highs.node_limit=5")
    assert "the oracle is generic, not highs; use --solver generic" in line
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("body, expected", [
    # was: "s = 2.5 must be a comma-separated list whose items each must be an integer ..."
    ("s = 2.5", "s = 2.5 must be an integer or log (log: floor(ln p) per data set)"),
    ('n = [100, "abc"]', 'n = [100, "abc"] has an item "abc" that must be an integer'),
    ("n = true", "n = true must be an integer, not true/false"),  # was "n = True"
    ('trials = "abc"', 'trials = "abc" must be an integer'),  # TOML's quotes, not Python's
    ("epsilon = []", "epsilon = [] must be a non-empty list, e.g. [1, 2]"),
    ("methods = []", 'methods = [] must be a non-empty list, e.g. ["topr", "mistakes"]'),  # was "e.g. 1,2"
    ('sensitivity = ["tight", "loose"]', 'sensitivity = ["tight", "loose"]: "loose" must be one of tight, paper'),
])
def test_config_messages_speak_toml(tmp_path, capsys, body, expected):
    cfg = tmp_path / "c.toml"
    cfg.write_text(('' if body.startswith("methods") else 'methods = "exhaustive"\n') + body + "\n")
    line = one_error(capsys, "compare", "--config", str(cfg), "--out", str(tmp_path / "r.db"))
    assert line == f"dpbench: error: config {cfg}: {expected}"
    assert "comma-separated" not in line


@pytest.mark.parametrize("args, expected", [
    (["--s", "2.5"], "argument --s: '2.5' must be an integer or log"),  # was "argument --s: --s = '2.5' ..."
    (["--n", "100,abc"], "argument --n: '100,abc' has an item 'abc' that must be an integer"),
    (["--epsilon", ","], "argument --epsilon/--eps: ',' must be a non-empty list, e.g. 1,2"),
])
def test_command_line_messages_name_the_flag_once(tmp_path, capsys, args, expected):
    line = one_error(capsys, "compare", "--methods", "exhaustive", *args, "--out", str(tmp_path / "r.db"))
    assert expected in line and line.count("--" + args[0].lstrip("-")) == 1


@pytest.mark.parametrize("body, flag", [("delta = -1", "delta"), ("lam = -3", "lam"), ("trials = 0", "trials")])
def test_checked_values_from_a_config_name_the_file(tmp_path, capsys, body, flag):
    # "--delta = -1.0 must lie in [0, 1)" for a value the user wrote in a TOML file
    cfg = tmp_path / "c.toml"
    cfg.write_text('methods = "exhaustive"\n' + body + "\n")
    line = one_error(capsys, "compare", "--config", str(cfg), "--out", str(tmp_path / "r.db"))
    assert line.endswith(f"(set in config {cfg}: {flag})")
    # the same value on the command line is not attributed to the file
    line = one_error(capsys, "compare", "--config", str(cfg), "--out", str(tmp_path / "r.db"),
                     f"--{flag}", body.split(" = ")[1])
    assert "set in config" not in line


@pytest.mark.parametrize("seed", ["-1", str(2**63), "99999999999999999999999"])
def test_seed_outside_the_stored_range_is_bad_input(tmp_path, capsys, seed):
    # -1: numpy's SeedSequence traceback (exit 1); 1e23: an OverflowError when the first trial
    # was written, after its work
    line = one_error(capsys, "compare", "--methods", "exhaustive", *TINY, "--seed", seed,
                     "--out", str(tmp_path / "r.db"))
    assert "--seed" in line and "from 0 to 2^63 - 1" in line
    assert not (tmp_path / "r.db").exists()


def test_largest_seed_runs(tmp_path):
    assert main(["compare", "--methods", "exhaustive", *TINY, "--seed", str(2**63 - 1),
                 "--out", str(tmp_path / "r.db")]) == 0


def test_bss_refuses_bad_seed_and_time_limit(capsys):
    line = one_error(capsys, "bss", "--p", "12", "--n", "50", "--s", "2", "--seed", "-1")
    assert "--seed" in line
    # a negative limit printed a "time_limit" result with no support and exit status 1
    line = one_error(capsys, "bss", "--p", "12", "--n", "50", "--s", "2", "--time-limit", "-1")
    assert "--time-limit = -1.0 must be a positive number of seconds" in line


def test_list_never_cuts_a_word(capsys):
    # "Metropolis-Hasti…", "propose-test-rel…", "enum_limit=20000…": rich's ellipsis hid text
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "Metropolis-Hastin" in out


def test_plot_bad_column_lists_the_constant_columns_too(eps_db, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    # "columns: method_label, rho, epsilon" although --x n works (n has one value)
    line = one_error(capsys, "plot", str(eps_db), "--x", "nope", "-o", str(tmp_path / "f.png"))
    assert "method_label, rho, epsilon" in line and ", n, p, s," in line


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


def test_retry_flags_say_how_many_rows_they_retry(eps_db, capsys):
    # with nothing to retry the run printed the stored table again without a word
    args = ["compare", "--methods", "exhaustive,bss", "--rho", "0.1,0.5", "--epsilon", "1,8", *TINY,
            "--out", str(eps_db)]
    assert main([*args, "--retry-uncertified", "--retry-failed"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "--retry-uncertified: 0 uncertified result(s) of this run" in err
    assert "--retry-failed: 0 failed result(s) of this run" in err


@pytest.mark.parametrize("param, expected", [
    ("topr.R=inf", "parameter topr.R='inf': expected 'auto' or an integer >= 2"),  # was an OverflowError traceback
    ("topr.R=abc", "parameter topr.R='abc': expected 'auto' or an integer >= 2"),  # was float()'s own text
    ("topr.T=x", "parameter topr.T='x': expected a positive integer or 'inf'"),
    ("topr.enum_limit=many", "parameter topr.enum_limit='many' must be an integer, e.g. topr.enum_limit=2000000"),
    ("topr.node_limit=1.5", "must be an integer"),
])
def test_plugin_parameter_messages_say_what_is_expected(tmp_path, capsys, param, expected):
    line = one_error(capsys, "compare", "--methods", "topr", *TINY, "--param", param, "--out", str(tmp_path / "r.db"))
    assert expected in line and "could not convert" not in line


def test_progress_description_leaves_the_times_whole():
    # on an 80-column terminal the long description made rich cut the times: "0:… eta 0:0…"
    import io
    from types import SimpleNamespace

    from dpbench.cli.progress import RunProgress

    con = Console(width=80, force_terminal=True, file=io.StringIO())
    task = SimpleNamespace(setting={"generator": "toeplitz", "n": 800, "p": 20, "s": 3, "rho": 0.1}, trial=2)
    with RunProgress(con, 9) as progress:
        progress.event(task, "exhaustive", "draws")
        text = progress.progress.tasks[0].description
        assert text.startswith("toeplitz n=800") and text.endswith("…")
        out = Console(width=80, record=True, file=io.StringIO())
        out.print(progress.progress.make_tasks_table(progress.progress.tasks))
    line = out.export_text().splitlines()[0]
    assert "0/9 0:00:00 eta -:--:-- toeplitz n=800" in line and len(line) <= 80


def test_list_by_kind_and_a_kind_typed_as_a_command(capsys):
    # `dpbench list datasets` was "unrecognized arguments: datasets"
    assert main(["list", "datasets", "losses"]) == 0
    out = capsys.readouterr().out
    assert "khan" in out and "hinge" in out and "exhaustive" not in out
    assert main(["list", "solver", "--json"]) == 0  # singular accepted
    assert "highs" in capsys.readouterr().out
    line = one_error(capsys, "list", "foo")
    assert "not a kind of plugin" in line and "datasets" in line
    line = one_error(capsys, "datasets")
    assert "`dpbench list datasets`" in line


def test_output_closed_early_is_not_a_traceback():
    # `dpbench list --json | head -2`: BrokenPipeError traceback
    import subprocess
    import sys

    # the reader (true) has left long before dpbench's imports are done: its write meets a closed pipe
    proc = subprocess.run(f"{sys.executable} -m dpbench.cli list --json | true", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_integer_parameters_accept_the_documented_1e8(tmp_path, capsys):
    # docs/user-guide/compare.md and --help: --param exhaustive.limit=1e8 (1e7); int() refused it
    from dpbench.core.params import Param

    assert Param(5, "x").convert("limit", "1e8") == 10**8
    assert Param(5, "x").convert("limit", "2.0") == 2
    for bad in ("2.5", "inf", "nan", "true"):
        with pytest.raises(dpbench.UserInputError, match="must be an integer"):
            Param(5, "x").convert("limit", bad)
    assert main(["compare", "--methods", "exhaustive", *TINY, "--param", "exhaustive.limit=1e8",
                 "--out", str(tmp_path / "r.db")]) == 0


def test_planted_design_too_large_for_exhaustive_is_refused_up_front(tmp_path, capsys):
    # p comes from the design (nci60: 6830 columns), so the up-front size check never ran: every
    # trial became a failed row and the run exited 0
    line = one_error(capsys, "compare", "--methods", "exhaustive", "--generator", "planted", "--design", "nci60",
                     "--s", "3", "--trials", "1", "--draws", "5", "--out", str(tmp_path / "r.db"))
    assert "C(6830, 3)" in line and "exceeds the limit" in line
    assert not (tmp_path / "r.db").exists()


def test_config_parameters_are_named_as_the_file_has_them(tmp_path, capsys):
    # a [params] entry of the file was reported as "--param 'tpor.R=5'"
    cfg = tmp_path / "c.toml"
    cfg.write_text('methods = ["topr"]\n[params]\ntpor = { R = 5 }\n')
    line = one_error(capsys, "compare", "--config", str(cfg), "--out", str(tmp_path / "r.db"))
    assert line.startswith(f"dpbench: error: config {cfg}: parameter 'tpor.R=5': 'tpor' is neither")
    assert line.endswith("did you mean topr.R?")
    line = one_error(capsys, "compare", "--methods", "topr", "--param", "hihgs.node_limit=5", "--out", str(tmp_path / "r.db"))
    assert line.startswith("dpbench: error: --param 'hihgs.node_limit=5'") and "did you mean highs.node_limit?" in line


@pytest.mark.parametrize("args, fragment", [
    (["--rho", "0.1,2"], "parameter toeplitz.rho=2.0 must lie in (-1, 1)"),
    (["--snr", "5,-1"], "parameter toeplitz.snr=-1.0 must lie in (0, inf)"),
    (["--generator", "classification", "--rho", "1"], "parameter classification.rho=1.0 must lie in (-1, 1)"),
    (["--generator", "sis-w1", "--param", "sis-w1.noise_var=-1"], "must lie in [0, inf)"),
])
def test_generator_parameters_are_checked_before_any_trial(tmp_path, capsys, args, fragment):
    # --rho 0.1,2 ran every rho = 0.1 trial and refused 2 only when its first trial was generated
    line = one_error(capsys, "compare", "--methods", "dpsis", "--trials", "1", "--draws", "5", *args,
                     "--out", str(tmp_path / "r.db"))
    assert fragment in line
    assert not (tmp_path / "r.db").exists()
