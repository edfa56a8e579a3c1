"""Reading user data files and shipped data sets into arrays a :class:`Problem` accepts.

Formats: CSV / TSV (optionally gzipped; stdlib ``csv``, header row required), Parquet
(needs pyarrow: ``pip install dpbench[parquet]``) and NumPy ``.npz`` (keys ``X``, ``y``,
optional ``feature_names``; always read with ``allow_pickle=False``).

Preprocessing is explicit (:data:`STANDARDIZE_MODES`). Centring and scaling use the data
themselves (column means and standard deviations), so they are **not** differentially
private: the privacy guarantee of a selector then covers selection on the preprocessed
data only. :func:`standardize_arrays` returns a notice saying so, for the CLI to print.
Every malformed input raises :class:`UserInputError` with a one-line message naming the
problem (row, column, file) and the fix.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpbench.core.errors import UserInputError

#: Preprocessing options for ``--standardize``.
#: ``none``: the data as given; ``center``: subtract the column means of X and the mean of
#: y; ``standardize``: centre, then divide each column of X and y by its standard deviation
#: (population, ddof = 0; a constant column is left at zero); ``dpsis``: the DP-SIS paper's
#: preprocessing (swope2024 section 4.1 and footnote 1: centred columns, the infinity-norm of
#: each column and of the target equal to 1): centre X and y, then divide each column of X
#: and y by its largest absolute value (a constant column is left at zero).
STANDARDIZE_MODES = ("none", "center", "standardize", "dpsis")

NOT_PRIVATE_NOTICE = ("this preprocessing uses the data (means{sd}) and is NOT differentially private; "
                      "the privacy guarantee covers only the selection on the preprocessed data")

#: What each mode computes from the data, completing :data:`NOT_PRIVATE_NOTICE`.
_USES = {"center": "", "standardize": " and standard deviations", "dpsis": " and largest absolute values"}
_DONE = {"center": "centred X and y with their sample means",
         "standardize": "standardised X and y with their sample means and standard deviations",
         "dpsis": "centred X and y and scaled every column of X and y to maximum absolute value 1 "
                  "(the DP-SIS paper's preprocessing)"}


def not_private_notice(mode: str) -> str | None:
    """The one-line not-private notice of a preprocessing ``mode`` (None for ``"none"``)."""
    if mode == "none":
        return None
    return _DONE[mode] + ": " + NOT_PRIVATE_NOTICE.format(sd=_USES[mode])


_MISSING_TOKENS = {"", "na", "nan", "null", "none", "n/a", "#n/a", "?"}
_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
             ".npz": "npz"}


@dataclass
class Table:
    """A loaded data file: design, response and names, plus what was done to them.

    Unpacks as ``X, y, feature_names = table``.

    Parameters
    ----------
    X : ndarray of shape (n, p), float64
        Design matrix (all columns except the target).
    y : ndarray of shape (n,), float64, or None
        The target column (None when no target was asked for).
    feature_names : list of str, length p
    target : str or None
        Name of the target column.
    standardize : {"none", "center", "standardize", "dpsis"}
        Preprocessing applied.
    notice : str or None
        Human-readable note for the user when the preprocessing used the data (not private).
    provenance : dict
        File path, format, sha256 of the file, standardisation.
    """

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str]
    target: str | None = None
    standardize: str = "none"
    notice: str | None = None
    provenance: dict = field(default_factory=dict)

    def __iter__(self):
        return iter((self.X, self.y, self.feature_names))


# --------------------------------------------------------------------------- helpers


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _list_names(names, limit=20) -> str:
    names = list(names)
    shown = ", ".join(repr(str(c)) for c in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def check_finite(X: np.ndarray, y: np.ndarray | None, feature_names, target, where: str) -> None:
    """Raise UserInputError naming the first row/column holding NaN or inf.

    Rows are reported 1-based (data rows, header excluded).
    """
    if X.size and not np.all(np.isfinite(X)):
        r, c = np.argwhere(~np.isfinite(X))[0]
        kind = "a missing value (NaN)" if np.isnan(X[r, c]) else "an infinite value"
        raise UserInputError(f"{where}: {kind} at data row {r + 1}, column {feature_names[c]!r}; "
                             "impute or drop the rows with missing values first")
    if y is not None and not np.all(np.isfinite(y)):
        r = int(np.flatnonzero(~np.isfinite(y))[0])
        kind = "a missing value (NaN)" if np.isnan(y[r]) else "an infinite value"
        raise UserInputError(f"{where}: {kind} at data row {r + 1}, target column {target!r}; "
                             "impute or drop the rows with missing values first")


def check_magnitude(X: np.ndarray, y: np.ndarray | None, feature_names, target, where: str) -> None:
    """Raise UserInputError naming the first column (or the target) whose sum of squares overflows.

    Finite values can still be too large for the score: one 1e308 makes a column's mean, its sum
    of squares and the Gram matrix infinite (numpy warned about the overflow and the run went on to
    report a uniform law as a result). A column whose sum of squares is finite in float64 keeps its
    mean, standard deviation and every product of two such columns finite (Cauchy-Schwarz).

    Raises
    ------
    UserInputError
        The column, its largest absolute value and the fix (rescale the column).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        ss = np.einsum("ij,ij->j", X, X) if X.size else np.zeros(0)
        ys = None if y is None else float(np.dot(y, y))
    bad = np.flatnonzero(~np.isfinite(ss))
    if bad.size:
        j = int(bad[0])
        raise UserInputError(f"{where}: column {feature_names[j]!r} holds values too large for float64 arithmetic "
                             f"(largest |value| {np.abs(X[:, j]).max():.3g}: its sum of squares overflows); "
                             "rescale the column, e.g. divide it by a power of ten")
    if ys is not None and not math.isfinite(ys):
        raise UserInputError(f"{where}: target column {target!r} holds values too large for float64 arithmetic "
                             f"(largest |value| {np.abs(y).max():.3g}: its sum of squares overflows); rescale it")


