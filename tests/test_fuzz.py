"""Fuzz tests (issue 24): malformed data files and option values from a seeded generator.

Every case ends in one of two ways: accepted (a data file that reads into finite arrays of matching shapes; a
command line that reaches the runner), or refused with one line, exit status 2, no traceback, and the
existing results database byte for byte unchanged. Any other exception fails the test with the case that
raised it. The fast slice runs in CI; ``python -m pytest -m slow tests/test_fuzz.py`` runs ten times more cases.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from dpbench.cli.main import main
from dpbench.core.datafiles import load_table
from dpbench.core.errors import UserInputError

GOOD_CSV = "a,b,c,y\n0.1,2,3,1.5\n-1,0.5,2,0.2\n3,1,-2,2.5\n0.7,0.1,1,-1\n"

#: Text pieces a mutation inserts: separators, quotes, missing-value tokens, extreme numbers, bad bytes.
PIECES = [",", ";", "\t", '"', "\n", "\r\n", "", "nan", "NA", "inf", "-inf", "1e308", "-1e308", "1e-320", "abc",
          "\ufeff", "0x10", "1,5", " ", "y", "a", "#", "\x00", "é", "1e999", "--", "True"]


def mutate_csv(rng) -> bytes:
    text = GOOD_CSV
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 5))
        i = int(rng.integers(0, len(text) + 1))
        if op == 0:  # insert a piece
            text = text[:i] + PIECES[int(rng.integers(len(PIECES)))] + text[i:]
        elif op == 1:  # delete a span
            text = text[:i] + text[i + int(rng.integers(1, 6)):]
        elif op == 2:  # replace every separator
            text = text.replace(",", PIECES[int(rng.integers(0, 3))])
        elif op == 3:  # truncate
            text = text[:i]
        else:  # duplicate a line
            lines = text.split("\n")
            j = int(rng.integers(len(lines)))
            text = "\n".join(lines[:j] + [lines[j]] + lines[j:])
    raw = text.encode("utf-8")
    if rng.random() < 0.1:  # bytes that are not UTF-8
        k = int(rng.integers(0, len(raw) + 1))
        raw = raw[:k] + bytes(rng.integers(128, 256, 3).astype(np.uint8)) + raw[k:]
    return raw


def random_npz(rng) -> bytes:
    n, p = int(rng.integers(0, 6)), int(rng.integers(0, 4))
    kinds = [lambda: rng.normal(size=(n, p)), lambda: rng.normal(size=(n,)), lambda: rng.normal(size=(n, p, 2)),
             lambda: np.full((n, p), 1e308), lambda: rng.normal(size=(n, p)) * 1j, lambda: np.array(["x"] * n),
             lambda: np.zeros((n, 2)), lambda: np.ones(n), lambda: np.array(7.0), lambda: np.full(n, np.nan)]
    arrays = {}
    for key in ("X", "y", "feature_names", "other"):
        if rng.random() < 0.7:
            arrays[key] = kinds[int(rng.integers(len(kinds)))]()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    raw = buf.getvalue()
    if rng.random() < 0.2:  # a damaged archive
        k = int(rng.integers(0, len(raw)))
        raw = raw[:k] if rng.random() < 0.5 else raw[:k] + b"\xff\x00garbage" + raw[k + 9:]
    if rng.random() < 0.05:
        raw = GOOD_CSV.encode()  # text named .npz
    return raw


def case(rng, i) -> tuple[str, bytes]:
    kind = int(rng.integers(0, 4))
    if kind == 0:
        return "d.csv", mutate_csv(rng)
    if kind == 1:
        return "d.csv.gz", gzip.compress(mutate_csv(rng)) if rng.random() < 0.8 else mutate_csv(rng)
    if kind == 2:
        return "d.tsv", mutate_csv(rng).replace(b",", b"\t")
    return "d.npz", random_npz(rng)


def check_reader(tmp_path, seed: int, count: int):
    rng = np.random.default_rng(seed)
    for i in range(count):
        name, raw = case(rng, i)
        path = tmp_path / f"{i}-{name}"
        path.write_bytes(raw)
        try:
            t = load_table(path, "y")
        except UserInputError as exc:
            msg = str(exc)
            assert msg and "\n" not in msg and str(path) in msg or "data file" in msg, (i, name, raw[:200], msg)
            continue
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"case {i} ({name}, {raw[:120]!r}): {type(exc).__name__}: {exc}")
        # accepted: finite arrays of matching shapes whose squares do not overflow
        assert t.X.ndim == 2 and t.y.shape == (t.X.shape[0],) and t.X.shape[1] == len(t.feature_names) >= 1
        assert np.isfinite(t.X).all() and np.isfinite(t.y).all()
        with np.errstate(over="raise"):
            (t.X ** 2).sum(axis=0), (t.y ** 2).sum()
        assert np.ptp(t.y) > 0


def test_data_readers_fuzz(tmp_path):
    check_reader(tmp_path, seed=24, count=150)


@pytest.mark.full
def test_data_readers_fuzz_full(tmp_path):
    check_reader(tmp_path, seed=2024, count=1500)


# ----------------------------------------------------------------------------- command line

BASE = ["compare", "--methods", "exhaustive,topr", "--n", "40", "--p", "5", "--s", "2", "--trials", "1",
        "--draws", "5"]
#: Values an option may be given; most are wrong for most options.
VALUES = ["", "0", "-1", "-2", "1", "2.5", "nan", "inf", "-inf", "1e308", "abc", "1,1", ",", "1,,2", "true",
          "99999999999999999999999", "1e9", "topr", "toeplitz", "highs", "tight", "dask", "serial", "log", "x.y=1",
          "exhaustive.limit=0", "topr.R=-1", "toeplitz.rho=2", "tcp://", "-", "/dev/null/x", " ", "é"]


class Accepted(Exception):
    """The command line reached the runner (the fuzz test stops it there: no trial is computed)."""


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("fuzz") / "r.db"
    assert main([*BASE, "--out", str(db)]) == 0
    return db


def check_cli(tmp_path, fuzz_db, capsys, monkeypatch, seed: int, count: int):
    from dpbench.bench import run as runner
    from dpbench.bench.config import OPTIONS

    def stop(*a, **k):
        raise Accepted

    monkeypatch.setattr(runner, "execute", stop)
    flags = [o.flag for o in OPTIONS if o.name not in ("out", "json", "config")] + ["--retry-failed", "--force-jobs"]
    rng = np.random.default_rng(seed)
    for i in range(count):
        db = tmp_path / f"r{i}.db"  # a fresh copy: an accepted case's connection stays open on its own file
        shutil.copy(fuzz_db, db)
        before = sha(db)
        argv = list(BASE)
        for _ in range(int(rng.integers(1, 4))):
            flag = flags[int(rng.integers(len(flags)))]
            argv += [flag] if flag in ("--retry-failed", "--force-jobs") else [flag, VALUES[int(rng.integers(len(VALUES)))]]
        argv += ["--out", str(db)]
        capsys.readouterr()
        try:
            status = main(argv)
        except Accepted:
            continue
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"case {i} {argv}: {type(exc).__name__}: {exc}")
        err = capsys.readouterr().err.strip()
        if status == 0:  # every row was already in the database (resumed): nothing to run
            continue
        assert status == 2, (argv, status, err)
        assert err.count("\n") == 0 and "Traceback" not in err and err.startswith("dpbench: error:"), (argv, err)
        assert sha(db) == before, (" ".join(argv), err, "the database changed")


def test_command_line_fuzz(tmp_path, fuzz_db, capsys, monkeypatch):
    check_cli(tmp_path, fuzz_db, capsys, monkeypatch, seed=24, count=60)


@pytest.mark.full
def test_command_line_fuzz_full(tmp_path, fuzz_db, capsys, monkeypatch):
    check_cli(tmp_path, fuzz_db, capsys, monkeypatch, seed=2024, count=600)


#: Options of the commands that only read a database, with values to draw from.
READ_ONLY = {"report": {"--interval": ["wilson", "bootstrap", "x", ""], "--markdown": ["r.md", "r.html", "", "/dev/null/x", "."],
                        "--html": ["r.html", "", "/dev/null/x"]},
             "export": {"-o": ["x.csv", "x.json", "x.parquet", "x.txt", "-", "", ".", "/dev/null/x"],
                        "--format": ["csv", "json", "parquet", "xml", ""]},
             "plot": {"--x": ["n", "epsilon", "p", "method", "nonsense", ""], "--metric": ["recovery", "f1", "time", "x"],
                      "-o": ["f.png", "f.xyz", "", "/dev/null/f.png"], "--hue": ["method", "n", "zzz"],
                      "--col": ["epsilon", "trial", "q"]}}


def test_read_only_commands_fuzz(tmp_path, fuzz_db, capsys, monkeypatch):
    """report / export / plot with random option values: exit 0 or one line with exit 2; the database unchanged."""
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(7)
    before = sha(fuzz_db)
    for i in range(40):
        command = sorted(READ_ONLY)[int(rng.integers(len(READ_ONLY)))]
        argv = [command, str(fuzz_db)]
        for flag, values in READ_ONLY[command].items():
            if rng.random() < 0.7 or flag == "-o":
                argv += [flag, values[int(rng.integers(len(values)))]]
        capsys.readouterr()
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's own exit (its usage error is one line too)
            status = exc.code
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"case {i} {argv}: {type(exc).__name__}: {exc}")
        err = capsys.readouterr().err.strip()
        assert status in (0, 2), (argv, status, err)
        if status == 2:
            assert err.count("\n") == 0 and "Traceback" not in err and err.startswith("dpbench: error:"), (argv, err)
        assert sha(fuzz_db) == before, argv
