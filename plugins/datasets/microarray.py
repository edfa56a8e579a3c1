"""The microarray collection of the DP-SIS paper (swope2024, section 5, Table 1).

**Shipped (13 + khan):** alon, borovecki, chowdary, christensen, golub, gordon, gravier,
shipp, singh, sorlie, su, subramanian, west, converted once from the R package
datamicroarray 0.2.3 (MIT) by ``tools/convert_datamicroarray.py`` into
``datasets/<name>.npz`` + ``<name>.toml`` (provenance: source, citation, licence, sha256,
shape and how it differs from the paper's Table 1, label coding). ``khan`` is the data set
of :mod:`dpbench_plugins.datasets.shipped` (the same 63 x 2308 matrix and labels). They load
through :class:`~dpbench_plugins.datasets.shipped.PackagedDataset`, which verifies the sha256.
The response is the class label as a number 1..K (class names in code-point order).

**Downloaded on first use (5):** burczynski, chiaretti, chin, tian, yeoh were too large to
ship. :class:`RemoteMicroarray` downloads the original source file into the user cache
(``$DPBENCH_CACHE``, else ``$XDG_CACHE_HOME/dpbench``, else ``~/.cache/dpbench``), checks a
pinned sha256 and parses it. **Limitation:** dpbench was prepared without network access, so
no sha256 could be pinned; the loader refuses an unpinned source with a one-line message
rather than use an unverified download. Of the five sources, two are GEO series-matrix
text files (burczynski, tian), which the loader parses; chiaretti and yeoh are R
ExpressionSet objects inside Bioconductor packages and chin an ArrayExpress processed file,
whose conversion is not automated (the message says so).

Preprocessing (the paper's centring and infinity-norm scaling, ``--standardize dpsis``)
is the user's explicit choice: it uses the data and is not private.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from dpbench.api import Dataset, DatasetArrays, PackagedDataset, UserInputError, hookimpl

#: The data sets converted by tools/convert_datamicroarray.py (khan: see the module docstring).
SHIPPED = ("alon", "borovecki", "chowdary", "christensen", "golub", "gordon", "gravier", "shipp",
           "singh", "sorlie", "su", "subramanian", "west")


def _shipped_class(name: str) -> type:
    return type(name.capitalize(), (PackagedDataset,), {
        "name": name, "__module__": __name__,
        "__doc__": f"The {name} microarray data set of swope2024 Table 1 (datamicroarray 0.2.3, MIT).",
    })


SHIPPED_CLASSES = [_shipped_class(n) for n in SHIPPED]


# --------------------------------------------------------------------------- download on first use


def cache_dir() -> Path:
    """Directory of downloaded source files: ``$DPBENCH_CACHE``, ``$XDG_CACHE_HOME/dpbench`` or ``~/.cache/dpbench``."""
    if os.environ.get("DPBENCH_CACHE"):
        return Path(os.environ["DPBENCH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpbench"


def fetch_verified(url: str, sha256: str | None, filename: str, label: str, timeout: float = 60.0) -> bytes:
    """The bytes of ``url``, from the cache or downloaded once into it, after checking ``sha256``.

    A cached file whose sha256 differs is downloaded again; a download whose sha256 differs is
    rejected and not cached.

    Parameters
    ----------
    url : str
        ``https://``, ``http://`` or ``file://`` address of the source file.
    sha256 : str or None
        Pinned hex digest. None (not pinned) refuses to download.
    filename : str
        Name of the file in :func:`cache_dir`.
    label : str
        What is being loaded (for messages).

    Raises
    ------
    UserInputError
        Unpinned source, no network (or the server refused), or a checksum mismatch.
    """
    if not sha256:
        raise UserInputError(
            f"{label}: no sha256 is pinned for its source {url} (dpbench was prepared offline), and "
            "dpbench does not use unverified downloads; download it yourself and load it with --data, "
            "or pin the sha256 in dpbench_plugins/datasets/microarray.py after checking the file")
    path = cache_dir() / filename
    if path.is_file():
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() == sha256.lower():
            return data
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = resp.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UserInputError(f"{label}: cannot download {url} ({reason}); connect to the internet once "
                             f"(the file is then cached in {path.parent}) or load a local copy with --data") from None
    got = hashlib.sha256(data).hexdigest()
    if got != sha256.lower():
        raise UserInputError(f"{label}: the download from {url} has sha256 {got[:16]}..., not the pinned "
                             f"{sha256[:16]}...; the source changed or the transfer was corrupted; not used")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)  # atomic: a concurrent reader never sees a half-written file
    return data


def parse_series_matrix(data: bytes, label_key: str, label_index: int = 0, label_prefix: str = "",
                        where: str = "series matrix"):
    """X, labels and probe names of a GEO series-matrix file (``*_series_matrix.txt[.gz]``).

    Format (NCBI GEO): tab-separated ``!Sample_<field>`` lines (one value per sample, a field
    may repeat), then the expression table between ``!series_matrix_table_begin`` and
    ``!series_matrix_table_end`` with a header ``"ID_REF" GSM...`` and one row per probe.

    Parameters
    ----------
    data : bytes
        The file, gzip-compressed or not.
    label_key : str
        The sample field holding the class label, e.g. ``"!Sample_characteristics_ch1"``.
    label_index : int
        Which occurrence of a repeated field (0 = first).
    label_prefix : str
        Removed from the start of each label (e.g. ``"disease state: "``).

    Returns
    -------
    X : ndarray (n_samples, n_probes) float64
    labels : list of str, length n_samples
    probes : list of str, length n_probes

    Raises
    ------
    UserInputError
        Missing table or label field, ragged rows, or missing / non-numeric values.
    """
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    fields: dict[str, list] = {}
    rows, header, in_table = [], None, False
    for line in io.StringIO(data.decode("utf-8", errors="replace")):
        cells = [c.strip().strip('"') for c in line.rstrip("\r\n").split("\t")]
        if cells[0] == "!series_matrix_table_begin":
            in_table = True
        elif cells[0] == "!series_matrix_table_end":
            in_table = False
        elif in_table and header is None:
            header = cells
        elif in_table:
            rows.append(cells)
        elif cells[0].startswith("!Sample_"):
            fields.setdefault(cells[0], []).append(cells[1:])
    if header is None or not rows:
        raise UserInputError(f"{where}: no expression table (!series_matrix_table_begin ... _end)")
    occurrences = fields.get(label_key, [])
    if len(occurrences) <= label_index:
        raise UserInputError(f"{where}: no occurrence {label_index} of the label field {label_key!r}")
    labels = [v[len(label_prefix):] if v.startswith(label_prefix) else v for v in occurrences[label_index]]
    n = len(header) - 1
    if len(labels) != n or any(len(r) != n + 1 for r in rows):
        raise UserInputError(f"{where}: {n} samples in the table header but rows or labels of other lengths")
    try:
        M = np.array([[float(c) for c in r[1:]] for r in rows], dtype=np.float64)
    except ValueError:
        raise UserInputError(f"{where}: a missing or non-numeric expression value; not a cleaned series matrix") from None
    return M.T.copy(), labels, [r[0] for r in rows]


@dataclass(frozen=True)
class Source:
    """Where a downloaded data set comes from and how it is turned into arrays."""

    url: str
    sha256: str | None
    fmt: str  # "geo_series_matrix" (parsed here) or a format whose conversion is not automated
    paper_shape: tuple
    citation: str
    label_key: str = ""
    label_index: int = 0
    label_prefix: str = ""
    note: str = ""


REMOTE = {
    "burczynski": Source(
        "https://ftp.ncbi.nlm.nih.gov/geo/series/GSE3nnn/GSE3365/matrix/GSE3365_series_matrix.txt.gz", None,
        "geo_series_matrix", (127, 22283),
        "M. E. Burczynski et al. (2006). Molecular classification of Crohn's disease and ulcerative colitis "
        "patients using transcriptional profiles in peripheral blood mononuclear cells. J. Mol. Diagn. 8(1), 51-61.",
        label_key="!Sample_characteristics_ch1", label_prefix="disease state: ",
        note="datamicroarray reads GEO data set GDS1615 (= series GSE3365), label = its disease.state"),
    "tian": Source(
        "https://ftp.ncbi.nlm.nih.gov/geo/series/GSEnnn/GSE755/matrix/GSE755_series_matrix.txt.gz", None,
        "geo_series_matrix", (173, 12625),
        "E. Tian et al. (2003). The role of the Wnt-signaling antagonist DKK1 in the development of osteolytic "
        "lesions in multiple myeloma. New England Journal of Medicine 349(26), 2483-2494.",
        label_key="!Sample_description", label_index=2,
        note="datamicroarray uses GEO series GSE755, label = pData column description.2"),
    "chiaretti": Source(
        "https://bioconductor.org/packages/release/data/experiment/html/ALL.html", None,
        "bioconductor_expressionset", (128, 12625),
        "S. Chiaretti et al. (2004). Gene expression profile of adult T-cell acute lymphocytic leukemia "
        "identifies distinct subsets of patients with different response to therapy and survival. "
        "Blood 103(7), 2771-2778.",
        note="the Bioconductor package ALL: exprs(ALL), label = ALL$mol.biol"),
    "yeoh": Source(
        "https://bioconductor.org/packages/release/data/experiment/html/stjudem.html", None,
        "bioconductor_expressionset", (248, 12625),
        "E.-J. Yeoh et al. (2002). Classification, subtype discovery, and prediction of outcome in pediatric "
        "acute lymphoblastic leukemia by gene expression profiling. Cancer Cell 1(2), 133-143.",
        note="the Bioconductor package stjudem: subtypes T, E2A, BCR, TEL, MLL, Hyperdip"),
    "chin": Source(
        "https://www.ebi.ac.uk/biostudies/arrayexpress/studies/E-TABM-158", None,
        "arrayexpress_processed", (118, 22215),
        "K. Chin et al. (2006). Genomic and transcriptional aberrations linked to breast cancer "
        "pathophysiologies. Cancer Cell 10(6), 529-541.",
        note="ArrayExpress E-TABM-158 processed data, label = SDRF column 35"),
}


class RemoteMicroarray(Dataset):
    """A data set of swope2024 Table 1 downloaded from its original source on first use."""

    name: ClassVar[str] = ""
    source: ClassVar[Source]

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        src = cls.source
        pinned = "sha256 pinned" if src.sha256 else "NOT usable yet: no sha256 pinned"
        n, p = src.paper_shape
        cls.summary = f"{cls.name.capitalize()}: {n} x {p} (paper), downloaded on first use ({pinned})"
        cls.provenance = {
            "name": cls.name, "summary": cls.summary, "source_url": src.url, "sha256": src.sha256 or "",
            "format": src.fmt, "paper_shape": list(src.paper_shape), "citation": src.citation,
            "source_package": "original source (as datamicroarray 0.2.3 cleans it)", "source_version": "",
            "licence": "as published by the original source (public repository data)", "note": src.note,
            "limitation": "no sha256 could be pinned offline; the loader refuses unpinned sources",
        }

    def load(self) -> DatasetArrays:
        """Download (once), verify and parse the source file.

        Returns
        -------
        DatasetArrays
            ``X`` float64 (n, p); ``y`` float64 (n,) = class 1..K in code-point order of the
            labels (as the shipped sets); ``feature_names`` = probe ids.

        Raises
        ------
        UserInputError
            Unpinned source, no network, checksum mismatch, or a format whose conversion
            is not automated.
        """
        src = self.source
        label = f"data set {self.name!r}"
        data = fetch_verified(src.url, src.sha256, f"{self.name}-{src.url.rsplit('/', 1)[-1]}", label)
        if src.fmt != "geo_series_matrix":
            raise UserInputError(f"{label}: converting its {src.fmt} source ({src.note}) is not automated; "
                                 "convert it in R with datamicroarray's scripts and load the result with --data")
        X, labels, probes = parse_series_matrix(data, src.label_key, src.label_index, src.label_prefix, label)
        classes = sorted(set(labels))
        y = np.array([classes.index(v) + 1 for v in labels], dtype=np.float64)
        return DatasetArrays(X=X, y=y, feature_names=probes, target_name="class")


def _remote_class(name: str) -> type:
    return type(name.capitalize(), (RemoteMicroarray,), {
        "name": name, "source": REMOTE[name], "__module__": __name__,
        "__doc__": f"The {name} data set of swope2024 Table 1, downloaded on first use."})


REMOTE_CLASSES = [_remote_class(n) for n in REMOTE]


@hookimpl
def dpbench_datasets():
    return [*SHIPPED_CLASSES, *REMOTE_CLASSES]
