"""The tidy results frame, exports, intervals, tables, plots, progress lines and the HTML report."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import dpbench  # noqa: E402
from dpbench.cli.main import main  # noqa: E402
from dpbench.bench.results.frame import method_label  # noqa: E402
from dpbench.bench.results.summary import bootstrap_interval, display_columns, rate_interval, summary_frame  # noqa: E402


@pytest.fixture(scope="module")
def run_db(tmp_path_factory):
    """Two ρ values, two n, two ε, one method with a non-default parameter: 2*2*2*2 trials*rows."""
    db = tmp_path_factory.mktemp("frame") / "r.db"
    assert main(["compare", "--methods", "exhaustive", "--n", "60,120", "--rho", "0.1,0.7", "--epsilon", "1,8",
                 "--p", "8", "--trials", "2", "--draws", "20", "--param", "exhaustive.chunk=1000",
                 "--out", str(db)]) == 0
    return db


def test_load_results_one_column_per_field(run_db):
    df = dpbench.load_results(run_db)
    assert len(df) == 2 * 2 * 2 * 2  # rho x n x trials x epsilon
    assert sorted(df["rho"].unique()) == [0.1, 0.7]
    assert df["rho"].dtype == np.float64 and str(df["n"].dtype) == "Int64"
    assert set(df["param.chunk"]) == {"1000"} and set(df["lam"]) == {10.0}
    assert set(df["method_label"]) == {"exhaustive(chunk=1000)"}
    assert not df.duplicated(["rho", "n", "trial", "epsilon"]).any()
    # successes are the trial's exact recoveries: recovery * draws, an integer in [0, draws]
    assert ((df["successes"] >= 0) & (df["successes"] <= 20)).all()
    np.testing.assert_allclose(df["successes"].astype(float), df["recovery"] * 20)
    # preparation is charged to one ε row; the per-trial column carries it on every row
    for _, g in df.groupby(["rho", "n", "trial"]):
        assert g["trial_prepare_seconds"].nunique() == 1
        assert g["trial_prepare_seconds"].iloc[0] == pytest.approx(g["prepare_seconds"].sum())


def test_method_label_shows_only_non_default_parameters():
    assert method_label("exhaustive", {"limit": "20000000"}) == "exhaustive"
    assert method_label("exhaustive", {"chunk": "1000", "limit": 20_000_000}) == "exhaustive(chunk=1000)"
    assert method_label("not-installed", {"a": 1}) == "not-installed(a=1)"


@pytest.mark.parametrize("suffix", ["csv", "json", "parquet"])
def test_export_formats_round_trip(run_db, tmp_path, suffix):
    if suffix == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"rows.{suffix}"
    assert main(["export", str(run_db), "-o", str(out)]) == 0
    back = {"csv": pd.read_csv, "json": lambda f: pd.read_json(f, precise_float=True),
            "parquet": pd.read_parquet}[suffix](out)
    df = dpbench.load_results(run_db)
    assert len(back) == len(df) and sorted(back["rho"].unique()) == [0.1, 0.7]
    np.testing.assert_allclose(back.sort_values("key")["recovery"], df.sort_values("key")["recovery"])


def test_export_unknown_format_is_one_line_error(run_db, tmp_path, capsys):
    assert main(["export", str(run_db), "-o", str(tmp_path / "x.xlsx")]) == 2
    assert "unknown export format 'xlsx'" in capsys.readouterr().err


def test_wilson_and_clopper_pearson_closed_forms():
    # Wilson (1927): (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    z = 1.959963984540054
    for k, n in ((0, 300), (7, 20), (20, 20)):
        p = k / n
        centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        lo, hi = rate_interval(k, n, "wilson")
        assert lo == pytest.approx(max(0.0, (centre - half) / (1 + z * z / n)), abs=1e-12)
        assert hi == pytest.approx(min(1.0, (centre + half) / (1 + z * z / n)), abs=1e-12)
    # Clopper-Pearson with no success: [0, 1 - (alpha/2)^(1/n)]
    lo, hi = rate_interval(0, 50, "clopper-pearson")
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 50), rel=1e-9)
    assert all(math.isnan(v) for v in rate_interval(0, 0))


def test_bootstrap_interval_covers_the_mean_and_is_degenerate_only_for_equal_values():
    rng = np.random.default_rng(3)
    v = rng.normal(1.0, 1.0, 200)
    lo, hi = bootstrap_interval(v)
    # the percentile interval is close to mean ± 1.96 se for 200 normal values
    se = v.std(ddof=1) / math.sqrt(v.size)
    assert lo < v.mean() < hi and (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert bootstrap_interval([0.0, 0.0, 0.0]) == (0.0, 0.0)


def test_summary_never_merges_settings_and_zero_rate_has_a_positive_upper_bound(run_db):
    sf = summary_frame(dpbench.load_results(run_db))
    assert len(sf) == 2 * 2 * 2  # rho x n x epsilon, one method
    cols = display_columns(sf)
    assert {"rho", "n", "epsilon", "method_label"} <= set(cols) and "lam" not in cols
    assert (sf["draws_total"] == 2 * 20).all()
    assert (sf["recovery_hi"] > 0).all() and (sf["recovery_lo"] <= sf["recovery"]).all()


def test_tables_fit_100_columns_and_show_rho(run_db):
    from rich.console import Console

    from dpbench.cli.tables import markdown_table, rich_table

    sf = summary_frame(dpbench.load_results(run_db))
    con = Console(width=100, record=True, file=open("/dev/null", "w"))
    con.print(rich_table(sf))
    text = con.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    # the label folds (exhaustive(chunk=/1000)) so that the guarantee is never cropped
    assert "ρ" in text and "0.7" in text and "exhaustive(" in text and "1000)" in text
    assert text.count("pure ε=1") == 4 and text.count("pure ε=8") == 4
    md = markdown_table(sf).splitlines()
    assert len(md) == 2 + 8 and "| ρ |" in md[0]


def test_plot_facets_and_bad_column(run_db, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "f.png"
    assert main(["plot", str(run_db), "--x", "n", "--hue", "method", "--col", "rho", "--logy", "-o", str(png)]) == 0
    assert "(2 panels)" in capsys.readouterr().err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # epsilon varies and is not faceted: it must be in the line labels, not merged
    from dpbench.cli.plot import make_figure

    fig, n = make_figure(summary_frame(dpbench.load_results(run_db)), x="n", col="rho")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert n == 2 and sorted(labels) == ["exhaustive(chunk=1000) · epsilon=1", "exhaustive(chunk=1000) · epsilon=8"]
    assert main(["plot", str(run_db), "--x", "nope", "-o", str(png)]) == 2
    assert "--x 'nope' is not a column" in capsys.readouterr().err


def test_html_report_is_self_contained(run_db, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    assert main(["report", str(run_db), "--html", str(out)]) == 0
    page = out.read_text()
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)  # nothing from the network
    assert page.count('src="data:image/png;base64,') >= 2  # recovery vs n and vs epsilon
    assert "<th>ρ</th>" in page and dpbench.__version__ in page and "generator toeplitz" in page


def test_one_log_line_per_finished_trial_off_terminal(tmp_path, capsys):
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "exhaustive", "--n", "60,80", "--p", "8", "--trials", "3", "--draws", "5",
                 "--out", str(db)]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "dpbench: trial" in ln]
    assert len(lines) == 6 and lines[-1].count("trial 6/6 done") == 1
    assert "n=80" in lines[-1] and "remaining" in lines[-1]


def test_json_export_keeps_diagnostics_as_columns(run_db, tmp_path):
    out = tmp_path / "rows.json"
    assert main(["export", str(run_db), "-o", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert all("rho" in r and "method_label" in r for r in rows)


def test_store_outcome_columns_never_split_a_summary_but_a_guarantee_does(run_db, monkeypatch):
    from dpbench.bench.results.frame import frame_from_rows
    from dpbench.bench.results.store import ResultStore

    store = ResultStore(run_db, readonly=True)
    rows = store.rows()
    store.close()
    # an outcome column declared later (different in every row) must not create groups
    from dpbench.bench.results import schema

    extra = [{**r, "recovery_detail": i} for i, r in enumerate(rows)]
    monkeypatch.setattr(schema, "COLUMNS", schema.COLUMNS + (schema.Column("recovery_detail", "real", "test"),))
    assert len(summary_frame(frame_from_rows(extra))) == 8
    monkeypatch.undo()
    # rows with and without a privacy guarantee are never pooled
    half = [{**r, "guarantee": "pure" if r["trial"] == 0 else "none"} for r in rows]
    sf = summary_frame(frame_from_rows(half))
    assert len(sf) == 16 and set(sf["trials"]) == {1}


def test_plot_refuses_a_non_numeric_x(run_db, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["plot", str(run_db), "--x", "method", "-o", str(tmp_path / "f.png")]) == 2
    assert "is not numeric" in capsys.readouterr().err


def test_live_progress_names_the_current_setting_and_method():
    from rich.console import Console

    from dpbench.cli.progress import RunProgress
    from dpbench.bench.worker import TrialTask

    con = Console(force_terminal=True, width=160, record=True, file=open("/dev/null", "w"))
    task = TrialTask({"generator": "toeplitz", "n": 200, "rho": 0.7}, 1, [("topr", [1.0])])
    with RunProgress(con, 2) as prog:
        prog.event(task, "topr", "prepare")
        prog.progress.refresh()
        prog.task_done([])
    text = con.export_text()
    assert "toeplitz n=200 rho=0.7 · trial 1 · topr prepare" in text and "eta" in text and "1/2" in text


def test_dask_local_cluster_has_jobs_workers(monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    from dpbench.bench.backends import dask_results

    seen = {}

    class Stop(Exception):
        pass

    def fake_cluster(**kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(distributed, "LocalCluster", fake_cluster)
    with pytest.raises(Stop):
        list(dask_results(None, [], None, jobs=3))
    assert seen["n_workers"] == 3 and seen["threads_per_worker"] == 1


def test_the_frame_shows_the_generator_defaults_a_setting_does_not_store(tmp_path):
    """A default run stores only the parameters given (keys stay put), yet the frame and the table
    footer name the design that ran: the generator's declared rho and SNR."""
    from dpbench.bench.registry import registry

    db = str(tmp_path / "d.db")
    assert main(["compare", "--methods", "exhaustive", "--n", "60", "--p", "6", "--trials", "1", "--draws", "2",
                 "--out", db]) == 0
    df = dpbench.load_results(db)
    params = registry().generator("toeplitz").params
    assert df["rho"].iloc[0] == params["rho"].default and df["snr"].iloc[0] == params["snr"].default


def test_a_trial_without_a_reference_adds_no_draws_to_the_rate(run_db):
    """A trial whose bss reference is uncertified has recovery and F1 None (issue 22): the pooled
    rate, its interval and the F1 mean are those of the other trials, not diluted by zeros."""
    from dpbench.bench.results.frame import frame_from_rows
    from dpbench.bench.results.store import ResultStore

    store = ResultStore(run_db, readonly=True)
    rows = store.rows()
    store.close()
    kept = [r for r in rows if r["trial"] == 1]
    unscored = [{**r, "recovery": None, "f1": None} if r["trial"] == 0 else r for r in rows]
    want, got = summary_frame(frame_from_rows(kept)), summary_frame(frame_from_rows(unscored))
    assert len(got) == len(want) == 8 and set(got["trials"]) == {2}
    for col in ("recovery", "recovery_lo", "recovery_hi", "f1"):
        assert np.allclose(got[col].to_numpy(float), want[col].to_numpy(float)), col
