"""What the command line prints: summary tables at any terminal width, the guarantee column and
its preprocessing mark, ``list``, ``plot`` messages, retry notices and progress lines.

Each test reproduces a problem found by running the documented commands as a new user: what the
user saw before the fix is in the comment, and the test fails on it.
"""

import os

import pytest
from rich.console import Console

import dpbench
from dpbench.cli.main import main
from dpbench.cli.tables import print_table, rich_table
from dpbench.bench.results.summary import display_columns, summary_frame
from helpers.cli import TINY, one_error


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


def test_list_never_cuts_a_word(capsys):
    # "Metropolis-Hasti…", "propose-test-rel…", "enum_limit=20000…": rich's ellipsis hid text
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "Metropolis-Hastin" in out


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


def test_plot_bad_column_lists_the_constant_columns_too(eps_db, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    # "columns: method_label, rho, epsilon" although --x n works (n has one value)
    line = one_error(capsys, "plot", str(eps_db), "--x", "nope", "-o", str(tmp_path / "f.png"))
    assert "method_label, rho, epsilon" in line and ", n, p, s," in line


def test_retry_flags_say_how_many_rows_they_retry(eps_db, capsys):
    # with nothing to retry the run printed the stored table again without a word
    args = ["compare", "--methods", "exhaustive,bss", "--rho", "0.1,0.5", "--epsilon", "1,8", *TINY,
            "--out", str(eps_db)]
    assert main([*args, "--retry-uncertified", "--retry-failed"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "--retry-uncertified: 0 uncertified result(s) of this run" in err
    assert "--retry-failed: 0 failed result(s) of this run" in err


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


def test_output_closed_early_is_not_a_traceback():
    # `dpbench list --json | head -2`: BrokenPipeError traceback
    import subprocess
    import sys

    # the reader (true) has left long before dpbench's imports are done: its write meets a closed pipe
    proc = subprocess.run(f"{sys.executable} -m dpbench.cli list --json | true", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_no_preprocessing_note_when_no_row_carries_the_mark(tmp_path, capsys):
    # gravier's table explained "†" while every row said "none: ...", so no row carried it
    db = tmp_path / "n.db"
    assert main(["compare", "--methods", "bss", "--dataset", "diabetes", "--s", "2", "--trials", "1",
                 "--draws", "5", "--solver", "enumerate", "--out", str(db)]) == 0
    out = capsys.readouterr().out
    assert "none: not private" in " ".join(out.split())
    assert "†" not in out and "NOT differentially private" not in out
