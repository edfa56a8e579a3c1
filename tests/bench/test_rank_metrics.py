"""TOP / GREAT / GOOD (swope2024 section 5, Figure 8) and the per-data-set sparsity rule s = log.

The metrics are checked on hand-built rankings with exact expected values and against an
independent set-based reading of the definitions; the rule against floor(ln p) at the
integers around e^k.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpbench.core.errors import UserInputError
from dpbench.bench.evaluation.metrics import rank_metrics, rank_positions, support_metrics
from dpbench.bench.evaluation.reference import lasso_grid, lasso_penalties, lasso_ranking, ranking_of, top_s
from dpbench.bench.config.options import OptionTypeError, resolve_sparsity, to_sparsity
from dpbench.bench.registry import PluginInstances


def _places_to_support(ranking, places):
    """Features at the given 1-based places of ``ranking``."""
    return [int(ranking[q - 1]) for q in places]


@pytest.fixture
def ranking():
    # a ranking that is not the identity, so a metric that ignores it fails
    return np.random.default_rng(7).permutation(400)


@pytest.mark.parametrize("k, places, expected", [
    # k = 10: GREAT needs the top 1 and everything within the top 11; GOOD the top 1, within the top 15
    (10, range(1, 11), (1, 1, 1)),
    (10, [*range(1, 10), 11], (0, 1, 1)),
    (10, [*range(1, 10), 12], (0, 0, 1)),
    (10, [1, *range(3, 12)], (0, 1, 1)),
    (10, range(2, 12), (0, 0, 0)),             # the top-1 is missing: neither GREAT nor GOOD
    (10, [1, *range(7, 16)], (0, 0, 1)),       # worst place 15 = 3k/2
    (10, [1, *range(8, 17)], (0, 0, 0)),       # worst place 16 > 3k/2
    # k = 5 (< 10): floor(11k/10) = k, so GREAT is TOP; GOOD: top 1, within floor(7.5) = 7
    (5, [1, 2, 3, 4, 6], (0, 0, 1)),
    (5, [1, 2, 3, 4, 7], (0, 0, 1)),
    (5, [1, 2, 3, 4, 8], (0, 0, 0)),
    (5, [2, 3, 4, 5, 6], (0, 0, 0)),
    # k = 7 (Figure 7's k on alon/khan): GOOD window floor(10.5) = 10
    (7, [1, 2, 3, 4, 5, 6, 10], (0, 0, 1)),
    (7, [1, 2, 3, 4, 5, 6, 11], (0, 0, 0)),
    # the paper's example, k = 200: the top 20 and the other 180 from the top 220
    (200, [*range(1, 21), *range(41, 221)], (0, 1, 1)),
    (200, [*range(1, 21), *range(41, 220), 221], (0, 0, 1)),
    (200, [*range(1, 20), *range(40, 221)], (0, 0, 1)),   # only the top 19
    (200, [1, 2, *range(4, 202)], (0, 0, 1)),             # the top 2 = ceil(200/100), worst 201 <= 300
    (200, [1, 2, *range(103, 300), 301], (0, 0, 0)),      # worst 301 > 3k/2
])
def test_hand_built_rankings(ranking, k, places, expected):
    places = list(places)
    assert len(places) == k and len(set(places)) == k
    S = np.array([_places_to_support(ranking, places)])
    m = rank_metrics(S, rank_positions(ranking))
    assert (m["top"][0], m["great"][0], m["good"][0]) == expected


def test_good_head_is_at_least_one_and_grows_with_k(ranking):
    # k = 200: GOOD needs the top ceil(200/100) = 2; the top 1 alone within the top 300 is not GOOD
    places = [1, *range(3, 202)]
    S = np.array([_places_to_support(ranking, places)])
    m = rank_metrics(S, rank_positions(ranking))
    assert (m["great"][0], m["good"][0]) == (0, 0)
    places = [1, 2, *range(102, 300)]
    S = np.array([_places_to_support(ranking, places)])
    assert rank_metrics(S, rank_positions(ranking))["good"][0] == 1


def _by_sets(ranking, support, k):
    """The definitions read on sets: contains the top ceil(k*a) and lies within the top floor(k*b)."""
    sel = set(int(j) for j in support)

    def holds(head, window):
        return set(map(int, ranking[:head])) <= sel and sel <= set(map(int, ranking[:window]))

    return (float(sel == set(map(int, ranking[:k]))),
            float(holds(math.ceil(k / 10), math.floor(11 * k / 10))),
            float(holds(math.ceil(k / 100), math.floor(3 * k / 2))))


@pytest.mark.parametrize("k", [1, 2, 5, 9, 10, 11, 19, 20, 21, 30])
def test_agrees_with_set_definition_near_the_top(k):
    # supports drawn from the top 2k so that every outcome occurs
    rng = np.random.default_rng(k)
    ranking = rng.permutation(3 * k + 5)
    pool = ranking[: 2 * k]
    S = np.array([rng.choice(pool, size=k, replace=False) for _ in range(400)])
    S[0] = ranking[:k]  # TOP at least once
    m = rank_metrics(S, rank_positions(ranking))
    want = np.array([_by_sets(ranking, s, k) for s in S])
    np.testing.assert_array_equal(np.column_stack([m["top"], m["great"], m["good"]]), want)
    assert m["top"][0] == 1
    # GREAT implies GOOD, TOP implies GREAT
    assert np.all(m["great"] >= m["top"]) and np.all(m["good"] >= m["great"])


def test_all_supports_of_a_small_case_exhaustively():
    ranking = np.array([3, 0, 4, 1, 5, 2, 6])
    for S in itertools.combinations(range(7), 3):
        m = rank_metrics(np.array([S]), rank_positions(ranking))
        assert (m["top"][0], m["great"][0], m["good"][0]) == _by_sets(ranking, S, 3)


def test_top_is_exact_recovery_of_the_rankings_top_s(ranking):
    rng = np.random.default_rng(1)
    S = np.array([rng.choice(ranking[:12], size=10, replace=False) for _ in range(200)])
    S[:5] = ranking[:10]
    top = rank_metrics(S, rank_positions(ranking))["top"]
    np.testing.assert_array_equal(top, support_metrics(S, np.sort(ranking[:10]))["exact"])
    assert top.sum() >= 5


def test_rank_positions_rejects_non_permutations():
    with pytest.raises(ValueError):
        rank_positions([0, 0, 2])
    with pytest.raises(ValueError):
        rank_positions([0, 3, 1])
    np.testing.assert_array_equal(rank_positions([2, 0, 1]), [1, 2, 0])


def test_rankings_extend_the_reference_supports():
    from sklearn.linear_model import lasso_path

    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 80))
    y = X[:, :4] @ np.array([3.0, -2.0, 1.5, 1.0]) + 0.5 * rng.normal(size=30)
    v = np.abs(X.T @ y)
    r = ranking_of(v)
    assert sorted(r) == list(range(80)) and np.all(np.diff(v[r]) <= 0)
    np.testing.assert_array_equal(np.sort(r[:6]), top_s(v, 6))
    alphas, coefs, _ = lasso_path(X, y, eps=1e-4, **lasso_grid())
    np.testing.assert_array_equal(lasso_penalties(X, y), alphas)  # the path's own grid, bit for bit
    for s in (1, 4, 7):
        lr = lasso_ranking(X, y, s)
        assert sorted(lr) == list(range(80))
        k = int(np.argmax((coefs != 0).sum(axis=0) >= s))
        # the first s: the s largest |coef| at the first path point with >= s non-zeros
        np.testing.assert_array_equal(np.sort(lr[:s]), top_s(np.abs(coefs[:, k]), s))
        # places s+1 .. 2s: the features entering the (full) path next, in entry order
        entry = [int(np.argmax(coefs[j, k:] != 0)) if np.any(coefs[j, k:] != 0) else 10**6 for j in lr[:2 * s]]
        assert all(a <= b for a, b in zip(entry, entry[1:])) and entry[-1] < 10**6


# --------------------------------------------------------------------------- s = log


@pytest.mark.parametrize("p, k", [(3, 1), (7, 1), (8, 2), (20, 2), (21, 3), (54, 3), (55, 4), (456, 6),
                                  (2000, 7), (2308, 7), (22215, 10), (22283, 10), (22026, 9), (22027, 10)])
def test_log_rule_is_floor_of_natural_log(p, k):
    # e^2 = 7.39, e^3 = 20.09, e^4 = 54.6, e^10 = 22026.47: the integers on both sides
    assert resolve_sparsity("log", p) == k


def test_numeric_s_passes_through_and_rule_parsing():
    assert resolve_sparsity(5, 22283) == 5
    assert to_sparsity("log") == "log" and to_sparsity(" LOG ") == "log"
    assert to_sparsity("5") == 5 and to_sparsity(5.0) == 5
    for bad in ("lg", "2.5", True):
        with pytest.raises(OptionTypeError):
            to_sparsity(bad)
    with pytest.raises(UserInputError):
        resolve_sparsity("log", 2)  # floor(ln 2) = 0


def test_log_rule_per_data_set_keeps_numeric_keys():
    from dpbench.bench.config import COMPARE_DEFAULTS, build_run_config
    from dpbench.bench.keys import row_key

    opts = {**COMPARE_DEFAULTS, "methods": "dpsis", "dataset": ["sorlie", "alon"], "s": ["log", 5],
            "standardize": "dpsis", "reference": "sis"}
    cfg = build_run_config(opts)
    # sorlie p = 456 -> 6, alon p = 2000 -> 7 (Figure 7's k = floor(ln d))
    assert [(d["dataset"], d["s"]) for d in cfg.data] == [("sorlie", 6), ("sorlie", 5), ("alon", 7), ("alon", 5)]
    numeric = build_run_config({**opts, "s": [6, 7]})
    k_log = row_key(cfg, cfg.data[0], 0, "dpsis", 1.0)
    assert k_log == row_key(numeric, numeric.data[0], 0, "dpsis", 1.0)  # s = log on sorlie is s = 6
    # a rule giving a numeric s already listed is one setting, not two
    once = build_run_config({**opts, "dataset": ["alon"], "s": ["log", 7]})
    assert once.data == [{"dataset": "alon", "s": 7, "standardize": "dpsis"}]


def test_log_rule_for_generators_uses_p():
    from dpbench.bench.config import COMPARE_DEFAULTS, build_run_config

    opts = {**COMPARE_DEFAULTS, "methods": "dpsis", "n": [50], "p": [20, 21], "s": ["log"]}
    cfg = build_run_config(opts)
    assert [(d["p"], d["s"]) for d in cfg.data] == [(20, 2), (21, 3)]


def test_log_rule_from_a_toml_config(tmp_path):
    from dpbench.bench.config import load_config

    path = tmp_path / "c.toml"
    path.write_text('methods = ["dpsis"]\ndataset = ["alon"]\ns = "log"\n')
    assert load_config(path)["s"] == ["log"]
    path.write_text('methods = ["dpsis"]\ns = ["log", 5]\n')
    assert load_config(path)["s"] == ["log", 5]
    path.write_text('s = "lg"\n')
    with pytest.raises(UserInputError, match="log"):
        load_config(path)


def test_rows_carry_rank_metrics_for_ranked_references():
    from dpbench.bench.config import COMPARE_DEFAULTS, build_run_config
    from dpbench.bench.run import plan
    from dpbench.bench.worker import run_trial

    opts = {**COMPARE_DEFAULTS, "methods": "dpsis", "dataset": ["sorlie"], "s": [6], "standardize": "dpsis",
            "reference": "sis", "trials": 1, "draws": 200, "epsilon": [5.0, 50.0], "b_x": 1.0, "b_y": 1.0}
    rows = run_trial(cfg := build_run_config(opts), plan(cfg)[0])
    assert [r["status"] for r in rows] == ["ok", "ok"]
    for r in rows:
        # against the SIS ranking, TOP is exact recovery of the SIS top-s; GREAT = TOP for s = 6 < 10
        assert r["rank_top"] == r["recovery"] == r["rank_great"]
        assert r["rank_good"] >= r["rank_great"]
    assert rows[1]["rank_good"] > rows[0]["rank_good"]  # more epsilon, closer to the ranking's top
    # the true support of a simulation ranks nothing beyond s: the metrics are not defined
    sim = build_run_config({**COMPARE_DEFAULTS, "methods": "dpsis", "n": [40], "p": [8], "s": [2], "trials": 1,
                            "draws": 5})
    row = run_trial(sim, plan(sim)[0])[0]
    assert row["rank_top"] is None and row["rank_great"] is None and row["rank_good"] is None
    # the table's legend explains TOP/GREAT/GOOD only where a row has them
    from dpbench.bench.results.frame import frame_from_rows
    from dpbench.bench.results.summary import summary_frame
    from dpbench.cli.tables import footnote

    assert "TOP/GREAT/GOOD" in footnote(summary_frame(frame_from_rows(rows)), "wilson")
    assert "TOP/GREAT/GOOD" not in footnote(summary_frame(frame_from_rows([row])), "wilson")


def test_a_database_from_before_the_rank_columns_is_extended_not_refused(tmp_path):
    import sqlite3

    from dpbench.bench.results.schema import sql_columns
    from dpbench.bench.results.store import ResultStore

    added = ("rank_top", "rank_great", "rank_good")
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE results (" + ", ".join(f"{k} {v}" for k, v in sql_columns().items()
                                                      if k not in added) + ")")
    con.execute("INSERT INTO results (key, method, status) VALUES ('k0', 'dpsis', 'ok')")
    con.commit()
    con.close()
    store = ResultStore(path)
    rows = store.rows()
    store.close()
    assert len(rows) == 1 and all(rows[0][c] is None for c in added)


def test_lasso_ranking_is_computed_once_per_data(monkeypatch):
    from dpbench.bench.evaluation import reference
    from dpbench.core.problem import Problem
    from dpbench.bench.trial import PrivacySetup, Trial

    calls = []
    real = reference.lasso_ranking
    monkeypatch.setattr(reference, "lasso_ranking", lambda X, y, s: calls.append(s) or real(X, y, s))
    monkeypatch.setattr(reference, "_LASSO_RANKINGS", {})
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(20, 30))
    y = np.clip(X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=20), -1, 1)

    def trial(X, s=3):
        return Trial.from_problem(Problem(X, y, s, name="toy"), PrivacySetup(b_x=1.0, b_y=1.0), instances=PluginInstances())

    first = reference.compute_reference("lasso", trial(X))
    again = reference.compute_reference("lasso", trial(X.copy()))  # a new trial of the same data
    np.testing.assert_array_equal(first, again)
    assert calls == [3]
    reference.compute_reference("lasso", trial(X, s=4))      # another s: its own path point
    X2 = X.copy()
    X2[0, 0] = 0.5
    reference.compute_reference("lasso", trial(X2))          # other data
    assert calls == [3, 4, 3]