def check_target_varies(y: np.ndarray | None, target, where: str) -> None:
    """Refuse a constant response: no support explains it better than another, so every selector's
    output law is uniform by construction and a 'result' would only measure that.

    Raises
    ------
    UserInputError
    """
    if y is not None and y.size and np.all(y == y[0]):
        raise UserInputError(f"{where}: the target column {target!r} is constant ({y[0]:g} in every row); "
                             "choose a response that varies (--target COLUMN)")


def standardize_arrays(X: np.ndarray, y: np.ndarray | None, mode: str = "none"):
    """Apply the preprocessing ``mode`` (see :data:`STANDARDIZE_MODES`) to X and y.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,) or None
    mode : {"none", "center", "standardize", "dpsis"}
        ``dpsis`` (swope2024 section 4.1): ``X_j <- (X_j - mean X_j) / max_i |X_ij - mean X_j|``
        and ``y <- (y - mean y) / max_i |y_i - mean y|``, so that every column and the
        target are centred with infinity-norm exactly 1 (which DP-SIS's sensitivity bound
        assumes). Centring y does not change ``|x_j^T y|`` once the columns are centred; it
        sets the scale of y (with it, scikit-learn's ``Lasso(alpha=0.1)`` reproduces the R^2
        of the paper's Table 1 for most data sets; see docs/reproductions.md).

    Returns
    -------
    X : ndarray of shape (n, p), float64 (a new array unless ``mode == "none"``)
    y : ndarray of shape (n,) or None
    notice : str or None
        Says that the preprocessing used the data and is not private (None for "none").
        With "standardize" and "dpsis", also names constant columns (left at zero).

    Raises
    ------
    UserInputError
        For an unknown mode.
    """
    if mode not in STANDARDIZE_MODES:
        raise UserInputError(f"--standardize {mode!r} is not an option; use one of {', '.join(STANDARDIZE_MODES)}")
    X = np.asarray(X, dtype=np.float64)
    y = None if y is None else np.asarray(y, dtype=np.float64)
    if mode == "none":
        return X, y, None
    X = X - X.mean(axis=0)
    if y is not None:
        y = y - y.mean()
    note = not_private_notice(mode)
    if mode == "center":
        return X, y, note
    if mode == "dpsis":
        scale, y_scale = np.abs(X).max(axis=0, initial=0.0), (None if y is None else np.abs(y).max(initial=0.0))
    else:
        scale, y_scale = X.std(axis=0), (None if y is None else y.std())
    const = np.flatnonzero(scale == 0)
    X = X / np.where(scale == 0, 1.0, scale)
    if y is not None and y_scale > 0:
        y = y / y_scale
    if const.size:
        note += f"; {const.size} constant column(s) left at zero (first: column {const[0]})"
    return X, y, note


