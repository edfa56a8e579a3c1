"""The DP-SIS microarray collection (issue 13, item 4): shipped files, conversion, download loader, dpsis mode."""

import gzip
import hashlib
import importlib.util
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from dpbench.bench.datasets import problem_from_dataset
from dpbench.core.datafiles import standardize_arrays
from dpbench.core.errors import UserInputError
from dpbench.bench.registry import registry

ROOT = Path(__file__).resolve().parent.parent

# Shapes and sha256 of the shipped files, recorded independently of the provenance .toml
# files so that a changed file AND a changed record both fail here. Class counts from the
# datamicroarray R files (classes in code-point order = y = 1..K).
EXPECTED = {
    "alon": ((62, 2000), "b8cc0165e6b845eab700168b425cf405d0bb4dfdf9f21f8322f04929a55eb684", [22, 40]),
    "borovecki": ((31, 22283), "49c553c738f90fcf5bc0fed3614afc6fbb75872c48117a21900bb2b8178e389b", [14, 17]),
    "chowdary": ((104, 22283), "ce5cf3b4217eb39b5effe3392b356acfa9f7de952f72e12449c7ca2d312a1c19", [62, 42]),
    "christensen": ((217, 1413), "cc88df16307577809c2d0d485c3a9a659c04b3e9dd11d1260233888f1964a962", [85, 113, 19]),
    "golub": ((72, 7129), "ec0296861bcf48143bed77617c9470c4ed503fa80348bae686fb808411f1a21d", [47, 25]),
    "gordon": ((181, 12533), "88dd27f04d78d11788ba3990376e6289079622e416485d84272fc43315f98f98", [150, 31]),
    "gravier": ((168, 2905), "aba975a4d4a68aa22c3c9831f1f748b6b37541785c60c6afac9049c106b638eb", [111, 57]),
    "shipp": ((77, 7129), "4d332ef8b187ac5bddce79ac75b4ee54255a243359dd165ae71bf66ad81aa5f5", [58, 19]),
    "singh": ((102, 12600), "5f775653fb0967ea71688f5710c922f2c40d85a9cb32d8bc93076bff7148ae33", [50, 52]),
    "sorlie": ((85, 456), "776c2feb385f4b3439b88c7919847ed40eeda13a7d6a5ad4c1ca591f5f882e7a", [14, 11, 13, 15, 32]),
    "su": ((102, 5565), "9ed874a4d09292faa92574ff2c18999bf311e337919e8ebb9217b9a6d437ace1", [25, 26, 28, 23]),
    "subramanian": ((50, 10100), "b6547e8271d96fb768af8274c8f8e781b4acd08a5023bfefad02d1428a1289d9", [33, 17]),
    "west": ((49, 7129), "f91ceeac1dab5f9389293bf1d8c7e89b45a3996ac7168f4e04ca4ba2fe35839a", [25, 24]),
}
PROVENANCE_KEYS = {"name", "summary", "description", "file", "sha256", "shape", "source_package", "source_version",
                   "citation", "licence", "paper_shape", "shape_vs_paper", "target_coding", "classes", "class_counts"}
PAPER_TABLE1 = ("alon", "borovecki", "chowdary", "christensen", "golub", "gordon", "gravier", "khan", "shipp",
                "singh", "sorlie", "su", "subramanian", "west")


