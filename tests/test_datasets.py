"""Shipped real data sets, the planted generator and the user-file loader (issue 7)."""

import gzip
import hashlib
import io
import math
import sys
from importlib.resources import files

import numpy as np
import pytest
from scipy import stats

from dpbench.core.datafiles import STANDARDIZE_MODES, load_table, read_npz_verified, standardize_arrays
from dpbench.core.errors import UnknownNameError, UserInputError
from dpbench.bench.registry import registry
from dpbench.core.problem import add_noise_at_snr

# Documented shapes (issue 7) and the sha256 of the shipped files, recorded independently
# of the provenance .toml files so that a changed file AND a changed record both fail here.
EXPECTED = {
    "khan": ((63, 2308), True, "6c353692c97fb3f3abbbff844883cfe182326ecb21dbd114ddd16fe19b9ed457"),
    "nci60": ((64, 6830), False, "2d9d7e562c8191d84e3505cd6d4abfa5d1cfce6062a5a51bed7632517442d0a7"),
    "diabetes": ((442, 10), True, "1033cc0332c6e1e603faff2b413a400114b35972487084f4250df30aaaf64493"),
    "hitters": ((263, 19), True, "fe6242bf7a4b8b52339008f0506dac67b9a5b36cb7526aba9ee8dca96ca63574"),
}
PROVENANCE_KEYS = {"name", "summary", "description", "file", "sha256", "shape", "source_package",
                   "source_version", "citation", "licence"}


