"""The results database: one embedded SQLite file, one row per (trial, method, epsilon).

Rows are written (and committed) as soon as a trial finishes, so an interrupted run loses
nothing and resumes where it stopped: every row carries a key derived from everything that
determines it, and keys already present are skipped. The database uses WAL journaling.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

from ..errors import UserInputError

COLUMNS = {
    "key": "TEXT PRIMARY KEY",
    "method": "TEXT", "label": "TEXT", "config": "TEXT", "data": "TEXT", "setting": "TEXT",
    "n": "INTEGER", "p": "INTEGER", "s": "INTEGER", "epsilon": "REAL", "trial": "INTEGER",
    "seed": "INTEGER", "status": "TEXT", "error": "TEXT", "dp_type": "TEXT", "neighbouring": "TEXT",
    "epsilon_spent": "REAL", "delta": "REAL", "sensitivity": "REAL",
    "n_draws": "INTEGER", "recovery": "REAL", "recovery_prob": "REAL", "f1": "REAL", "topk": "REAL",
    "hamming": "REAL", "objective_gap": "REAL", "prepare_seconds": "REAL", "draw_seconds": "REAL",
    "reference": "TEXT", "reference_support": "TEXT", "supports": "TEXT", "diagnostics": "TEXT",
    "created": "REAL",
}


class ResultStore:
    """SQLite store of per-trial results.

    Parameters
    ----------
    path : str or Path
        Database file; created with its parent directory if missing.

    Raises
    ------
    UserInputError
        If the file exists but is not a dpbench results database.
    """

    def __init__(self, path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            cols = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS results ({cols})")
            have = {r[1] for r in self.conn.execute("PRAGMA table_info(results)")}
        except sqlite3.DatabaseError as exc:
            raise UserInputError(f"{self.path} is not a dpbench results database ({exc}); "
                                 "choose another --out path") from None
        missing = set(COLUMNS) - have
        if missing:
            raise UserInputError(f"{self.path} was written by an incompatible dpbench (missing columns "
                                 f"{sorted(missing)}); choose another --out path")

    def done_keys(self) -> set[str]:
        """Keys of every stored row (used to resume)."""
        return {k for (k,) in self.conn.execute("SELECT key FROM results")}

    def write(self, rows) -> None:
        """Insert rows in one transaction; a key already present is left untouched."""
        rows = list(rows)
        if not rows:
            return
        names = list(COLUMNS)
        sql = f"INSERT OR IGNORE INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        with self.conn:
            self.conn.executemany(sql, [tuple(_encode(r.get(k)) for k in names) for r in rows])

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
                for k in ("setting", "config", "supports", "diagnostics", "reference_support"):
                    if r.get(k):
                        r[k] = json.loads(r[k])
            path.write_text(json.dumps(rows, indent=1))
        elif fmt == "csv":
            with path.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
                w.writeheader()
                w.writerows(rows)
        else:
            raise UserInputError(f"unknown export format {fmt!r}; use csv or json")
        return len(rows)

    def close(self):
        self.conn.close()


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