def read_npz_verified(data: bytes, sha256: str | None, label: str) -> dict[str, np.ndarray]:
    """Load a ``.npz`` archive from bytes after checking its SHA-256 (no pickle).

    Parameters
    ----------
    data : bytes
        The file contents.
    sha256 : str or None
        Expected hex digest; None skips the check.
    label : str
        What the file is (for messages).

    Returns
    -------
    dict of str -> ndarray

    Raises
    ------
    UserInputError
        On a checksum mismatch (the file was changed or truncated) or an unreadable archive.
    """
    if sha256 is not None:
        got = sha256_bytes(data)
        if got != sha256.lower():
            raise UserInputError(
                f"{label}: sha256 {got[:16]}... does not match the recorded {sha256[:16]}...; the shipped "
                "file is corrupt or was modified; reinstall dpbench (pip install --force-reinstall dpbench)")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        raise UserInputError(f"{label}: cannot read the .npz archive without pickle ({exc}); "
                             "store only numeric arrays and a string array of names") from None
    except Exception as exc:  # noqa: BLE001 - zipfile / format errors
        raise UserInputError(f"{label}: not a readable .npz archive ({type(exc).__name__}: {exc})") from None


# --------------------------------------------------------------------------- formats


def _format_of(path: Path, fmt: str | None) -> tuple[str, bool]:
    if fmt is not None:
        if fmt not in ("csv", "tsv", "parquet", "npz"):
            raise UserInputError(f"format {fmt!r} is not supported; use csv, tsv, parquet or npz")
        return fmt, path.suffix.lower() == ".gz"
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    ext = suffixes[-2] if gz and len(suffixes) >= 2 else (suffixes[-1] if suffixes else "")
    if ext not in _SUFFIXES or (gz and _SUFFIXES[ext] not in ("csv", "tsv")):
        raise UserInputError(f"{path}: unknown file type {''.join(path.suffixes) or '(no extension)'!r}; "
                             "use .csv, .tsv (optionally .gz), .parquet or .npz")
    return _SUFFIXES[ext], gz


def _parse_cell(text: str):
    t = text.strip()
    if t.lower() in _MISSING_TOKENS:
        return math.nan
    return float(t)


def _read_csv_fast(raw: bytes, delimiter: str):
    """Parse a clean numeric CSV with pandas' C parser; None when not applicable.

    Only the well-formed case is taken here (a header row, then a number in every cell);
    anything else — a non-numeric cell, a missing value, a ragged line, a line of empty fields —
    returns None, and the standard-library parser below produces its line-and-column error
    message (or skips the empty line). A 400 x 5000 file parses in about a second instead of
    several (benchmarks/bench_datasets.py).
    """
    try:
        import pandas as pd
    except ImportError:
        return None
    try:
        head = raw.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
        header = [h.strip() for h in next(csv.reader([head], delimiter=delimiter))]
        if not header or len(set(header)) != len(header) or not all(header):
            return None
        df = pd.read_csv(io.BytesIO(raw), sep=delimiter, header=None, skiprows=1, names=list(range(len(header))),
                         dtype=np.float64, engine="c", na_filter=False, skip_blank_lines=True)
    except Exception:  # noqa: BLE001 - any irregularity: the careful parser reports it
        return None
    M = df.to_numpy(dtype=np.float64)
    if M.shape[0] == 0 or np.isnan(M).any():
        return None  # missing cells and short lines get the careful parser's message
    return header, M


def _read_csv(raw: bytes, path: Path, delimiter: str, target: str | None):
    fast = _read_csv_fast(raw, delimiter) if raw and not raw.startswith(b"\xef\xbb\xbf") else None
    if fast is not None and (target is None or target in fast[0]):
        return fast
    text = raw.decode("utf-8-sig", errors="strict") if raw else ""
    if not text.strip():
        raise UserInputError(f"{path}: the file is empty; give a header row of column names and data rows")
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = None
    for header in reader:
        if any(h.strip() for h in header):
            break
    header = [h.strip() for h in header]
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise UserInputError(f"{path}: column name {dup!r} appears twice in the header; rename one")
    if target is not None and target not in header:
        hint = _separator_hint(header, delimiter)
        if hint:
            raise UserInputError(f"{path}: no column named {target!r} for --target{hint}")
        raise UserInputError(f"{path}: no column named {target!r} for --target; available columns: "
                             f"{_list_names(header)}")
    rows = []
    for row in reader:
        if not row or not any(c.strip() for c in row):
            continue  # blank lines
        line = reader.line_num
        if len(row) != len(header):
            raise UserInputError(f"{path}, line {line}: {len(row)} fields but the header has {len(header)}; "
                                 "check the delimiter and quoting")
        vals = []
        for j, cell in enumerate(row):
            try:
                vals.append(_parse_cell(cell))
            except ValueError:
                raise UserInputError(
                    f"{path}, line {line} (data row {len(rows) + 1}), column {header[j]!r}: non-numeric "
                    f"value {cell.strip()[:40]!r}; encode categorical columns as numbers (e.g. 0/1) "
                    "or drop the column") from None
        rows.append(vals)
    if not rows:
        raise UserInputError(f"{path}: a header but no data rows")
    return header, np.array(rows, dtype=np.float64)