# --------------------------------------------------------------------------- shipped data


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dataset_loads_with_documented_shape_and_checksum(name):
    shape, has_y, sha = EXPECTED[name]
    cls = registry().dataset(name)
    prov = cls.provenance
    assert PROVENANCE_KEYS <= set(prov), PROVENANCE_KEYS - set(prov)
    assert prov["sha256"] == sha and tuple(prov["shape"]) == shape
    raw = files("dpbench_data").joinpath(prov["file"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == sha
    arr = cls().load()
    assert arr.X.shape == shape and arr.X.dtype == np.float64
    assert np.all(np.isfinite(arr.X))
    assert len(arr.feature_names) == shape[1] and len(set(arr.feature_names)) == shape[1]
    if has_y:
        assert arr.y.shape == (shape[0],) and np.all(np.isfinite(arr.y))
    else:
        assert arr.y is None
    assert cls.describe()["provenance"]["sha256"] == sha


def test_dataset_contents():
    reg = registry()
    khan = reg.dataset("khan")().load()
    labels, counts = np.unique(khan.y, return_counts=True)
    assert labels.tolist() == [1, 2, 3, 4] and counts.tolist() == [8, 23, 12, 20]
    hit = reg.dataset("hitters")().load()
    for col in ("LeagueN", "DivisionW", "NewLeagueN"):
        assert set(np.unique(hit.X[:, hit.feature_names.index(col)])) == {0.0, 1.0}
    # log(Salary): salaries in the data range from 67.5 to 2460 (thousands of dollars).
    assert math.isclose(hit.y.min(), math.log(67.5)) and math.isclose(hit.y.max(), math.log(2460.0))
    dia = reg.dataset("diabetes")().load()
    assert dia.feature_names == ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    assert dia.y.min() == 25 and dia.y.max() == 346  # raw progression measure
    assert set(np.unique(dia.X[:, 1])) == {1.0, 2.0}  # raw (unscaled) sex coding
    assert reg.dataset("diabetes").provenance["scaled"] is False


def test_corrupted_shipped_file_is_rejected(monkeypatch):
    cls = registry().dataset("hitters")
    bad = dict(cls.provenance, sha256="0" * 64)
    monkeypatch.setattr(cls, "provenance", bad)
    with pytest.raises(UserInputError, match="sha256 .* does not match .*reinstall"):
        cls().load()


def test_unknown_dataset_name_lists_known():
    with pytest.raises(UnknownNameError, match="khan.*Did you mean 'khan'"):
        registry().dataset("kahn")


def test_npz_reader_refuses_pickle():
    buf = io.BytesIO()
    np.savez(buf, X=np.array([{"a": 1}], dtype=object))
    with pytest.raises(UserInputError, match="without pickle"):
        read_npz_verified(buf.getvalue(), None, "x.npz")


# --------------------------------------------------------------------------- user files


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = "a,b,target,c\n1,2,3,4\n5,6,7,8.5\n-1,0,1e-3,2\n"


def test_csv_roundtrip(tmp_path):
    t = load_table(write(tmp_path, "d.csv", GOOD), "target")
    X, y, names = t
    assert names == ["a", "b", "c"]
    np.testing.assert_array_equal(X, [[1, 2, 4], [5, 6, 8.5], [-1, 0, 2]])
    np.testing.assert_array_equal(y, [3, 7, 1e-3])
    assert t.notice is None and t.provenance["format"] == "csv"
    assert t.provenance["sha256"] == hashlib.sha256(GOOD.encode()).hexdigest()


def test_tsv_and_gzip(tmp_path):
    X1, y1, _ = load_table(write(tmp_path, "d.tsv", GOOD.replace(",", "\t")), "target")
    p = tmp_path / "d.csv.gz"
    p.write_bytes(gzip.compress(GOOD.encode()))
    X2, y2, _ = load_table(p, "target")
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)


def test_missing_target_lists_columns(tmp_path):
    with pytest.raises(UserInputError, match=r"no column named 'y'.*available columns: 'a', 'b', 'target', 'c'"):
        load_table(write(tmp_path, "d.csv", GOOD), "y")


def test_non_numeric_cell_names_line_and_column(tmp_path):
    with pytest.raises(UserInputError, match=r"line 3 \(data row 2\), column 'b': non-numeric value 'abc'"):
        load_table(write(tmp_path, "d.csv", "a,b,y\n1,2,3\n4,abc,6\n"), "y")


@pytest.mark.parametrize("cell", ["", "NA", "nan"])
def test_nan_names_row_and_column(tmp_path, cell):
    with pytest.raises(UserInputError, match=r"missing value \(NaN\) at data row 2, column 'b'"):
        load_table(write(tmp_path, "d.csv", f"a,b,y\n1,2,3\n4,{cell},6\n"), "y")
    with pytest.raises(UserInputError, match=r"missing value \(NaN\) at data row 1, target column 'y'"):
        load_table(write(tmp_path, "e.csv", f"a,b,y\n1,2,{cell}\n4,5,6\n"), "y")


def test_inf_is_reported(tmp_path):
    with pytest.raises(UserInputError, match=r"infinite value at data row 1, column 'a'"):
        load_table(write(tmp_path, "d.csv", "a,y\ninf,1\n2,3\n"), "y")


@pytest.mark.parametrize("text, pattern", [
    ("", "the file is empty"),
    ("\n\n", "the file is empty"),
    ("a,b,y\n", "a header but no data rows"),
    ("a,b,y\n1,2\n", r"line 2: 2 fields but the header has 3"),
    ("a,a,y\n1,2,3\n", "column name 'a' appears twice"),
    ("y\n1\n2\n", "no feature columns"),
])
def test_malformed_csv(tmp_path, text, pattern):
    with pytest.raises(UserInputError, match=pattern):
        load_table(write(tmp_path, "d.csv", text), "y")


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(UserInputError, match=r"unknown file type '\.xlsx'.*\.csv"):
        load_table(write(tmp_path, "d.xlsx", GOOD), "target")
    with pytest.raises(UserInputError, match="does not exist"):
        load_table(tmp_path / "nope.csv", "target")


def test_npz_user_file(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    y = np.array([1.0, 2, 3, 4])
    p = tmp_path / "d.npz"
    np.savez(p, X=X, y=y, feature_names=np.array(["u", "v", "w"]))
    X1, y1, names = load_table(p, "y")
    np.testing.assert_array_equal(X1, X)
    np.testing.assert_array_equal(y1, y)
    assert names == ["u", "v", "w"]
    X2, y2, names2 = load_table(p, "v")  # a feature column as the target
    np.testing.assert_array_equal(y2, X[:, 1])
    assert names2 == ["u", "w"] and X2.shape == (4, 2)
    with pytest.raises(UserInputError, match="no target 'z'"):
        load_table(p, "z")
    q = tmp_path / "bad.npz"
    np.savez(q, A=X)
    with pytest.raises(UserInputError, match="has no array 'X'"):
        load_table(q, "y")
    r = tmp_path / "nan.npz"
    Xn = X.copy()
    Xn[2, 0] = np.nan
    np.savez(r, X=Xn, y=y)
    with pytest.raises(UserInputError, match=r"data row 3, column 'x0'"):
        load_table(r, None)


def test_parquet(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0], "n": [1, 2, 3], "y": [0.5, 0.25, None]}), p)
    with pytest.raises(UserInputError, match=r"missing value \(NaN\) at data row 3, target column 'y'"):
        load_table(p, "y")
    q = tmp_path / "s.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0], "cat": ["x", "z"], "y": [1.0, 2.0]}), q)
    with pytest.raises(UserInputError, match="column 'cat' has non-numeric type string"):
        load_table(q, "y")
    ok = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0], "b": [True, False], "y": [1, 2]}), ok)
    X, y, names = load_table(ok, "y")
    np.testing.assert_array_equal(X, [[1, 1], [2, 0]])
    assert names == ["a", "b"] and y.tolist() == [1.0, 2.0]
    # Without pyarrow the message names the extra to install.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(UserInputError, match=r"pip install dpbench\[parquet\]"):
        load_table(ok, "y")


