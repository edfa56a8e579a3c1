"""Every bad input ends with one line naming the problem and the fix and exit status 2.

The cases come from trying the command line as a new user would (issue 14): config values of
the wrong type, paths that are directories or cannot be written, user text that looks like
rich markup, sizes that cannot fit in memory, locked and foreign databases, plugins that raise
or exit during a trial, and Ctrl-C at start-up. Each test checks the exit status, that stderr
holds exactly one error line and no traceback, and what the line says.
"""

import sqlite3

import numpy as np
import pytest

import dpbench
from dpbench.api import Draws, Selector
from dpbench import UserInputError
from dpbench.cli.main import main
from helpers.cli import TINY, one_error, run, sha256

SMALL = ["--methods", "exhaustive", *TINY]




@pytest.mark.parametrize("body, fragment", [
    ('trials = "abc"', 'trials = "abc" must be an integer'),
    ('b_x = "half"', 'b_x = "half" must be a number'),
    ("s = 2.5", "s = 2.5 must be an integer or log"),
    ('backend = "spark"', 'backend = "spark" must be one of serial, dask'),
    ("trials = [1, 2]", "trials = [1, 2] takes one value"),
    ("epsilon = true", "must be a number, not true/false"),
    ('sensitivity = "loose"', "must be one of tight, paper"),
])
def test_config_values_are_checked_like_the_command_line(tmp_path, capsys, body, fragment):
    cfg = tmp_path / "run.toml"
    cfg.write_text('methods = "exhaustive"\n' + body + "\n")
    line = one_error(capsys, "compare", "--config", str(cfg), "--out", str(tmp_path / "r.db"))
    assert fragment in line
    assert not (tmp_path / "r.db").exists()  # refused before any work


def test_config_that_is_a_directory(tmp_path, capsys):
    assert "is a directory" in one_error(capsys, "compare", "--config", str(tmp_path))


@pytest.mark.parametrize("name", ["[/bold]", "[red]x", "a[b]c"])
def test_user_text_is_not_rich_markup(tmp_path, capsys, name):
    line = one_error(capsys, "compare", "--methods", name, "--out", str(tmp_path / "r.db"))
    assert f"unknown method {name!r}" in line


def test_data_path_with_brackets_is_named_literally(tmp_path, capsys):
    path = tmp_path / "data[1].csv"
    line = one_error(capsys, "compare", "--methods", "exhaustive", "--data", str(path), "--target", "y",
                     "--out", str(tmp_path / "r.db"))
    assert "data[1].csv" in line


def test_output_paths_are_checked_before_the_run(tmp_path, capsys):
    line = one_error(capsys, "compare", *SMALL, "--json", str(tmp_path), "--out", str(tmp_path / "r.db"))
    assert "--json" in line and "is a directory" in line
    assert not (tmp_path / "r.db").exists()
    line = one_error(capsys, "compare", *SMALL, "--json", str(tmp_path / "no" / "s.json"),
                     "--out", str(tmp_path / "r.db"))
    assert "does not exist" in line
    assert "is a directory" in one_error(capsys, "compare", *SMALL, "--out", str(tmp_path))


def test_out_under_a_file_names_the_os_error(tmp_path, capsys):
    line = one_error(capsys, "compare", *SMALL, "--out", "/dev/null/sub/r.db")
    assert "Not a directory" in line or "not a directory" in line.lower()


def test_export_to_a_directory(tmp_path, capsys):
    db = tmp_path / "r.db"
    assert run(capsys, "compare", *SMALL, "--out", str(db))[0] == 0
    assert "is a directory" in one_error(capsys, "export", str(db), "-o", str(tmp_path))
    assert "is a directory" in one_error(capsys, "report", str(db), "--markdown", str(tmp_path))


def test_a_size_that_cannot_fit_is_refused_before_allocating(tmp_path, capsys):
    line = one_error(capsys, "compare", "--methods", "dpsis", "--p", "10000000", "--n", "800",
                     "--out", str(tmp_path / "r.db"))
    assert "GiB" in line and "--p" in line


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_jobs_must_be_positive_or_minus_one(tmp_path, capsys, jobs):
    assert "--jobs" in one_error(capsys, "compare", *SMALL, "--jobs", jobs, "--out", str(tmp_path / "r.db"))


def test_jobs_minus_one_means_every_core(tmp_path, capsys):
    assert run(capsys, "compare", *SMALL, "--jobs", "-1", "--out", str(tmp_path / "r.db"))[0] == 0


def test_foreign_sqlite_file_is_refused_untouched(tmp_path, capsys):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE people (name TEXT)")
    con.execute("INSERT INTO people VALUES ('ada')")
    con.commit()
    con.close()
    before = sha256(db)
    for args in (("compare", *SMALL, "--out", str(db)), ("report", str(db)), ("export", str(db), "-o",
                                                                                 str(tmp_path / "x.csv"))):
        line = one_error(capsys, *args)
        assert "another program's SQLite database" in line and "people" in line
    assert sha256(db) == before
    assert not (tmp_path / "other.db-wal").exists()


def test_a_file_that_is_not_sqlite(tmp_path, capsys):
    db = tmp_path / "notes.db"
    db.write_text("hello " * 200)
    assert "not an SQLite file" in one_error(capsys, "report", str(db))


def test_an_empty_file_is_not_called_missing(tmp_path, capsys):
    db = tmp_path / "empty.db"
    db.touch()
    line = one_error(capsys, "report", str(db))
    assert "is an empty file" in line and "does not exist" not in line


def test_unknown_loss_lists_the_known_losses(tmp_path, capsys):
    line = one_error(capsys, "compare", *SMALL, "--loss", "nonsense", "--out", str(tmp_path / "r.db"))
    assert "known losses: " in line and "least-squares" in line


