"""What the commands of the command line share: the consoles, the guarantee note, output paths, opening a results database."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console

from dpbench.core.errors import UserInputError

# Outside a terminal (logs, CI) rich would wrap at 80 columns; the tables are laid out for 100.
console = Console() if Console().is_terminal else Console(width=100)
err_console = Console(stderr=True)

GUARANTEE_NOTE = ("guarantee: the privacy guarantee that holds for every trial of the row (pure ε, (ε, δ)) or "
                  "'none: <reason>'; trials with and without a guarantee are never averaged together: the "
                  "'(no guarantee)' rows below each setting are the trials where the method's guarantee did not "
                  "hold (e.g. a data-dependent condition failed, an uncertified oracle, a non-private baseline)")


def check_output_path(path, flag: str) -> Path:
    """Refuse, before any work, an output file that cannot be written (one line, the reason named).

    Raises
    ------
    UserInputError
        ``path`` is a directory, its directory does not exist or is not writable.
    """
    path = Path(path)
    if path.is_dir():
        raise UserInputError(f"{flag} {path} is a directory; give a file name, e.g. {path / 'out'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        above = next((a for a in parent.parents if a.exists()), None)  # /dev/null/sub: a file on the way
        if above is not None and not above.is_dir():
            raise UserInputError(f"{flag} {path}: {above} is a file (Not a directory); choose another path")
        raise UserInputError(f"{flag} {path}: directory {parent} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK):
        raise UserInputError(f"{flag} {path}: cannot write to directory {parent} (permission denied)")
    return path


def open_existing(path):
    from dpbench.bench.results.store import ResultStore

    return ResultStore(path, readonly=True)


def summary_from_db(path):
    """Summary rows of every configuration stored in a results database."""
    from dpbench.bench.evaluation.metrics import summarize

    store = open_existing(path)
    rows = store.rows()
    store.close()
    for r in rows:
        r["setting"] = json.loads(r["setting"])
    return summarize(rows)
