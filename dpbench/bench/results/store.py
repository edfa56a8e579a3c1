"""The results database: one embedded SQLite file, one row per (trial, method, epsilon).

Rows are written (and committed) as soon as a trial finishes, so an interrupted run loses
nothing and resumes where it stopped: every row carries a key derived from everything that
determines it, and keys already present are skipped. The database uses WAL journaling.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import time
from pathlib import Path

from dpbench.core.errors import UserInputError
from dpbench.bench.results import schema

#: ``{name: SQL type}`` of the results table, derived from :data:`dpbench.bench.results.schema.COLUMNS`
#: (declare a new column there, not here).
COLUMNS = schema.sql_columns()


#: Seconds a write waits for another process's lock after saying so (the first second is silent).
LOCK_WAIT_SECONDS = 600.0


#: Version of the artefact encoding (JSON text + an ``.npz`` archive of plain arrays); rows of
#: another version are ignored, i.e. the preparation is recomputed.
ARTEFACT_FORMAT = 1
ARTEFACT_COLUMNS = ("key TEXT PRIMARY KEY, format INTEGER, method TEXT, json TEXT, arrays BLOB, "
                    "nbytes INTEGER, created REAL")
#: Preparations larger than this are not stored (recomputing them is preferred to a huge file).
ARTEFACT_MAX_BYTES = 256 * 2**20


def encode_artefact(state: dict) -> tuple[str, bytes, int]:
    """Split a saved preparation into JSON text and an ``.npz`` archive (no pickle).

    Returns ``(json_text, npz_bytes, nbytes)``; raises TypeError for an object array.
    """
    import io

    import numpy as np

    arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    plain = {k: v for k, v in state.items() if k not in arrays}
    for k, a in arrays.items():
        if a.dtype == object:
            raise TypeError(f"artefact field {k!r} is an object array")
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return json.dumps(plain, default=_json_default), buf.getvalue(), int(sum(a.nbytes for a in arrays.values()))


def decode_artefact(text: str, blob: bytes) -> dict:
    """Inverse of :func:`encode_artefact` (``allow_pickle=False``: a stored file cannot run code)."""
    import io

    import numpy as np

    state = json.loads(text)
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        state.update({k: z[k] for k in z.files})
    return state


#: SQL condition of a stored row that ``--retry-uncertified`` redoes: an uncertified selector, or a
#: trial whose bss reference was not certified (the row's metrics are empty; worker.run_trial).
_UNCERTIFIED = "(results.status = 'uncertified' OR results.diagnostics LIKE '%\"reference_uncertified\"%')"


class ResultStore:
    """SQLite store of per-trial results.

    Parameters
    ----------
    path : str or Path
        Database file; created with its parent directory if missing (unless ``readonly``).
    readonly : bool
        Open an existing database without writing anything (``report``, ``export``, ``plot``).

    Raises
    ------
    UserInputError
        One line naming the problem and the fix: the path is a directory, its directory cannot
        be created or written (the operating system's reason is named), the file is not SQLite,
        it is another program's SQLite database (refused untouched: dpbench adds no table to
        it and does not change its journal mode), an incompatible dpbench database, or it
        stays locked by another process.
    """

    def __init__(self, path, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        if self.path.is_dir():
            raise UserInputError(f"{self.path} is a directory; give the path of a results database file")
        exists = self.path.exists() and self.path.stat().st_size > 0
        if readonly and not exists:
            # an empty file exists: "does not exist" would send the user looking for a typo
            what = "is an empty file" if self.path.exists() else "does not exist"
            raise UserInputError(f"results database {self.path} {what}; run "
                                 f"`dpbench compare --out {self.path}` first")
        if exists:
            self._check_is_ours()  # read-only look before anything is written
            if not readonly:
                self._check_writable()
        elif not readonly:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UserInputError(f"cannot create the directory of {self.path}: {exc.strerror or exc}; "
                                     "choose another --out path") from None
            if not os.access(self.path.parent, os.W_OK):
                raise UserInputError(f"cannot write to {self.path.parent} (permission denied); "
                                     "choose another --out path")
        try:
            if readonly:
                self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1.0)
            else:
                self.conn = sqlite3.connect(self.path, timeout=1.0)
                self._locked(lambda: self.conn.execute("PRAGMA journal_mode=WAL"))
                self.conn.execute("PRAGMA synchronous=NORMAL")
                cols = ", ".join(f"{k} {v}" for k, v in schema.sql_columns().items())
                self._locked(lambda: self.conn.execute(f"CREATE TABLE IF NOT EXISTS results ({cols})"))
                self._add_new_columns()
                self._locked(lambda: self.conn.execute(f"CREATE TABLE IF NOT EXISTS artefacts ({ARTEFACT_COLUMNS})"))
                self._locked(lambda: self.conn.execute(f"CREATE TABLE IF NOT EXISTS runs ({RUNS_COLUMNS})"))
                self._locked(lambda: self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}"))
                self.conn.commit()
        except sqlite3.Error as exc:
            raise UserInputError(f"cannot open {self.path} as a results database ({exc}); "
                                 "choose another --out path") from None

    def _check_is_ours(self) -> None:
        """Refuse, without writing to it, a file that is not an intact dpbench results database of a
        compatible version: the whole schema is validated (tables, every stored column's type, the
        primary keys, the version) before the first write, because a later write would find the
        difference only after adding columns to another program's table (issue 24)."""
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=LOCK_WAIT_SECONDS)
            try:
                tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                info = {t: {r[1]: (r[2].upper(), r[5]) for r in con.execute(f"PRAGMA table_info({t})")}
                        for t in ("results", "artefacts", "runs") if t in tables}
                version = con.execute("PRAGMA user_version").fetchone()[0]
                # a damaged page was read by compare (a traceback) but not by report and export
                # (exit 0): every command checks the file's structure the same way, before using it
                check = con.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise UserInputError(f"{self.path} is not a dpbench results database (not an SQLite file); "
                                     "choose another path") from None
            raise UserInputError(_damaged(self.path, str(exc))) from None
        if check != "ok":
            raise UserInputError(_damaged(self.path, str(check).splitlines()[0]))
        if "results" not in tables:
            raise UserInputError(f"{self.path} is another program's SQLite database (tables: "
                                 f"{', '.join(tables) or 'none'}); dpbench leaves it untouched: choose another path")
        if version > SCHEMA_VERSION:
            raise UserInputError(f"{self.path} was written by a newer dpbench (results schema {version}, this one reads "
                                 f"up to {SCHEMA_VERSION}); upgrade dpbench or choose another --out path")
        problems = schema_problems(info)
        if problems:
            raise UserInputError(f"{self.path} is not a dpbench results database of a compatible version "
                                 f"({'; '.join(problems[:3])}); dpbench leaves it untouched: choose another path")

    def _check_writable(self) -> None:
        """Refuse, before any trial is computed, an existing database this process cannot write: SQLite
        opened a read-only file and the first INSERT failed after the trial's work was done."""
        for target, what in ((self.path, "the file"), (self.path.parent, "its directory (SQLite's journal)")):
            if not os.access(target, os.W_OK):
                raise UserInputError(f"{self.path} cannot be written ({what} is read-only); make it writable "
                                     "(chmod u+w) or choose another --out path")

    def _add_new_columns(self) -> None:
        """Add the schema's columns that a database written by an earlier version lacks."""
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(results)")}
        sql = schema.sql_columns()
        for name in [c.name for c in schema.COLUMNS if c.name not in have]:
            self._locked(lambda name=name: self.conn.execute(f"ALTER TABLE results ADD COLUMN {name} {sql[name]}"))

    def _locked(self, action):
        """Run a write ``action``; if another process holds the lock, say so and wait for it."""
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):  # changed under a running command
                raise UserInputError(f"{self.path} became read-only ({exc}); make it writable and run the same "
                                     "command again to resume") from None
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
        import sys

        sys.stderr.write(f"dpbench: waiting for {self.path}: another process holds its lock "
                         f"(up to {LOCK_WAIT_SECONDS:g} s)\n")
        self.conn.execute(f"PRAGMA busy_timeout = {int(LOCK_WAIT_SECONDS * 1000)}")
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise UserInputError(f"{self.path} stayed locked by another process for {LOCK_WAIT_SECONDS:g} s; "
                                     "wait for it to finish or choose another --out path") from None
            raise

    def done_keys(self) -> set[str]:
        """Keys of every stored row (used to resume)."""
        return {k for (k,) in self.conn.execute("SELECT key FROM results")}

    def labels(self, keys) -> dict[str, str]:
        """``{key: label}`` of the stored rows among ``keys``: the label names the variant that
        computed a row, work limits included (they are not part of the key)."""
        keys = sorted(keys)
        out = {}
        for i in range(0, len(keys), 500):  # SQLite caps the parameters of one statement
            chunk = keys[i:i + 500]
            out.update(self.conn.execute(f"SELECT key, label FROM results WHERE key IN ({', '.join('?' * len(chunk))})",
                                         chunk).fetchall())
        return out

    def uncertified_keys(self) -> set[str]:
        """Keys of rows whose status is ``uncertified``, or whose trial had no certified ``bss``
        reference to score against (``--retry-uncertified`` re-runs them)."""
        return {k for (k,) in self.conn.execute(f"SELECT key FROM results WHERE {_UNCERTIFIED}")}

    def write(self, rows) -> None:
        """Insert rows in one transaction; a key already present is left untouched unless its row failed or
        was uncertified (a retry replaces it)."""
        rows = list(rows)
        if not rows:
            return
        names = list(schema.names())
        _check_rows(rows, names)
        # a key already present is kept, except a failed or uncertified row, which a retry replaces
        update = ", ".join(f"{k} = excluded.{k}" for k in names if k != "key")
        sql = (f"INSERT INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
               f"ON CONFLICT(key) DO UPDATE SET {update} WHERE results.status = 'failed' OR {_UNCERTIFIED}")
        values = [tuple(_encode(r.get(k)) for k in names) for r in rows]

        def insert():
            with self.conn:
                self.conn.executemany(sql, values)

        self._locked(insert)

    def rows(self, keys=None) -> list[dict]:
        """All rows (or those with the given keys) as dicts, JSON columns left as text."""
        cur = self.conn.execute("SELECT * FROM results ORDER BY data, n, epsilon, method, trial")
        names = [d[0] for d in cur.description]
        out = [dict(zip(names, r)) for r in cur]
        if keys is not None:
            keys = set(keys)
            out = [r for r in out if r["key"] in keys]
        return out

    def export(self, path, fmt: str | None = None) -> int:
        """Write every row to ``path`` as CSV or JSON (by ``fmt`` or the file suffix); returns the count."""
        path = Path(path)
        fmt = (fmt or path.suffix.lstrip(".") or "csv").lower()
        rows = self.rows()
        if fmt == "json":
            for r in rows:
                for k in schema.names(type="json"):
                    if r.get(k):
                        r[k] = json.loads(r[k])
            path.write_text(json.dumps(rows, indent=1))
        elif fmt == "csv":
            with path.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(schema.names()))
                w.writeheader()
                w.writerows(rows)
        else:
            raise UserInputError(f"unknown export format {fmt!r}; use csv or json")
        return len(rows)

    def write_artefacts(self, items) -> int:
        """Store ``(key, method, state)`` preparations (see :meth:`dpbench.api.Selector.save_prepared`).

        Preparations above :data:`ARTEFACT_MAX_BYTES` are skipped; returns the number stored.
        """
        rows = []
        for key, method, state in items:
            text, blob, nbytes = encode_artefact(state)
            if nbytes <= ARTEFACT_MAX_BYTES:
                rows.append((key, ARTEFACT_FORMAT, method, text, blob, nbytes, time.time()))
        def insert():
            with self.conn:
                self.conn.executemany("INSERT OR REPLACE INTO artefacts VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

        if rows:
            self._locked(insert)
        return len(rows)

    def artefact(self, key: str) -> dict | None:
        """The stored preparation under ``key`` (arrays as ndarray), or None."""
        row = self.conn.execute("SELECT json, arrays FROM artefacts WHERE key = ? AND format = ?",
                                (key, ARTEFACT_FORMAT)).fetchone()
        return None if row is None else decode_artefact(row[0], row[1])

    def record_run(self, argv) -> None:
        """Append this run's command and package versions (:func:`package_versions`) to the runs table."""
        row = (time.time(), json.dumps(list(argv)), json.dumps(package_versions(), sort_keys=True))

        def insert():
            with self.conn:
                self.conn.execute("INSERT INTO runs VALUES (?, ?, ?)", row)

        self._locked(insert)

    def runs(self) -> list[dict]:
        """The recorded runs, oldest first (empty for a file written before runs were recorded)."""
        try:
            cur = self.conn.execute("SELECT started, argv, versions FROM runs ORDER BY started")
        except sqlite3.OperationalError:  # no runs table (read-only look at an older file)
            return []
        return [{"started": t, "argv": json.loads(a), "versions": json.loads(v)} for t, a, v in cur]

    def failed_keys(self) -> set[str]:
        """Keys of rows whose status is ``failed`` (``--retry-failed`` re-runs them)."""
        return {k for (k,) in self.conn.execute("SELECT key FROM results WHERE status = 'failed'")}

    def close(self):
        self.conn.close()


def _damaged(path, reason: str) -> str:
    return (f"{path} is a damaged SQLite database ({reason}); restore it from a copy, or salvage its rows with "
            f"`sqlite3 {path} .recover | sqlite3 recovered.db`")


#: Version of the database layout, stored as SQLite's ``user_version`` (0: written before it was kept).
#: A file of a larger version is refused; raise it when a change makes older dpbench misread a file.
SCHEMA_VERSION = 1

#: One row per ``dpbench compare`` run that wrote to the file: when, the command, and the version of
#: every package that can change a result (:func:`package_versions`).
RUNS_COLUMNS = "started REAL, argv TEXT, versions TEXT"

#: Distributions whose versions are recorded with every run (results can depend on each).
RECORDED_PACKAGES = ("dpbench", "numpy", "scipy", "pandas", "scikit-learn", "highspy", "pyomo", "gurobipy",
                     "joblib", "pluggy", "dask", "distributed")


def package_versions() -> dict:
    """``{distribution: version}`` of :data:`RECORDED_PACKAGES` installed here, plus Python's."""
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def schema_problems(info: dict) -> list[str]:
    """What makes tables ``{table: {column: (SQL type, primary-key index)}}`` another layout than dpbench's.

    A nullable results column that a file lacks is not a problem (it was declared later and is added,
    NULL in the old rows); a missing required column, another type, ``key`` not the primary key, or an
    artefacts table of another layout is.
    """
    out = []
    have = info.get("results", {})
    sql = schema.sql_columns()
    missing = [c.name for c in schema.COLUMNS if c.name not in have and not c.nullable]
    if missing:
        out.append(f"missing columns {sorted(missing)}")
    for name, (typ, _) in have.items():
        want = sql.get(name, "").split()[0:1]
        if want and typ != want[0]:
            out.append(f"column {name} is {typ or 'untyped'}, not {want[0]}")
    if have and have.get("key", ("", 0))[1] != 1 or any(pk for c, (_, pk) in have.items() if c != "key"):
        out.append("its primary key is not the column key")
    for table, spec in (("artefacts", ARTEFACT_COLUMNS), ("runs", RUNS_COLUMNS)):
        if table in info:
            want = [part.split()[0] for part in spec.split(", ")]
            if list(info[table]) != want:
                out.append(f"table {table} has columns {list(info[table])}, not {want}")
    return out


def _check_rows(rows, names) -> None:
    """Refuse a row with a field the schema does not declare or without a required one.

    A programming error (a column computed but not declared in :mod:`dpbench.bench.results.schema`
    would otherwise be dropped silently), hence ValueError, not UserInputError.
    """
    known = set(names)
    required = [c.name for c in schema.COLUMNS if not c.nullable]
    for r in rows:
        extra = set(r) - known
        lacking = [k for k in required if r.get(k) is None]
        if extra or lacking:
            raise ValueError(f"result row {r.get('key')!r}: fields {sorted(extra)} not declared in "
                             f"dpbench.bench.results.schema, required fields {lacking} missing")


def _encode(v):
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, sort_keys=True, default=_json_default)
    return v


def _json_default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
