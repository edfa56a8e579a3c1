"""Running ``dpbench`` in process and reading what it printed or stored."""

from __future__ import annotations

import hashlib
from pathlib import Path

from dpbench.cli.main import main

#: The smallest useful simulated run: one trial of p = 8, n = 60, s = 2 with five draws.
TINY = ["--p", "8", "--n", "60", "--s", "2", "--trials", "1", "--draws", "5"]


def sha256(path) -> str:
    """The hex SHA-256 of a file (to show a refused command left it byte for byte as it was)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def error_lines(err: str) -> list[str]:
    """The lines of stderr that are not warnings or waiting notices."""
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("dpbench: warning")
            and not ln.startswith("dpbench: waiting")]


def run(capsys, *args) -> tuple[int, str]:
    """``dpbench *args`` in process: its exit status and stderr, which must hold no traceback."""
    code = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def one_error(capsys, *args) -> str:
    """Run ``dpbench *args``; assert exit status 2 and exactly one ``dpbench: error:`` line; return it."""
    code, err = run(capsys, *args)
    lines = error_lines(err)
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("dpbench: error:"), err
    return lines[0]