def _tool():
    spec = importlib.util.spec_from_file_location("convert_datamicroarray", ROOT / "tools" / "convert_datamicroarray.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_file_matches_provenance(name):
    shape, sha, counts = EXPECTED[name]
    cls = registry().dataset(name)
    prov = cls.provenance
    assert PROVENANCE_KEYS <= set(prov), PROVENANCE_KEYS - set(prov)
    assert prov["sha256"] == sha and tuple(prov["shape"]) == shape
    assert prov["licence"].startswith("MIT") and prov["source_package"] == "datamicroarray"
    raw = files("dpbench_data").joinpath(prov["file"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == sha
    arr = cls().load()
    assert arr.X.shape == shape and arr.X.dtype == np.float64 and np.all(np.isfinite(arr.X))
    assert len(arr.feature_names) == shape[1] and len(set(arr.feature_names)) == shape[1]
    # y = class 1..K; the counts match the R factor's table and the provenance record
    assert np.bincount(arr.y.astype(int))[1:].tolist() == counts == prov["class_counts"]
    assert np.array_equal(arr.y, np.round(arr.y)) and len(prov["classes"]) == len(counts)
    assert prov["classes"] == sorted(prov["classes"])
    same = tuple(prov["paper_shape"]) == shape
    assert prov["shape_vs_paper"].startswith("same as") == same
    assert f"{shape[0]} x {shape[1]}" in cls.summary


def test_all_of_table1_listed_with_shapes():
    reg = registry()
    for name in PAPER_TABLE1:
        cls = reg.dataset(name)
        n, p = cls.provenance["shape"]
        assert f"{n} x {p}" in cls.summary or (name == "khan" and "63 training samples x 2308" in cls.summary)
    for name in ("burczynski", "chiaretti", "chin", "tian", "yeoh"):
        assert "downloaded on first use" in reg.dataset(name).summary


def test_conversion_reproduces_shipped_file():
    """tools/convert_datamicroarray.py on the R file gives the shipped arrays and the same bytes."""
    pytest.importorskip("rdata")
    tool = _tool()
    arrays = tool.convert(ROOT / "tests" / "fixtures" / "sorlie.RData", "sorlie")
    with np.load(files("dpbench_data").joinpath("sorlie.npz"), allow_pickle=False) as z:
        for key in ("X", "y", "classes", "feature_names"):
            assert np.array_equal(arrays[key], z[key]), key
    assert hashlib.sha256(tool.npz_bytes(arrays)).hexdigest() == EXPECTED["sorlie"][1]


# --------------------------------------------------------------------------- the dpsis preprocessing


def test_dpsis_standardisation_exact():
    X = np.array([[1.0, 2.0, 7.0], [3.0, 2.0, 7.0], [5.0, 8.0, 7.0]])
    y = np.array([1.0, 2.0, 6.0])
    Xs, ys, note = standardize_arrays(X, y, "dpsis")
    # means (3, 4, 7); centred columns (-2, 0, 2), (-2, -2, 4), 0; divided by max |.| = 2, 4, (constant)
    assert np.array_equal(Xs, [[-1.0, -0.5, 0.0], [0.0, -0.5, 0.0], [1.0, 1.0, 0.0]])
    # y: mean 3, centred (-2, -1, 3), divided by 3
    assert np.array_equal(ys, np.array([-2.0, -1.0, 3.0]) / 3.0)
    assert "NOT differentially private" in note and "largest absolute values" in note
    assert "1 constant column(s) left at zero (first: column 2)" in note
    Xn, yn, _ = standardize_arrays(X[:, :2], None, "dpsis")
    assert yn is None and np.array_equal(Xn, Xs[:, :2])


def test_dpsis_on_a_shipped_set_meets_the_paper_assumptions():
    P = problem_from_dataset({"dataset": "sorlie", "s": 5, "standardize": "dpsis"})
    np.testing.assert_allclose(P.X.mean(axis=0), 0, atol=1e-12)
    assert np.array_equal(np.abs(P.X).max(axis=0), np.ones(P.p)) and np.abs(P.y).max() == 1.0
    assert abs(P.y.mean()) < 1e-12 and "NOT differentially private" in P.provenance["notice"]


def test_several_datasets_form_one_setting_each(tmp_path):
    from dpbench.bench.config import COMPARE_DEFAULTS, build_run_config

    opts = {**COMPARE_DEFAULTS, "methods": "dpsis", "dataset": ["sorlie", "alon"], "s": [5, 7],
            "standardize": "dpsis", "reference": "sis"}
    cfg = build_run_config(opts)
    assert [(d["dataset"], d["s"]) for d in cfg.data] == [("sorlie", 5), ("sorlie", 7), ("alon", 5), ("alon", 7)]
    same = build_run_config({**opts, "dataset": "sorlie, alon"})
    assert same.data == cfg.data
    cfg1 = build_run_config({**opts, "dataset": "sorlie", "s": [5]})
    assert cfg1.data == [{"dataset": "sorlie", "s": 5, "standardize": "dpsis"}]  # unchanged for one data set


# --------------------------------------------------------------------------- download on first use


def _series_matrix(X, labels, probes) -> bytes:
    lines = ['!Series_title\t"toy"', "!Sample_description\t" + "\t".join(f'"d{i}"' for i in range(len(labels))),
             "!Sample_characteristics_ch1\t" + "\t".join(f'"disease state: {v}"' for v in labels),
             "!series_matrix_table_begin", '"ID_REF"\t' + "\t".join(f'"GSM{i}"' for i in range(len(labels)))]
    lines += [f'"{p}"\t' + "\t".join(repr(float(v)) for v in X[:, j]) for j, p in enumerate(probes)]
    lines += ["!series_matrix_table_end", ""]
    return gzip.compress("\n".join(lines).encode(), mtime=0)


@pytest.fixture
def toy_source(tmp_path, monkeypatch):
    """The burczynski loader pointed at a local series-matrix file (never the network)."""
    from dataclasses import replace

    from dpbench_plugins.datasets import microarray

    X = np.array([[1.5, -2.0, 0.25], [3.0, 4.0, -1.0], [0.5, 0.0, 2.0], [7.0, 1.0, 1.0]])
    labels = ["normal", "Crohn's disease", "normal", "ulcerative colitis"]
    raw = _series_matrix(X, labels, ["p1", "p2", "p3"])
    src = tmp_path / "GSE0_series_matrix.txt.gz"
    src.write_bytes(raw)
    cls = registry().dataset("burczynski")
    pinned = replace(cls.source, url=src.as_uri(), sha256=hashlib.sha256(raw).hexdigest())
    monkeypatch.setattr(cls, "source", pinned)
    monkeypatch.setenv("DPBENCH_CACHE", str(tmp_path / "cache"))
    return cls, X, src, microarray


def test_loader_downloads_verifies_and_caches(toy_source):
    cls, X, src, _ = toy_source
    arr = cls().load()
    assert np.array_equal(arr.X, X) and arr.feature_names == ["p1", "p2", "p3"]
    # code-point order: "Crohn's disease" = 1, "normal" = 2, "ulcerative colitis" = 3
    assert arr.y.tolist() == [2.0, 1.0, 2.0, 3.0]
    src.unlink()  # the second load comes from the cache
    assert np.array_equal(cls().load().X, X)


def test_loader_errors(toy_source, monkeypatch, tmp_path):
    from dataclasses import replace

    cls, _, src, microarray = toy_source
    good = cls.source
    monkeypatch.setattr(cls, "source", replace(good, sha256="0" * 64))
    with pytest.raises(UserInputError, match="has sha256 .* not the pinned 0000"):
        cls().load()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())  # not cached
    monkeypatch.setattr(cls, "source", replace(good, url=(tmp_path / "absent.gz").as_uri()))
    with pytest.raises(UserInputError, match="cannot download .*connect to the internet once"):
        cls().load()
    monkeypatch.setattr(cls, "source", replace(good, sha256=None))
    with pytest.raises(UserInputError, match="no sha256 is pinned .*unverified downloads"):
        cls().load()
    monkeypatch.setattr(cls, "source", replace(good, fmt="bioconductor_expressionset"))
    with pytest.raises(UserInputError, match="not automated"):
        cls().load()


def test_unpinned_dataset_is_one_line_exit_2(capsys, monkeypatch, tmp_path):
    from dpbench.cli.main import main

    monkeypatch.setenv("DPBENCH_CACHE", str(tmp_path))
    code = main(["compare", "--methods", "dpsis", "--dataset", "tian", "--trials", "1", "--draws", "1",
                 "--reference", "sis", "--out", str(tmp_path / "r.db")])
    err = capsys.readouterr().err
    assert code == 2 and "no sha256 is pinned" in err and "Traceback" not in err


def test_series_matrix_parser_rejects_missing_values():
    from dpbench_plugins.datasets.microarray import parse_series_matrix

    raw = _series_matrix(np.ones((2, 2)), ["a", "b"], ["p1", "p2"])
    text = gzip.decompress(raw).decode().replace("1.0\n", "null\n", 1)
    with pytest.raises(UserInputError, match="missing or non-numeric"):
        parse_series_matrix(text.encode(), "!Sample_characteristics_ch1", 0, "disease state: ")
    with pytest.raises(UserInputError, match="no occurrence 1 of the label field"):
        parse_series_matrix(raw, "!Sample_characteristics_ch1", 1)


def test_heatmap_panels(tmp_path):
    pytest.importorskip("matplotlib")
    from dpbench.cli.plot import plot_heatmap

    rows = [{"method": m, "data": d, "s": 5, "epsilon": e, "topk": v}
            for m, base in (("dpsis", 0.5), ("sampagg", 0.25)) for d in ("alon", "sorlie")
            for e, v in ((0.1, 0.0), (20.0, base))]
    out = tmp_path / "h.png"
    assert plot_heatmap(rows, "topk", out) == 3 and out.stat().st_size > 0  # two methods + difference
    assert plot_heatmap([r for r in rows if r["method"] == "dpsis"], "topk", tmp_path / "g.png") == 1
