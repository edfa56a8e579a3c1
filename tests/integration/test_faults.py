"""Fault injection (issue 24): stop ``dpbench compare`` at seeded random points on every backend, resume it, and
check that nothing finished is lost, nothing is stored twice and the rows equal those of an uninterrupted run.

SIGTERM (what SLURM sends at the wall-time limit) and SIGINT (Ctrl-C) must end with a message, exit status
143 / 130, and no worker process or resource tracker left running; SIGKILL (``kill -9``) can only be checked for
the database. The fast slice (one SIGTERM on the serial and the joblib backend) runs in CI; the full matrix
(every backend x SIGTERM / SIGINT / SIGKILL x several seeded points) is marked slow:
``python -m pytest -m slow tests/integration/test_faults.py``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

#: 24 quick trials (a few seconds): long enough to be stopped in the middle.
RUN = ["compare", "--methods", "exhaustive,topr", "--n", "60,80", "--p", "6", "--s", "2", "--trials", "12",
       "--draws", "30", "--eps", "1,2"]
BACKENDS = {"serial": [], "joblib": ["--jobs", "2"], "dask": ["--backend", "dask", "--jobs", "2"]}


def dpbench(args, **kw):
    return subprocess.Popen([sys.executable, "-m", "dpbench.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def rows(db):
    if not Path(db).exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute("SELECT key, status, recovery, supports FROM results ORDER BY key").fetchall()
    except sqlite3.OperationalError:  # the table is not there yet
        return []
    finally:
        con.close()


def descendants(pid: int) -> set[int]:
    """Process ids whose parent chain reaches ``pid`` (from /proc)."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parent.items() if p in frontier} - out
        out |= frontier
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    db = tmp_path_factory.mktemp("faults") / "reference.db"
    p = dpbench([*RUN, "--out", db])
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    return rows(db)


def interrupt_and_resume(tmp_path, reference, backend, sig, seed, group=False):
    """Stop a run with ``sig`` once a seeded random number of rows is stored, resume it, compare.

    ``group``: signal the whole process group, workers included, as SLURM does at the time limit.
    """
    if backend == "dask":
        pytest.importorskip("distributed")
    db = tmp_path / f"{backend}-{sig.name}-{seed}.db"
    total = len(reference)
    at = int(np.random.default_rng(seed).integers(1, total // 2))
    p = dpbench([*RUN, *BACKENDS[backend], "--out", db])
    children: set[int] = set()
    deadline = time.monotonic() + 300
    while len(rows(db)) < at and p.poll() is None and time.monotonic() < deadline:
        children |= descendants(p.pid)
        time.sleep(0.05)
    assert p.poll() is None, f"the run ended before {at} rows: {p.communicate()[1][-500:]}"
    children |= descendants(p.pid)
    if group:
        os.killpg(p.pid, sig)  # the run is its own session (start_new_session)
    else:
        p.send_signal(sig)
    if sig == signal.SIGKILL:
        assert p.wait(timeout=60) == -signal.SIGKILL  # not communicate(): orphans would hold the pipes
        end = time.monotonic() + 30  # the workers end when their parent dies (PR_SET_PDEATHSIG, dask's nanny)
        while any(alive(c) for c in children) and time.monotonic() < end:
            time.sleep(0.1)
        left = [c for c in children if alive(c)]
        for c in left:  # only processes this test started
            os.kill(c, signal.SIGKILL)
        assert not left, f"{backend}: processes left running after the coordinating process was killed"
        p.stdout.close()
        p.stderr.close()
    else:
        try:
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 128 + sig, (p.returncode, err[-800:])
        last = err.strip().splitlines()[-1]
        assert last.startswith("interrupted") and "finished trials are saved" in last, err[-800:]
        if backend != "dask":  # the dask workers' own log may show their connection closing (see docs)
            assert "Traceback" not in err, err[-2000:]
        end = time.monotonic() + 20  # workers and resource trackers end with the run, not later
        while any(alive(c) for c in children) and time.monotonic() < end:
            time.sleep(0.1)
        assert not [c for c in children if alive(c)], "processes left running after the run stopped"
    kept = rows(db)
    assert len(kept) >= at  # nothing committed was lost (a commit is atomic, even under SIGKILL)
    # every row kept is the uninterrupted run's row
    ref = {r[0]: r for r in reference}
    assert all(ref[r[0]] == r for r in kept)
    p = dpbench([*RUN, *BACKENDS[backend], "--out", db])
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-800:]
    assert rows(db) == reference  # nothing lost, nothing twice, the same results whatever the history


@pytest.mark.parametrize("backend, group", [("serial", False), ("joblib", True)])
def test_sigterm_keeps_finished_trials_and_stops_workers(tmp_path, reference, backend, group):
    interrupt_and_resume(tmp_path, reference, backend, signal.SIGTERM, seed=24, group=group)


@pytest.mark.full
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_faults_on_every_backend(tmp_path, reference, backend, sig, group):
    # one seeded stopping point per case, a different one for each (backend, signal, target)
    seed = 100 * sorted(BACKENDS).index(backend) + 2 * int(sig) + group
    interrupt_and_resume(tmp_path, reference, backend, sig, seed=seed, group=group)
