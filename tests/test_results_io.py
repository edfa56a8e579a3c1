"""Data files are read once per run; the fast CSV path gives exactly the careful parser's arrays."""

from __future__ import annotations

import numpy as np
import pytest

import dpbench.core.datafiles as data_io
from dpbench.cli.main import main


def _csv(path, rng, n=40, p=6, extra=""):
    X = rng.normal(size=(n, p + 1))
    lines = [",".join(["outcome"] + [f"x{j}" for j in range(p)])]
    lines += [",".join(f"{v:.17g}" for v in row) for row in X]
    path.write_text("\n".join(lines) + "\n" + extra)
    return X


def test_fast_csv_equals_the_standard_library_parser(tmp_path, monkeypatch):
    path = tmp_path / "d.csv"
    X = _csv(path, np.random.default_rng(0))
    fast = data_io.load_table(path, "outcome")
    monkeypatch.setattr(data_io, "_read_csv_fast", lambda raw, delimiter: None)
    slow = data_io.load_table(path, "outcome")
    np.testing.assert_array_equal(fast.X, slow.X)
    np.testing.assert_array_equal(fast.y, slow.y)
    np.testing.assert_array_equal(fast.y, X[:, 0])  # %.17g round-trips exactly
    assert fast.feature_names == slow.feature_names


@pytest.mark.parametrize("extra, message", [
    ("1,2,3\n", "fields but the header has"),          # ragged line
    ("1,2,3,4,5,6,abc\n", "non-numeric value 'abc'"),  # text cell
    ("1,2,3,4,5,6,NA\n", "data row 41, column 'x5'"),   # missing value: its row and column
])
def test_irregular_files_keep_the_careful_messages(tmp_path, extra, message):
    path = tmp_path / "d.csv"
    _csv(path, np.random.default_rng(1), extra=extra)
    with pytest.raises(data_io.UserInputError, match=message):
        data_io.load_table(path, "outcome")


def test_a_data_file_is_read_once_per_run(tmp_path, monkeypatch):
    path = tmp_path / "d.csv"
    _csv(path, np.random.default_rng(2), n=60, p=6)
    calls = []
    real = data_io.load_table

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(data_io, "load_table", counting)
    data_io._TABLES.clear()
    assert main(["compare", "--methods", "exhaustive", "--data", str(path), "--target", "outcome", "--s", "2",
                 "--trials", "3", "--draws", "5", "--epsilon", "1,2", "--out", str(tmp_path / "r.db")]) == 0
    assert len(calls) == 1