def test_locked_database_is_waited_for_then_refused(tmp_path, capsys, monkeypatch):
    import dpbench.bench.results.store as store

    db = tmp_path / "r.db"
    assert run(capsys, "compare", *SMALL, "--out", str(db))[0] == 0
    monkeypatch.setattr(store, "LOCK_WAIT_SECONDS", 0.5)
    holder = sqlite3.connect(db)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing
    try:
        code, err = run(capsys, "compare", *SMALL, "--trials", "2", "--out", str(db))
    finally:
        holder.rollback()
        holder.close()
    assert code == 2
    assert "waiting for" in err and "another process holds its lock" in err
    lines = [ln for ln in err.splitlines() if ln.startswith("dpbench: error:")]
    assert len(lines) == 1 and "stayed locked by another process" in lines[0]
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1  # trial 0 kept, nothing lost
    con.close()


class _Raises(Selector):
    name = "test-raises"
    dp_type = "pure"
    exc: BaseException = UserInputError("plugin says the data are bad")

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        raise type(self).exc


class _Exits(_Raises):
    name = "test-exits"
    exc = SystemExit(0)


class _Fine(Selector):
    name = "test-fine"
    dp_type = "pure"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(np.tile(np.arange(trial.s), (n_draws, 1)))


@pytest.fixture
def test_selectors(register_selectors):
    register_selectors(_Raises, _Exits, _Fine)


@pytest.mark.parametrize("method", ["test-raises", "test-exits"])
def test_a_plugin_raising_or_exiting_during_a_trial_is_that_trials_failure(tmp_path, capsys, test_selectors,
                                                                            method):
    db = tmp_path / "r.db"
    args = ["compare", "--methods", f"{method},test-fine", "--p", "8", "--n", "60", "--s", "2", "--trials", "2",
            "--draws", "3", "--out", str(db)]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0 and "dpbench compare" in out  # the table is printed
    assert "2 failed result(s)" in err
    con = sqlite3.connect(db)
    status = dict(con.execute("SELECT method, GROUP_CONCAT(status) FROM results GROUP BY method").fetchall())
    con.close()
    assert status == {method: "failed,failed", "test-fine": "ok,ok"}
    assert main(args) == 0  # a resume does not abort at the same trial
    capsys.readouterr()


def test_ctrl_c_at_start_up_is_a_clean_exit_130(monkeypatch, capsys):
    import builtins

    import dpbench.cli as cli

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name in ("main", "dpbench.cli.main") or (args and args[2] and "main" in (args[2] or ())):
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "dpbench.cli.main", raising=False)
    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as exc:
        cli.run()
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert exc.value.code == 130
    assert capsys.readouterr().err.strip() == "interrupted"


def test_ctrl_c_while_parsing_is_a_clean_exit_130(monkeypatch, capsys):
    import dpbench.cli.main as cli_main

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "build_parser", interrupted)
    assert cli_main.main(["list"]) == 130


@pytest.mark.parametrize("solver", ["highs", "pyomo", "gurobi"])
def test_lambda_zero_with_an_outer_approximation_backend_fails_before_the_first_trial(tmp_path, capsys, solver):
    line = one_error(capsys, "compare", "--methods", "topr", *SMALL[2:], "--lam", "0", "--solver", solver,
                     "--out", str(tmp_path / "r.db"))
    assert "needs a ridge penalty lam > 0" in line and "misocp" in line
    assert not (tmp_path / "r.db").exists()


def test_plot_without_matplotlib_is_one_line(tmp_path, capsys, monkeypatch):
    # a plain `pip install .` has no matplotlib: plot must say how to get it, not raise
    import sys

    db = tmp_path / "r.db"
    assert run(capsys, "compare", *SMALL, "--out", str(db))[0] == 0
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    line = one_error(capsys, "plot", str(db), "--x", "n", "-o", str(tmp_path / "f.png"))
    assert "pip install 'dpbench[plot]'" in line


def test_a_method_named_twice_is_named_as_such(tmp_path, capsys):
    line = one_error(capsys, "compare", "--methods", "exhaustive,exhaustive", "--p", "8", "--n", "60", "--s", "2",
                     "--out", str(tmp_path / "r.db"))
    assert "--methods names exhaustive more than once" in line and "--param values" not in line


def test_a_run_too_large_to_plan_is_refused_at_once(tmp_path, capsys):
    # planning keys every result first: 1e11 trials hashed for hours before any message
    line = one_error(capsys, "compare", "--methods", "dpsis", "--p", "100", "--s", "2", "--n", "200",
                     "--trials", "100000000000", "--out", str(tmp_path / "r.db"))
    assert "100,000,000,000 results" in line and "--trials" in line
    assert not (tmp_path / "r.db").exists()


def test_draws_that_cannot_fit_are_refused_before_the_run(tmp_path, capsys):
    # they used to become one MemoryError row per trial and exit status 0
    line = one_error(capsys, "compare", "--methods", "dpsis", "--p", "100", "--s", "2", "--n", "200",
                     "--trials", "1", "--draws", "100000000000", "--out", str(tmp_path / "r.db"))
    assert "--draws" in line and "GiB" in line


def test_plot_to_an_unknown_image_format(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    db = tmp_path / "r.db"
    assert run(capsys, "compare", *SMALL, "--out", str(db))[0] == 0
    line = one_error(capsys, "plot", str(db), "--x", "n", "-o", str(tmp_path / "f.nonsense"))
    assert "cannot write .nonsense files" in line and "png" in line


def test_bss_checks_the_size_before_generating(capsys):
    line = one_error(capsys, "bss", "--n", "10000000000", "--p", "100", "--s", "2")
    assert "GiB" in line and "--p" in line


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