def test_parquet_nan_in_feature(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a": [1.0, None], "y": [1.0, 2.0]}), p)
    with pytest.raises(UserInputError, match=r"data row 2, column 'a'"):
        load_table(p, "y")


def test_standardize_modes(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(50, 4))
    X[:, 2] = 7.0  # constant column
    y = rng.normal(-1.0, 5.0, size=50)
    X0, y0, note = standardize_arrays(X, y, "none")
    assert note is None and X0 is not None and np.array_equal(X0, X)
    Xc, yc, note = standardize_arrays(X, y, "center")
    np.testing.assert_allclose(Xc.mean(axis=0), 0, atol=1e-12)
    assert abs(yc.mean()) < 1e-12 and "NOT differentially private" in note
    np.testing.assert_allclose(Xc - X, np.broadcast_to(-X.mean(axis=0), X.shape))
    Xs, ys, note = standardize_arrays(X, y, "standardize")
    np.testing.assert_allclose(Xs.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Xs.std(axis=0), [1, 1, 0, 1], atol=1e-12)
    assert abs(ys.std() - 1) < 1e-12 and "NOT differentially private" in note and "constant column" in note
    with pytest.raises(UserInputError, match="none, center, standardize"):
        standardize_arrays(X, y, "scale")
    t = load_table(write(tmp_path, "d.csv", GOOD), "target", standardize="center")
    assert t.standardize == "center" and "NOT differentially private" in t.notice
    assert set(STANDARDIZE_MODES) == {"none", "center", "standardize", "dpsis"}


# --------------------------------------------------------------------------- planted


def test_add_noise_at_snr_exact():
    rng = np.random.default_rng(5)
    signal = rng.normal(size=37)
    for snr in (0.1, 1.0, 5.0, 123.0):
        y = add_noise_at_snr(rng, signal, snr)
        e = y - signal
        assert math.isclose((signal @ signal) / (e @ e), snr, rel_tol=1e-12)
    with pytest.raises(UserInputError, match="snr"):
        add_noise_at_snr(rng, signal, 0.0)
    with pytest.raises(UserInputError, match="identically zero"):
        add_noise_at_snr(rng, np.zeros(5), 1.0)


@pytest.mark.parametrize("design, n, signs", [("nci60", None, "positive"), ("khan", 40, "random"),
                                              ("hitters", 100, "positive")])
def test_planted_hits_snr_and_support(design, n, signs):
    gen = registry().generator("planted")(design=design, n=n, s=4, snr=2.5, signs=signs)
    P = gen.generate(np.random.default_rng(11))
    n0, p = registry().dataset(design).provenance["shape"]
    assert P.X.shape == (n or n0, p)
    assert P.true_support.size == 4 == len(set(P.true_support.tolist()))
    assert np.all(np.diff(P.true_support) > 0) and 0 <= P.true_support[0] and P.true_support[-1] < p
    beta = np.asarray(P.provenance["beta"])
    np.testing.assert_allclose(np.abs(beta), 0.5)  # 1/sqrt(s)
    if signs == "positive":
        assert np.all(beta > 0)
    signal = P.X[:, P.true_support] @ beta
    e = P.y - signal
    assert math.isclose((signal @ signal) / (e @ e), 2.5, rel_tol=1e-12)
    # standardised columns (a column constant on the chosen rows stays at zero)
    sd = P.X.std(axis=0)
    np.testing.assert_allclose(P.X.mean(axis=0), 0, atol=1e-10)
    assert np.all((np.abs(sd - 1) < 1e-10) | (sd == 0))
    assert np.all(sd[P.true_support] > 0)
    # reproducible from the rng
    Q = gen.generate(np.random.default_rng(11))
    assert np.array_equal(P.y, Q.y) and np.array_equal(P.true_support, Q.true_support)


def test_planted_support_is_uniform_and_skips_constant_columns(monkeypatch):
    """Chi-square test of the support distribution on a small injected design.

    p = 6 columns, one constant (never planted): the C(5, 2) = 10 supports of the other
    columns must be equally likely. 3000 draws, fixed seed; reject at p-value < 1e-3.
    """
    from dpbench_plugins.generators import planted

    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 6))
    X[:, 4] = 2.0
    X.setflags(write=False)
    monkeypatch.setitem(planted._DESIGNS, "toy", (X, {"sha256": None}))
    gen = planted.Planted(design="toy", s=2, snr=1.0)
    draws = np.random.default_rng(123)
    counts = {}
    for _ in range(3000):
        sup = tuple(gen.generate(draws).true_support.tolist())
        assert 4 not in sup
        counts[sup] = counts.get(sup, 0) + 1
    assert len(counts) == 10
    assert stats.chisquare(list(counts.values())).pvalue > 1e-3


