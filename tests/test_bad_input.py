"""Every bad input ends with one line naming the problem and the fix and exit status 2.

The cases come from trying the command line as a new user would (issue 14): config values of
the wrong type, paths that are directories or cannot be written, user text that looks like
rich markup, sizes that cannot fit in memory, locked and foreign databases, plugins that raise
or exit during a trial, and Ctrl-C at start-up. Each test checks the exit status, that stderr
holds exactly one error line and no traceback, and what the line says.
"""

import hashlib
import sqlite3

import numpy as np
import pytest

from dpbench.api import Draws, Selector
from dpbench import UserInputError
from dpbench.cli.main import main
from dpbench.bench.registry import Entry, registry

SMALL = ["--methods", "exhaustive", "--p", "8", "--n", "60", "--s", "2", "--trials", "1", "--draws", "5"]


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("dpbench: warning")
            and not ln.startswith("dpbench: waiting")]


def run(capsys, *args) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def one_error(capsys, *args) -> str:
    code, err = run(capsys, *args)
    lines = error_lines(err)
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("dpbench: error:"), err
    return lines[0]


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


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_foreign_sqlite_file_is_refused_untouched(tmp_path, capsys):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE people (name TEXT)")
    con.execute("INSERT INTO people VALUES ('ada')")
    con.commit()
    con.close()
    before = _sha(db)
    for args in (("compare", *SMALL, "--out", str(db)), ("report", str(db)), ("export", str(db), "-o",
                                                                                 str(tmp_path / "x.csv"))):
        line = one_error(capsys, *args)
        assert "another program's SQLite database" in line and "people" in line
    assert _sha(db) == before
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
def test_selectors(monkeypatch):
    entries = registry().entries["selector"]
    for cls in (_Raises, _Exits, _Fine):
        monkeypatch.setitem(entries, cls.name, Entry(cls.name, cls, "tests", "tests"))


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
