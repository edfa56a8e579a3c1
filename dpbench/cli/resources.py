"""The one resource guard of ``dpbench compare``: processes, rows and memory, checked before any trial.

No option may start unbounded processes or memory: ``--jobs 1000`` on 2 cores started about
1 000 worker processes (load 33, ~800 leaked semaphores) and ``--draws 1000000000`` was killed by
the kernel at 23 GiB with no message (issue 24). :func:`check_jobs` bounds the processes by the
usable cores, :func:`check_resources` the rows and the memory estimate of the run.
"""

from __future__ import annotations

import os

from dpbench.core.errors import UserInputError


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. a SLURM allocation), else ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: ``--force-jobs`` allows up to this many worker processes per usable core, never more: every
#: option stays bounded (``--jobs 1000`` on 2 cores started 1 000 workers and leaked semaphores).
FORCED_JOBS_PER_CORE = 4


def check_jobs(jobs: int, force: bool = False) -> int:
    """The number of worker processes: at most the usable cores (:func:`usable_cores`); -1 for all of them.

    Parameters
    ----------
    jobs : int
        ``--jobs``: >= 1, or -1.
    force : bool
        ``--force-jobs``: allow up to :data:`FORCED_JOBS_PER_CORE` processes per usable core (e.g. trials
        that wait on a licence server rather than compute).

    Raises
    ------
    UserInputError
        0, a negative number other than -1, or more processes than allowed (the limit is named).
    """
    cores = usable_cores()
    if jobs == -1:
        return cores
    if jobs < 1:
        raise UserInputError(f"--jobs = {jobs} must be a positive number of processes, or -1 for all cores")
    limit = cores * FORCED_JOBS_PER_CORE if force else cores
    if jobs > limit:
        if force:
            raise UserInputError(f"--jobs = {jobs} is more than {FORCED_JOBS_PER_CORE} processes per usable core "
                                 f"({cores} core(s)), even with --force-jobs; give at most --jobs {limit}")
        raise UserInputError(f"--jobs = {jobs} is more than the {cores} usable core(s): more processes only share "
                             f"them; give at most --jobs {cores} (or -1), or add --force-jobs to allow up to "
                             f"{cores * FORCED_JOBS_PER_CORE}")
    return jobs


#: Most result rows one run may plan: every row's key is computed before the first trial (about
#: 20 µs each), so `--trials 100000000000` sat hashing for hours before running out of memory.
MAX_RESULTS = 10_000_000

#: Bytes one private draw holds per (method, ε) row of a trial, in ``bytes = a + b s``: the int64
#: supports (8 s), their Python list of lists for the row (an int object and a pointer per feature,
#: a list header per draw) and the row's JSON text; measured about 190 bytes per draw at s = 3
#: (topr, 10 000 against 200 000 draws, peak RSS), so a + 3b = 312 is a safe upper estimate.
DRAW_BYTES = (120, 64)

#: Above this estimate the run states it before the first trial.
SHOW_MEMORY_ABOVE = 2**30


def memory_estimate(cfgs, jobs: int) -> int:
    """Peak bytes of a run: one trial's data and rows per worker, and the coordinating process's copy.

    A trial holds its data (:func:`dpbench.bench.run.check_memory`'s 24 n p bytes) and, for each of
    its (method, ε) rows, the draws' supports (:data:`DRAW_BYTES`); with ``jobs > 1`` the coordinating
    process receives a finished trial's rows as well.
    """
    worst = 0
    for c in cfgs:
        rows = len(c.methods) * len(c.epsilons)
        for st in c.data:
            s = int(st.get("s") or 1) if not isinstance(st.get("s"), str) else 1
            n, p = (int(st.get("n") or 0), int(st.get("p") or 0))
            data = 24 * n * p
            worst = max(worst, data + c.draws * rows * (DRAW_BYTES[0] + DRAW_BYTES[1] * s))
    return worst * (jobs + 1 if jobs > 1 else 1)


def check_resources(cfgs, jobs: int, err_console) -> int:
    """The one resource guard of ``dpbench compare``, before any trial: rows, memory, processes.

    Refuses a run of more than :data:`MAX_RESULTS` rows and a run whose :func:`memory_estimate`
    (``--draws`` included) exceeds the memory available; states the estimate on stderr when it is
    above :data:`SHOW_MEMORY_ABOVE` (on the rich console ``err_console``). ``jobs`` has passed
    :func:`check_jobs`. Returns the estimate (bytes).

    Raises
    ------
    UserInputError
        Naming the number of rows or the memory needed and available, and the fix.
    """
    from dpbench.bench.config import available_memory

    total = sum(len(c.data) * c.trials * len(c.methods) * len(c.epsilons) for c in cfgs)
    if total > MAX_RESULTS:
        raise UserInputError(f"this run has {total:,} results (data settings x trials x methods x ε), more than "
                             f"{MAX_RESULTS:,}; lower --trials or split the run into several databases")
    need = memory_estimate(cfgs, jobs)
    have = available_memory()
    workers = f" ({jobs} workers and the coordinating process)" if jobs > 1 else ""
    if have is not None and need > have:
        raise UserInputError(f"this run needs about {need / 2**30:.1f} GiB{workers} (--draws {max(c.draws for c in cfgs):,} "
                             f"per (method, ε) of a trial) but only {have / 2**30:.1f} GiB are available; lower "
                             "--draws or --jobs")
    if need > SHOW_MEMORY_ABOVE:
        err_console.print(f"[dim]memory estimate: about {need / 2**30:.1f} GiB{workers}; "
                          f"{(have or 0) / 2**30:.1f} GiB available[/dim]")
    return need
