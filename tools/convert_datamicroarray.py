"""Maintenance script: convert the datamicroarray R data files into shipped ``.npz`` files (run once).

Not installed and not used at run time: dpbench loads the ``datasets/<name>.npz`` files
written here (plugin ``dpbench_plugins.datasets.microarray``) and never imports ``rdata``.
To rebuild (the R files are the datamicroarray 0.2.3 data files, MIT licence)::

    pip install -e '.[maintenance]'          # the PyPI package rdata
    python tools/convert_datamicroarray.py /path/to/datamicroarray   # *.RData inside

What it writes, per data set ``<name>`` of :data:`SHIPPED`:

* ``datasets/<name>.npz``: ``X`` float64 (n, p) exactly as stored in the R file (no
  rounding: the float64 values read back bit-identical), ``y`` float64 (n,) = the class
  label as a number 1..K, ``classes`` (K,) str = the class names in the order of their
  code (``classes[k - 1]`` is coded ``k``), ``feature_names`` (p,) str. The archive is a
  ZIP with LZMA members and fixed timestamps, which ``numpy.load`` reads, so rerunning the
  script on the same input reproduces the same bytes and sha256.
* ``datasets/<name>.toml``: the provenance record (source, citation, licence, sha256 of the
  npz and of the R file, shape and how it differs from swope2024's Table 1, the label coding).

Label coding: the class names sorted in code-point order are coded 1..K. This is the
order in which Python tools (sorted(set(labels)), pandas.factorize(sort=True),
scikit-learn's LabelEncoder) number classes; with it, the DP-SIS paper's non-private Lasso
R^2 of Christensen (3 classes, R level order other/blood/placenta) is reproduced (0.780 vs
the paper's 0.787; R's level order gives 0.40). For two classes the coding only flips the
sign of the centred target, which changes neither correlations' magnitudes nor R^2.

``khan`` is not written again: the shipped ``khan.npz`` (from ISLP) holds the same 63 x 2308
training split with the same labels in the same row order; the script checks that the R file
agrees with it to the ISLP CSV's 6 decimals and then keeps the shipped file.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract_datasets import _toml_value  # noqa: E402  (the TOML writer of the other data script)

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT / "datasets"

SOURCE_PACKAGE = "datamicroarray"
SOURCE_VERSION = "0.2.3"
SOURCE_COMMIT = "a95f6f68ed3debf48ee54f198435fa12aa655b16"
SOURCE_URL = "https://github.com/ramhiser/datamicroarray"
LICENCE = ("MIT (the licence of the R package datamicroarray by John A. Ramey, which collects and "
           "redistributes the data; the original data are from the cited publication)")

#: name -> (disease / tissue, (n, p) of swope2024 Table 1, citation).
SHIPPED = {
    "alon": ("colon cancer: tumour vs normal colon tissue", (62, 2000),
             "U. Alon, N. Barkai, D. A. Notterman, K. Gish, S. Ybarra, D. Mack and A. J. Levine (1999). Broad "
             "patterns of gene expression revealed by clustering analysis of tumor and normal colon tissues "
             "probed by oligonucleotide arrays. PNAS 96(12), 6745-6750."),
    "borovecki": ("Huntington's disease: symptomatic patients vs controls (blood)", (31, 22283),
                  "F. Borovecki, L. Lovrecic, J. Zhou, H. Jeong, F. Then, H. D. Rosas, S. M. Hersch, P. Hogarth, "
                  "B. Bouzou, R. V. Jensen and D. Krainc (2005). Genome-wide expression profiling of human blood "
                  "reveals biomarkers for Huntington's disease. PNAS 102(31), 11023-11028."),
    "chowdary": ("breast vs colon tumours (RNAlater-preserved tissue)", (104, 22283),
                 "D. R. Chowdary, J. Lathrop, J. Skelton, K. Curtin, T. Briggs, L. Zhang, A. Rashidi, S. White, "
                 "D. Curtis, D. D. Von Hoff and D. Kravitz (2006). Prognostic gene expression signatures can be "
                 "measured in tissues collected in RNAlater preservative. J. Mol. Diagn. 8(1), 31-39."),
    "christensen": ("DNA methylation (1413 CpG loci) of blood, placenta and other normal tissues", (217, 1413),
                    "B. C. Christensen, E. A. Houseman, C. J. Marsit, S. Zheng, M. R. Wrensch, J. L. Wiemels, "
                    "H. H. Nelson, M. R. Karagas, J. F. Padbury, R. Bueno, D. J. Sugarbaker, R.-F. Yeh, "
                    "J. K. Wiencke and K. T. Kelsey (2009). Aging and environmental exposures alter "
                    "tissue-specific DNA methylation dependent upon CpG island context. PLoS Genetics 5(8), "
                    "e1000602."),
    "golub": ("leukaemia: ALL vs AML (bone marrow / blood)", (72, 7129),
              "T. R. Golub, D. K. Slonim, P. Tamayo, C. Huard, M. Gaasenbeek, J. P. Mesirov, H. Coller, M. L. Loh, "
              "J. R. Downing, M. A. Caligiuri, C. D. Bloomfield and E. S. Lander (1999). Molecular "
              "classification of cancer: class discovery and class prediction by gene expression monitoring. "
              "Science 286(5439), 531-537."),
    "gordon": ("lung cancer: adenocarcinoma vs mesothelioma", (181, 12533),
               "G. J. Gordon, R. V. Jensen, L. L. Hsiao, S. R. Gullans, J. E. Blumenstock, S. Ramaswamy, "
               "W. G. Richards, D. J. Sugarbaker and R. Bueno (2002). Translation of microarray data into "
               "clinically relevant cancer diagnostic tests using gene expression ratios in lung cancer and "
               "mesothelioma. Cancer Research 62(17), 4963-4967."),
    "gravier": ("breast cancer: good vs poor prognosis (array CGH)", (168, 2905),
                "E. Gravier, G. Pierron, A. Vincent-Salomon, N. Gruel, V. Raynal, A. Savignoni, Y. De Rycke, "
                "J.-Y. Pierga, C. Lucchesi, F. Reyal, A. Fourquet, S. Roman-Roman, F. Radvanyi, X. Sastre-Garau, "
                "B. Asselain and O. Delattre (2010). A prognostic DNA signature for T1T2 node-negative breast "
                "cancer patients. Genes, Chromosomes and Cancer 49(12), 1125-1134."),
    "khan": ("small round blue cell tumours (4 classes)", (63, 2308), ""),
    "shipp": ("lymphoma: DLBCL vs follicular lymphoma", (77, 7129),
              "M. A. Shipp, K. N. Ross, P. Tamayo, A. P. Weng, J. L. Kutok, R. C. T. Aguiar, M. Gaasenbeek, "
              "M. Angelo, M. Reich, G. S. Pinkus, T. S. Ray, M. A. Koval, K. W. Last, A. Norton, T. A. Lister, "
              "J. Mesirov, D. S. Neuberg, E. S. Lander, J. C. Aster and T. R. Golub (2002). Diffuse large B-cell "
              "lymphoma outcome prediction by gene-expression profiling and supervised machine learning. "
              "Nature Medicine 8(1), 68-74."),
    "singh": ("prostate cancer: tumour vs normal tissue", (102, 12600),
              "D. Singh, P. G. Febbo, K. Ross, D. G. Jackson, J. Manola, C. Ladd, P. Tamayo, A. A. Renshaw, "
              "A. V. D'Amico, J. P. Richie, E. S. Lander, M. Loda, P. W. Kantoff, T. R. Golub and "
              "W. R. Sellers (2002). Gene expression correlates of clinical prostate cancer behavior. "
              "Cancer Cell 1(2), 203-209."),
    "sorlie": ("breast carcinoma subtypes (5 classes)", (85, 457),
               "T. Sorlie, C. M. Perou, R. Tibshirani, T. Aas, S. Geisler, H. Johnsen, T. Hastie, M. B. Eisen, "
               "M. van de Rijn, S. S. Jeffrey, T. Thorsen, H. Quist, J. C. Matese, P. O. Brown, D. Botstein, "
               "P. E. Lonning and A.-L. Borresen-Dale (2001). Gene expression patterns of breast carcinomas "
               "distinguish tumor subclasses with clinical implications. PNAS 98(19), 10869-10874."),
    "su": ("carcinomas of four tissues of origin (4 classes)", (102, 5564),
           "A. I. Su, J. B. Welsh, L. M. Sapinoso, S. G. Kern, P. Dimitrov, H. Lapp, P. G. Schultz, S. M. Powell, "
           "C. A. Moskaluk, H. F. Frierson and G. M. Hampton (2001). Molecular classification of human "
           "carcinomas by use of gene expression signatures. Cancer Research 61(20), 7388-7393."),
    "subramanian": ("p53 status: mutant vs wild-type cell lines (NCI-60, GSEA paper)", (50, 10100),
                    "A. Subramanian, P. Tamayo, V. K. Mootha, S. Mukherjee, B. L. Ebert, M. A. Gillette, "
                    "A. Paulovich, S. L. Pomeroy, T. R. Golub, E. S. Lander and J. P. Mesirov (2005). Gene set "
                    "enrichment analysis: a knowledge-based approach for interpreting genome-wide expression "
                    "profiles. PNAS 102(43), 15545-15550."),
    "west": ("breast cancer: oestrogen-receptor negative vs positive", (49, 7129),
             "M. West, C. Blanchette, H. Dressman, E. Huang, S. Ishida, R. Spang, H. Zuzan, J. A. Olson, "
             "J. R. Marks and J. R. Nevins (2001). Predicting the clinical status of human breast cancer by "
             "using gene expression profiles. PNAS 98(20), 11462-11467."),
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_rdata(path: Path, name: str):
    """X (n, p) float64, class names per row (list of str), feature names (list of str) of one R file."""
    try:
        import rdata
    except ImportError:
        sys.exit("this script needs the PyPI package rdata: pip install -e '.[maintenance]'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Unknown encoding. Assumed ASCII." for the older files
        obj = rdata.conversion.convert(rdata.parser.parse_file(path))[name]
    x, labels = obj["x"], obj["y"]
    X = np.array(x, dtype=np.float64)  # DataArray, DataFrame (one has Int32 columns) or ndarray
    cols = None
    if hasattr(x, "coords") and len(x.dims) == 2 and x.dims[1] in x.coords:
        cols = [str(c) for c in x.coords[x.dims[1]].values]
    elif hasattr(x, "columns"):
        cols = [str(c) for c in x.columns]
    if cols is None or len(set(cols)) != X.shape[1]:
        cols = [f"V{j}" for j in range(1, X.shape[1] + 1)]
    names = [str(v) for v in np.asarray(labels)]
    return X, names, cols


def convert(path: Path, name: str) -> dict[str, np.ndarray]:
    """The arrays shipped for data set ``name`` from its R file (see the module docstring)."""
    X, labels, cols = read_rdata(path, name)
    if X.ndim != 2 or X.shape[0] != len(labels) or not np.all(np.isfinite(X)):
        raise SystemExit(f"{path}: unexpected content (shape {X.shape}, {len(labels)} labels, finite: "
                         f"{bool(np.all(np.isfinite(X)))})")
    classes = sorted(set(labels))
    y = np.array([classes.index(v) + 1 for v in labels], dtype=np.float64)
    return {"X": X, "y": y, "classes": np.array(classes), "feature_names": np.array(cols)}


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A deterministic ``.npz`` (ZIP, LZMA members, fixed timestamps, no pickle)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_LZMA) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_LZMA
            info.external_attr = 0o644 << 16
            data = io.BytesIO()
            np.lib.format.write_array(data, np.asarray(arr), allow_pickle=False)
            zf.writestr(info, data.getvalue())
    return buf.getvalue()


def toml_text(fields: dict) -> str:
    lines = ["# Provenance of the shipped data file; generated by tools/convert_datamicroarray.py.", ""]
    lines += [f"{k} = {_toml_value(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


def shape_note(name: str, shape, paper) -> str:
    if tuple(shape) == tuple(paper):
        return f"same as swope2024 Table 1 ({paper[0]} x {paper[1]})"
    diff = shape[1] - paper[1]
    note = (f"swope2024 Table 1 lists {paper[0]} x {paper[1]}; the datamicroarray file has {shape[0]} x "
            f"{shape[1]} ({abs(diff)} column{'s' if abs(diff) != 1 else ''} {'more' if diff > 0 else 'fewer'})")
    extra = {"sorlie": "; the difference comes from the upstream cleaning (the paper's copy cannot be "
                       "recovered from the published files)",
             "su": "; 2 of the 5565 columns are constant (the dpsis/standardize preprocessing leaves them "
                   "at zero); the paper's copy has one column fewer, presumably one constant column "
                   "dropped by its cleaning"}
    return note + extra.get(name, "")


def provenance(name: str, arrays, sha: str, rdata_sha: str) -> dict:
    disease, paper, citation = SHIPPED[name]
    X, y, classes = arrays["X"], arrays["y"], [str(c) for c in arrays["classes"]]
    counts = np.bincount(y.astype(int), minlength=len(classes) + 1)[1:].tolist()
    coding = ", ".join(f"{k} = {c}" for k, c in enumerate(classes, 1))
    n, p = X.shape
    return {
        "name": name,
        "summary": f"{name.capitalize()} ({disease}): {n} x {p}, y = class 1-{len(classes)}",
        "description": (
            f"Microarray data set of the DP-SIS paper (swope2024, Table 1): {disease}. X is the datamicroarray "
            f"matrix (samples x features) unchanged, float64. The response is the class label as a number "
            f"({coding}; class names sorted in code-point order, as Python tools number them), as the "
            f"paper regresses on the label. Preprocess explicitly (e.g. --standardize dpsis, the paper's "
            f"centring and infinity-norm scaling; not private)."),
        "file": f"{name}.npz",
        "sha256": sha,
        "shape": [n, p],
        "dtype": "float64",
        "target": "class",
        "target_coding": coding,
        "classes": classes,
        "class_counts": counts,
        "paper_shape": list(paper),
        "shape_vs_paper": shape_note(name, (n, p), paper),
        "source_package": SOURCE_PACKAGE,
        "source_version": SOURCE_VERSION,
        "source_commit": SOURCE_COMMIT,
        "source_url": SOURCE_URL,
        "source_files": [f"data/{name}.RData"],
        "source_sha256": rdata_sha,
        "citation": citation,
        "licence": LICENCE,
    }


def check_khan(path: Path) -> None:
    """The R file's Khan equals the shipped (ISLP) khan.npz up to the CSV's 6 decimals."""
    arrays = convert(path, "khan")
    with np.load(DATASETS / "khan.npz", allow_pickle=False) as z:
        X, y = z["X"], z["y"]
    err = float(np.max(np.abs(arrays["X"] - X)))
    if arrays["X"].shape != X.shape or err > 5.1e-7 or not np.array_equal(arrays["y"], y):
        raise SystemExit(f"khan: the R file differs from the shipped khan.npz (max |diff| {err:.3g})")
    print(f"khan: R file matches the shipped khan.npz (max |diff| {err:.2g}, same labels); kept")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="directory with the datamicroarray <name>.RData files")
    ap.add_argument("--only", nargs="*", help="convert only these data sets")
    args = ap.parse_args(argv)
    total = 0
    for name in args.only or SHIPPED:
        path = args.source / f"{name}.RData"
        if name == "khan":
            check_khan(path)
            continue
        arrays = convert(path, name)
        raw = npz_bytes(arrays)
        sha = sha256_bytes(raw)
        (DATASETS / f"{name}.npz").write_bytes(raw)
        prov = provenance(name, arrays, sha, sha256_bytes(path.read_bytes()))
        (DATASETS / f"{name}.toml").write_text(toml_text(prov))
        total += len(raw)
        print(f"{name}: {arrays['X'].shape} {len(raw) / 1e6:.2f} MB sha256 {sha[:16]}")
    print(f"total {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
