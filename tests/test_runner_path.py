"""One selector-run path (the runner and dpbench.select) and one instance of each plugin per run."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import dpbench
from dpbench.core.contracts.selector import Diagnostic, Draws, Selector
from dpbench.cli.main import main
from dpbench.bench.registry import Entry, registry
from dpbench.bench import selection
from dpbench.bench.selection import SelectorRun, check_supports
from dpbench.bench.registry import PluginInstances


def _count_inits(monkeypatch, cls, counts, key):
    init = cls.__init__

    def counted(self, *args, **kwargs):
        counts[key] = counts.get(key, 0) + 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", counted)


def test_each_plugin_is_built_once_per_run(tmp_path, monkeypatch):
    reg = registry()
    counts = {}
    for kind, name in (("selector", "exhaustive"), ("selector", "bss"), ("generator", "toeplitz"),
                       ("solver", "highs")):
        _count_inits(monkeypatch, getattr(reg, kind)(name), counts, name)
    monkeypatch.setattr(selection, "_RUN_INSTANCES", {})
    # 2 data settings x 3 trials x 2 methods x 2 epsilons; validation included
    assert main(["compare", "--methods", "exhaustive,bss", "--p", "7", "--n", "40,50", "--s", "2", "--trials", "3",
                 "--draws", "2", "--epsilon", "1,2", "--out", str(tmp_path / "r.db")]) == 0
    assert counts == {"exhaustive": 1, "bss": 1, "toeplitz": 2, "highs": 1}


class _BadShape(Selector):
    name = "test-bad-shape"
    dp_type = "pure"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(np.zeros((n_draws, trial.s + 1), dtype=np.int64))


class _Repeats(_BadShape):
    name = "test-repeats"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(np.zeros((n_draws, trial.s), dtype=np.int64))


@pytest.fixture
def broken(monkeypatch):
    entries = registry().entries["selector"]
    for cls in (_BadShape, _Repeats):
        monkeypatch.setitem(entries, cls.name, Entry(cls.name, cls, "tests", "tests"))


@pytest.mark.parametrize("name, message", [("test-bad-shape", "supports of shape"),
                                           ("test-repeats", "repeated or out-of-range")])
def test_select_and_compare_check_the_supports_alike(tmp_path, broken, name, message):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 6)), rng.normal(size=30)
    with pytest.raises(RuntimeError, match=message):  # the Python API used to sort them unchecked
        dpbench.select(name, X, y, s=2, epsilon=1.0, random_state=0)
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", name, "--p", "6", "--n", "30", "--s", "2", "--trials", "1",
                 "--draws", "2", "--out", str(db)]) == 0
    con = sqlite3.connect(db)
    (status, error), = con.execute("SELECT status, error FROM results").fetchall()
    con.close()
    assert status == "failed" and message in error


def test_select_is_the_runner_path_on_the_same_trial_and_streams():
    """SelectorRun on a trial gives select's output bit for bit (same streams, same checks)."""
    from dpbench.core.problem import Problem
    from dpbench.core.seeding import rng_for
    from dpbench.bench.trial import PrivacySetup, Trial

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, 7)), rng.normal(size=40)
    res = dpbench.select("exhaustive", X, y, s=2, epsilon=2.0, random_state=11, draws=5)
    trial = Trial.from_problem(Problem(X, y, 2, name="array"), PrivacySetup(), instances=PluginInstances())
    run = SelectorRun.prepare(registry().selector("exhaustive")(), trial, rng_for(11, "prepare", "exhaustive"))
    sel = run.draw(2.0, 5, rng_for(11, "draw", "exhaustive"), reference=res.support)
    np.testing.assert_array_equal(sel.supports, res.supports)
    assert sel.log_prob == res.log_prob and sel.guarantee == res.guarantee == "pure ε=2"
    assert sel.status == "ok"


def test_check_supports_sorts_valid_rows():
    S = check_supports([[3, 1], [0, 2]], 2, 2, 4, "m")
    assert S.dtype == np.int64 and S.tolist() == [[1, 3], [0, 2]]
    with pytest.raises(RuntimeError, match="out-of-range"):
        check_supports([[3, 4]], 1, 2, 4, "m")


class _Declares(Selector):
    name = "test-declares"
    dp_type = "pure"
    diagnostics = {"level": Diagnostic("mean", "lvl", "ε as seen by draw"),
                   "odd": Diagnostic("count", "odd", "the first support starts at an odd index")}

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        S = np.sort(np.stack([rng.choice(trial.p, trial.s, replace=False) for _ in range(n_draws)]), axis=1)
        return Draws(S, diagnostics={"level": epsilon, "odd": bool(S[0, 0] % 2), "other": 1.0})


def test_summaries_aggregate_what_a_selector_declares(tmp_path, monkeypatch):
    from dpbench.cli.tables import dp_text
    from dpbench.bench.results.summary import summary_frame

    monkeypatch.setitem(registry().entries["selector"], _Declares.name,
                        Entry(_Declares.name, _Declares, "tests", "tests"))
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "test-declares", "--p", "6", "--n", "30", "--s", "2", "--trials", "3",
                 "--draws", "2", "--epsilon", "1,4", "--out", str(db)]) == 0
    df = dpbench.load_results(db)
    sf = summary_frame(df)
    assert sf["diag.level"].tolist() == [1.0, 4.0]  # the mean over trials of what draw reported
    for eps, d in zip((1.0, 4.0), sf.to_dict("records")):
        odd = df.loc[df["epsilon"] == eps, "diag.odd"]
        assert d["diag.odd"] == f"{int(odd.sum())}/3"
        assert d["diagnostics"] == f"lvl {eps:.3g}; odd {int(odd.sum())}/3"
        d.pop("guarantee")  # a database without guarantees: the DP column shows the diagnostics
        assert dp_text(d) == f"pure (lvl {eps:.3g}; odd {int(odd.sum())}/3)"
    assert "diag.other" not in sf  # undeclared: stored, not summarised


def test_the_host_names_no_plugin_diagnostic():
    """Summaries and tables learn diagnostics from the declarations, never by name."""
    from pathlib import Path

    root = Path(dpbench.__file__).parent
    host = [p for d in ("results", "cli", "evaluation", "runner") for p in (root / d).rglob("*.py")]
    reg = registry()
    for name in reg.names("selector"):
        for diag in reg.selector(name).diagnostics:
            for path in host:
                assert diag not in path.read_text(encoding="utf-8"), (diag, path)
