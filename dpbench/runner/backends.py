"""Running trials on a dask.distributed cluster (optional extra ``dpbench[dask]``).

Workers only compute; the coordinating process receives each trial's rows as it finishes
and is the only writer of the SQLite database. Because every random stream is named by
(seed, setting, trial, method, epsilon), the results equal those of a serial run.
"""

from __future__ import annotations

from dpbench.errors import UserInputError


def dask_results(cfg, tasks, scheduler: str | None = None, jobs: int = 1):
    """Yield the rows of each task as it completes on a dask cluster.

    Parameters
    ----------
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
    from dpbench.runner.execute import run_trial

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
            futures = [client.submit(run_trial, cfg, t, pure=False) for t in tasks]
            for fut in as_completed(futures):
                yield fut.result()
    finally:
        if cluster is not None:
            import logging

            # an interrupted run cancels running tasks: the workers' "ended with CancelledError"
            # warnings are the expected end, not news for the user
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            cluster.close()


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
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        return LocalCluster(n_workers=max(1, int(jobs)), threads_per_worker=1, processes=True, dashboard_address=None)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
