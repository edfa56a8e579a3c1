"""Typed preparations (dpbench.core.preparation): the per-ε cache and storing a dataclass preparation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from dpbench.core.preparation import EpsilonCache, Memo, prepared_from_state, prepared_state
from dpbench.bench.results.store import decode_artefact, encode_artefact


@dataclass(frozen=True, eq=False)
class Inner:
    scores: np.ndarray
    certified: bool
    info: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Outer:
    inner: Inner
    total: int
    gap: float
    name: str | None
    mask: np.ndarray
    half: int = field(init=False)
    cache: EpsilonCache = field(default_factory=EpsilonCache)

    def __post_init__(self):
        object.__setattr__(self, "half", self.total // 2)


def _outer():
    inner = Inner(np.array([0.5, 1.5, math.inf]), np.bool_(True), {"calls": 3, "levels": [1, 2]})
    return Outer(inner, 10 ** 17 + 1, math.inf, None, np.array([True, False]))


def test_round_trip_through_the_store_encoding_is_exact():
    prep = _outer()
    prep.cache(1.0, 2.0, lambda: 7.0)
    state = prepared_state(prep)
    assert set(state) == {"inner.scores", "inner.certified", "inner.info", "total", "gap", "name", "mask"}
    back = prepared_from_state(Outer, decode_artefact(*encode_artefact(state)[:2]))
    assert isinstance(back.inner, Inner) and back.inner.certified is True and back.inner.info == prep.inner.info
    np.testing.assert_array_equal(back.inner.scores, prep.inner.scores)
    assert back.mask.dtype == bool and back.total == 10 ** 17 + 1 and back.half == prep.half
    assert back.gap == math.inf and back.name is None
    assert isinstance(back.cache, EpsilonCache) and len(back.cache) == 0  # memos are not stored


@pytest.mark.parametrize("bad, message", [
    ({"name": ("a", "b")}, r"prepared.name of type tuple is not storable"),
    ({"mask": np.array([object()])}, r"prepared.mask is an array of dtype object"),
])
def test_unstorable_fields_raise(bad, message):
    prep = _outer()
    object.__setattr__(prep, *next(iter(bad.items())))
    with pytest.raises(TypeError, match=message):
        prepared_state(prep)


def test_a_state_of_other_fields_is_refused():
    state = prepared_state(_outer())
    with pytest.raises(ValueError, match=r"lacks field 'inner.certified'"):
        prepared_from_state(Outer, {k: v for k, v in state.items() if k != "inner.certified"})
    with pytest.raises(ValueError, match=r"unknown fields \['log_tail'\]"):
        prepared_from_state(Outer, {**state, "log_tail": 1.0})


def test_epsilon_cache_computes_once_per_epsilon_and_sensitivity():
    calls = []
    cache = EpsilonCache()

    def compute(v):
        return lambda: calls.append(v) or v

    assert cache(1.0, 2.0, compute(1)) == 1 and cache(1, 2, compute(2)) == 1
    assert cache(1.0, 3.0, compute(3)) == 3 and cache(0.5, 2.0, compute(4)) == 4
    assert calls == [1, 3, 4] and isinstance(cache, Memo)


def test_typed_preparations_are_stored_and_resumed_rows_equal_fresh_ones(tmp_path):
    """Selectors stored only since their preparations became dataclasses: resume == fresh run."""
    import json
    import sqlite3

    from dpbench.cli.main import main

    run = ["compare", "--methods", "mistakes-ptr,sampagg,dpsis,mcmc", "--n", "150", "--p", "10", "--trials", "2",
           "--draws", "30", "--delta", "1e-6"]
    resumed, fresh = tmp_path / "a.db", tmp_path / "b.db"
    assert main(run + ["--epsilon", "1", "--out", str(resumed)]) == 0
    assert main(run + ["--epsilon", "1,4", "--out", str(resumed)]) == 0
    assert main(run + ["--epsilon", "1,4", "--out", str(fresh)]) == 0

    def rows(db):
        with sqlite3.connect(db) as conn:
            conn.row_factory = sqlite3.Row
            stored = dict(conn.execute("SELECT method, COUNT(*) FROM artefacts GROUP BY method").fetchall())
            return stored, {r["key"]: dict(r) for r in conn.execute("SELECT * FROM results")}

    def comparable(r):
        diag = {k: v for k, v in json.loads(r["diagnostics"] or "{}").items()
                if "second" not in k and k != "prepared_from_store"}  # wall-clock and provenance only
        return r["supports"], r["status"], r["recovery_prob"], r["objective_gap"], diag

    stored, a = rows(resumed)
    _, b = rows(fresh)
    assert stored == {"mistakes-ptr": 2, "sampagg": 2, "dpsis": 2, "mcmc": 2}
    assert a.keys() == b.keys() and len(a) == 4 * 2 * 2
    assert all(comparable(a[k]) == comparable(b[k]) for k in a)
    assert sum("prepared_from_store" in (r["diagnostics"] or "") for r in a.values()) == 8


def test_a_stored_preparation_that_no_longer_loads_is_prepared_afresh(tmp_path):
    """A stored state of other fields (a format change without a version bump) is not a failed
    row: the trial is prepared again and its rows equal a fresh run's."""
    import sqlite3

    from dpbench.cli.main import main

    run = ["compare", "--methods", "sampagg", "--n", "150", "--p", "10", "--trials", "1", "--draws", "20"]
    resumed, fresh = tmp_path / "a.db", tmp_path / "b.db"
    assert main(run + ["--epsilon", "1", "--out", str(resumed)]) == 0
    with sqlite3.connect(resumed) as conn:
        assert conn.execute("UPDATE artefacts SET json = '{\"unknown_field\": 1}'").rowcount == 1
    assert main(run + ["--epsilon", "1,4", "--out", str(resumed)]) == 0
    assert main(run + ["--epsilon", "1,4", "--out", str(fresh)]) == 0
    query = "SELECT key, status, supports FROM results ORDER BY key"
    with sqlite3.connect(resumed) as a, sqlite3.connect(fresh) as b:
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
        assert a.execute("SELECT COUNT(*) FROM results WHERE status = 'failed'").fetchone() == (0,)
