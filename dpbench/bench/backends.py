"""Where trials run: in this process, on joblib worker processes, or on a dask.distributed cluster.

Every backend calls the same worker, ``worker(cfg, task) -> rows``
(:func:`dpbench.bench.run.run_trial`), and yields each task's rows as it finishes; the
coordinating process is the only writer of the SQLite database. Because every random stream is
named by (seed, setting, trial, method, epsilon), the results equal those of a serial run.
"""

from __future__ import annotations

import pickle

from dpbench.bench.signals import ignore_sigint
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.parallel import in_band


def backend_results(worker, cfg, tasks, jobs: int, backend: str, scheduler: str | None = None, on_event=None,
                    load=None):
    """Yield the rows of each task, computed by ``worker(cfg, task)`` on the chosen backend.

    Parameters
    ----------
    worker : callable
        ``worker(cfg, task[, on_event]) -> rows``; it must be importable by name in worker
        processes (a module-level function).
    cfg : RunConfig
    tasks : list of TrialTask
    jobs : int
        Worker processes (``--jobs``); 1 runs in this process.
    backend : {"joblib", "dask"}
    scheduler : str, optional
        Address of a dask scheduler (``--scheduler``); None starts a LocalCluster.
    on_event : callable, optional
        Progress callback, serial runs only.
    load : callable, optional
        ``load(task) -> task`` with its stored preparations, serial runs only (one task's
        preparations in memory at a time).
    """
    if backend == "dask":
        yield from dask_results(worker, cfg, tasks, scheduler, jobs=jobs)
    elif jobs > 1:
        from joblib import Parallel, delayed

        # workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and each worker
        # printed a KeyboardInterrupt traceback; the coordinating process stops them (signals module)
        par = Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered", initializer=ignore_sigint)
        yield from par(delayed(worker)(cfg, t) for t in tasks)
    else:
        for t in tasks:
            rows = worker(cfg, load(t) if load else t, on_event)
            t.prepared = {}
            yield rows


def dask_results(worker, cfg, tasks, scheduler: str | None = None, jobs: int = 1):
    """Yield the rows of each task as it completes on a dask cluster.

    Parameters
    ----------
    worker : callable
        ``worker(cfg, task) -> rows`` (:func:`backend_results`).
    cfg : RunConfig
    tasks : list of TrialTask
    scheduler : str, optional
        Address of an existing ``dask.distributed`` scheduler (``tcp://host:8786``);
        None starts a ``LocalCluster`` for the duration of the run.
    jobs : int
        Worker processes of that LocalCluster (``--jobs``; one thread each, because the
        numerical kernels are single-threaded per trial). Ignored with ``scheduler``.

    Raises
    ------
    UserInputError
        If dask.distributed is not installed or the scheduler cannot be reached.
    """
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UserInputError("--backend dask needs dask.distributed: pip install 'dpbench[dask]'") from None

    cluster = None
    try:
        if scheduler:
            try:
                client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError, ValueError, TypeError) as exc:  # ValueError: not an address
                raise UserInputError(f"cannot reach the dask scheduler at {scheduler} ({exc}); check the address "
                                     "or omit --scheduler to start a LocalCluster") from None
        else:
            cluster = _local_cluster(LocalCluster, jobs)
            client = Client(cluster)
        with client:
            # in band: a trial's arrays arrive aligned, so its results are those of a serial run (in_band)
            futures = [client.submit(_run_in_band, worker, in_band((cfg, t)), pure=False) for t in tasks]
            for fut in as_completed(futures):
                yield fut.result()
    finally:
        if cluster is not None:
            import logging

            # an interrupted run cancels running tasks: the workers' "ended with CancelledError"
            # warnings are the expected end, not news for the user
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            cluster.close()


def _run_in_band(worker, blob):
    """``worker(cfg, task)`` in a dask task; ``(cfg, task)`` arrive as
    :func:`~dpbench.core.oracle.parallel.in_band` bytes, so their arrays are aligned."""
    cfg, task = pickle.loads(blob)
    return worker(cfg, task)


def check_scheduler_address(scheduler: str) -> str:
    """Refuse, before the database is opened, a ``--scheduler`` that is not a dask address (``tcp://host:8786``).

    Raises
    ------
    UserInputError
        dask.distributed is missing, or the text does not parse as an address (the parser's reason named).
    """
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:
        raise UserInputError("--backend dask needs dask.distributed: pip install 'dpbench[dask]'") from None
    try:
        scheme, loc = parse_address(scheduler)
        if scheme in ("tcp", "tls"):
            parse_host_port(loc)
    except (ValueError, TypeError) as exc:
        raise UserInputError(f"--scheduler {scheduler!r} is not a dask scheduler address ({exc}); give e.g. "
                             "tcp://host:8786, or omit --scheduler to start a LocalCluster") from None
    return scheduler


def _local_cluster(LocalCluster, jobs: int):
    """A LocalCluster of ``jobs`` single-threaded worker processes that ignore SIGINT.

    Ctrl-C in a terminal reaches the whole process group: each worker process printed a
    KeyboardInterrupt traceback while dpbench itself stopped cleanly (exit status 130). Worker
    processes started while SIGINT is ignored inherit that (POSIX keeps SIG_IGN across exec, and
    Python then installs no KeyboardInterrupt handler); the coordinating process still gets
    Ctrl-C and closes the cluster, which ends the workers.
    """
    import os
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    # The workers' own distributed logging, read from the environment when they start: an interrupted
    # run closes the scheduler under them, and a worker whose heartbeat then failed printed a
    # CommClosedError traceback (seen on a loaded machine). Task errors still reach the user, through
    # the futures' results in this process.
    key, before = "DASK_LOGGING__DISTRIBUTED", os.environ.get("DASK_LOGGING__DISTRIBUTED")
    os.environ[key] = "critical"
    try:
        return LocalCluster(n_workers=max(1, int(jobs)), threads_per_worker=1, processes=True, dashboard_address=None)
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before
        if main:
            signal.signal(signal.SIGINT, previous)