def _read_parquet(path: Path, target: str | None):
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pat
    except ImportError:
        raise UserInputError(f"{path}: reading Parquet needs pyarrow; pip install dpbench[parquet] "
                             "(or convert the file to CSV)") from None
    try:
        tab = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001
        raise UserInputError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    header = [str(c) for c in tab.column_names]
    if target is not None and target not in header:
        raise UserInputError(f"{path}: no column named {target!r} for --target; available columns: "
                             f"{_list_names(header)}")
    if tab.num_rows == 0:
        raise UserInputError(f"{path}: the table has no rows")
    cols = []
    for name, col in zip(header, tab.columns):
        t = col.type
        if not (pat.is_integer(t) or pat.is_floating(t) or pat.is_boolean(t) or pat.is_decimal(t)):
            raise UserInputError(f"{path}: column {name!r} has non-numeric type {t}; encode categorical "
                                 "columns as numbers (e.g. 0/1) or drop the column")
        arr = np.array(col.to_numpy(zero_copy_only=False), dtype=np.float64)  # nulls -> NaN
        cols.append(arr)
    return header, np.column_stack(cols)


def _read_npz(raw: bytes, path: Path, target: str | None):
    if not raw.startswith(b"PK"):  # every .npz is a zip archive; else np.load spoke of pickle
        kind = "empty" if not raw else ("text" if _looks_like_text(raw) else "not a zip archive")
        raise UserInputError(f"{path}: not an .npz archive ({kind}); save arrays with numpy.savez(path, X=X, y=y), "
                             "or give a CSV file a .csv name")
    z = read_npz_verified(raw, None, str(path))
    for k in ("X", "y"):
        if k in z and z[k].dtype.kind == "c":  # float64 conversion would drop the imaginary part
            raise UserInputError(f"{path}: array {k!r} is complex ({z[k].dtype}); store real numbers only")
    if "X" not in z:
        raise UserInputError(f"{path}: the .npz archive has no array 'X' (it has: {_list_names(z)}); "
                             "save it with numpy.savez(path, X=X, y=y, feature_names=names)")
    try:
        X = np.asarray(z["X"], dtype=np.float64)
    except (TypeError, ValueError):
        raise UserInputError(f"{path}: array 'X' has non-numeric dtype {z['X'].dtype}; store numbers only") from None
    if X.ndim != 2:
        raise UserInputError(f"{path}: array 'X' must be 2-D (n x p); it has shape {X.shape}")
    names = z.get("feature_names")
    names = [f"x{j}" for j in range(X.shape[1])] if names is None else [str(v) for v in np.ravel(names)]
    if len(names) != X.shape[1]:
        raise UserInputError(f"{path}: 'feature_names' has {len(names)} entries but X has {X.shape[1]} columns")
    y = None
    tname = None
    if target in (None, "y") and "y" in z:
        if z["y"].ndim > 1 and max(z["y"].shape[1:], default=1) > 1:
            raise UserInputError(f"{path}: array 'y' must be one response column of shape (n,); it has shape "
                                 f"{z['y'].shape}; save one column, e.g. y[:, 0]")
        try:
            y = np.asarray(z["y"], dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise UserInputError(f"{path}: array 'y' has non-numeric dtype {z['y'].dtype}; store numbers only") from None
        tname = "y"
    elif target is not None and target in names:
        j = names.index(target)
        y = X[:, j].copy()
        X = np.delete(X, j, axis=1)
        names = names[:j] + names[j + 1:]
        tname = target
    elif target is not None:
        raise UserInputError(f"{path}: no target {target!r}: the archive's arrays are {_list_names(z)} and "
                             f"its feature names {_list_names(names)}; use --target y or a feature name")
    if y is not None and y.shape[0] != X.shape[0]:
        raise UserInputError(f"{path}: X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    if X.shape[0] == 0:
        raise UserInputError(f"{path}: X has no rows")
    return X, y, names, tname


def _looks_like_text(raw: bytes) -> bool:
    head = raw[:512]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\0" not in head


#: Field separators a CSV written by another tool may use, with their names for messages.
_SEPARATORS = {";": "semicolon", "\t": "tab", "|": "vertical bar", ",": "comma"}


def _separator_hint(header, delimiter: str) -> str:
    """'; the separator looks like ...' when the header parsed as one column holding another separator."""
    if len(header) != 1:
        return ""
    for sep, name in _SEPARATORS.items():
        if sep != delimiter and sep in header[0]:
            fix = "name the file .tsv" if sep == "\t" else f"convert it to comma-separated values"
            return (f"; the header is one column {header[0][:60]!r}: the separator looks like a {name}, not "
                    f"{_SEPARATORS.get(delimiter, repr(delimiter))}; {fix}")
    return ""


def load_table(path, target: str | None, standardize: str = "none", *, fmt: str | None = None,
               delimiter: str | None = None) -> Table:
    """Read a user data file into a design matrix, a response and column names.

    Parameters
    ----------
    path : str or Path
        A ``.csv`` / ``.tsv`` / ``.txt`` file (``.gz`` allowed) with a header row, a
        ``.parquet`` file, or a ``.npz`` archive with arrays ``X`` (n x p), ``y`` (n,)
        and optionally ``feature_names`` (p strings).
    target : str or None
        The response column. For CSV and Parquet, a column name; every other column becomes
        a feature. For NPZ, ``"y"`` (or None) uses the array ``y``; a name in
        ``feature_names`` moves that column of X into the response. None for CSV/Parquet
        gives ``y = None`` (a design matrix only).
    standardize : {"none", "center", "standardize", "dpsis"}
        Preprocessing (:func:`standardize_arrays`); anything but "none" uses the data and is
        not private, which :attr:`Table.notice` states.
    fmt : {"csv", "tsv", "parquet", "npz"}, optional
        Override the format guessed from the extension.
    delimiter : str, optional
        CSV field separator (default ``","``, or tab for ``.tsv``).

    Returns
    -------
    Table
        Unpacks as ``X, y, feature_names``; ``X`` float64 (n, p), ``y`` float64 (n,).

    Raises
    ------
    UserInputError
        Missing file, unknown extension, empty file, missing target column (the message
        lists the available columns), non-numeric cell (line, row and column), NaN / inf
        (row and column), ragged rows, Parquet without pyarrow, NPZ needing pickle.
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"data file {str(path)!r} does not exist (or is not a file); check the path")
    kind, gz = _format_of(path, fmt)
    try:
        raw = path.read_bytes()
    except OSError as exc:  # PermissionError (no read permission), EIO, ...
        raise UserInputError(f"data file {str(path)!r} cannot be read ({exc.strerror or exc}); check its "
                             "permissions (chmod u+r) or copy it somewhere readable") from None
    file_sha = sha256_bytes(raw)
    if kind == "parquet":
        header, M = _read_parquet(path, target)
    else:
        if gz:
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError) as exc:
                raise UserInputError(f"{path}: not a valid gzip file ({exc})") from None
        if kind == "npz":
            header = M = None
            X, y, names, tname = _read_npz(raw, path, target)
        else:
            try:
                header, M = _read_csv(raw, path, delimiter or ("\t" if kind == "tsv" else ","), target)
            except UnicodeDecodeError as exc:
                raise UserInputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                     "save the file as UTF-8 CSV") from None
    if M is not None:
        if target is None:
            X, y, names, tname = M, None, header, None
        else:
            j = header.index(target)
            X, y, tname = np.delete(M, j, axis=1), M[:, j].copy(), target
            names = header[:j] + header[j + 1:]
    if X.shape[1] == 0:
        raise UserInputError(f"{path}: no feature columns besides the target {tname!r}")
    check_finite(X, y, names, tname, str(path))
    check_magnitude(X, y, names, tname, str(path))
    check_target_varies(y, tname, str(path))
    X, y, notice = standardize_arrays(X, y, standardize)
    prov = {"file": str(path), "format": kind + (".gz" if gz else ""), "sha256": file_sha,
            "target": tname, "standardize": standardize, "shape": [int(X.shape[0]), int(X.shape[1])]}
    return Table(X, y, list(names), tname, standardize, notice, prov)


def load_table_once(path, target, mode) -> Table:
    """:func:`load_table`, read once per process for an unchanged file (every trial of a run uses it).

    The cache key includes the file's size and modification time, so an edited file is read
    again; the arrays are marked read-only so that no trial can change another's data.
    """
    st = Path(path).stat() if Path(path).is_file() else None
    key = (str(path), target, mode, st.st_size if st else None, st.st_mtime_ns if st else None)
    if key not in _TABLES:
        t = load_table(path, target, mode)
        for a in (t.X, t.y):
            if a is not None:
                a.setflags(write=False)
        _TABLES.clear()  # one file at a time: a run has one --data file
        _TABLES[key] = t
    return _TABLES[key]


_TABLES: dict = {}