def test_planted_errors():
    reg = registry()
    with pytest.raises(UserInputError, match="n = 100 rows requested but design 'khan' has 63"):
        reg.generator("planted")(design="khan", n=100).generate(np.random.default_rng(0))
    with pytest.raises(UserInputError, match="s = 19"):
        reg.generator("planted")(design="hitters", s=19).generate(np.random.default_rng(0))
    with pytest.raises(UnknownNameError, match="unknown dataset 'nci61'"):
        reg.generator("planted")(design="nci61").generate(np.random.default_rng(0))
    with pytest.raises(UserInputError, match="must be one of positive, random"):
        reg.generator("planted")(signs="negative")


def test_problem_from_dataset(tmp_path):
    from dpbench.bench.datasets import problem_from_dataset

    P = problem_from_dataset({"dataset": "diabetes", "s": 3})
    assert P.X.shape == (442, 10) and P.s == 3 and P.true_support is None
    assert P.provenance["sha256"] == EXPECTED["diabetes"][2] and "notice" not in P.provenance
    Q = problem_from_dataset({"dataset": "hitters", "s": 2, "standardize": "standardize"})
    np.testing.assert_allclose(Q.X.std(axis=0), 1, atol=1e-12)
    assert "NOT differentially private" in Q.provenance["notice"]
    with pytest.raises(UserInputError, match="design matrix only.*planted"):
        problem_from_dataset({"dataset": "nci60", "s": 5})
    R = problem_from_dataset({"data": str(write(tmp_path, "d.csv", GOOD)), "target": "target", "s": 1,
                              "standardize": "center"})
    assert R.p == 3 and "NOT differentially private" in R.provenance["notice"]
