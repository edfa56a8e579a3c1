"""One signal path for every backend: SIGTERM and SIGINT stop a run the same way.

SLURM (and ``kill``) end a job with SIGTERM, a terminal with SIGINT (Ctrl-C). Python's default
SIGTERM action killed the coordinating process at once: no message, exit 143, and the joblib or
dask worker processes with their resource trackers were left running. :func:`stop_on_signals`
turns both signals into :class:`Interrupted` (a ``KeyboardInterrupt``), so one code path stops
every backend: the result generator is closed (joblib terminates its workers, the dask
LocalCluster is closed), the database is closed, the command prints where the finished trials
are and exits 128 + the signal number (130 for SIGINT, 143 for SIGTERM).

A signal that arrives while a trial's rows are being committed (:func:`held`) is raised only
once the commit is done, so a finished trial is never lost between its computation and its row.
"""

from __future__ import annotations

import contextlib
import signal
import threading

#: Signals that stop a run cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal; ``signum`` is its number (exit status ``128 + signum``)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


_state = {"depth": 0, "pending": None, "received": None}


def received() -> int | None:
    """The stop signal received while :func:`stop_on_signals` was active, if any.

    SLURM signals every process of a job: a worker may die of it and its pool report that
    (``TerminatedWorkerError``) before the coordinating process raises :class:`Interrupted`;
    the command then treats the error as the interruption it is.
    """
    return _state["received"]


def _handler(signum, frame):
    _state["received"] = signum
    if _state["depth"]:
        _state["pending"] = signum  # raised when the commit in progress is done
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def held():
    """Defer :data:`STOP_SIGNALS` (installed by :func:`stop_on_signals`) until the block ends."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        pending, _state["pending"] = _state["pending"], None
        if pending is not None and not _state["depth"]:
            raise Interrupted(pending)


@contextlib.contextmanager
def stop_on_signals():
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` (main thread only; elsewhere a no-op).

    The previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _handler) for s in STOP_SIGNALS}
    _state["received"] = None
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def ignore_sigint() -> None:
    """Worker-process initializer: leave SIGINT to the coordinating process, which ends the workers.

    On Linux the worker also asks the kernel to end it when its parent dies (``PR_SET_PDEATHSIG``):
    a coordinating process killed with SIGKILL cannot stop its workers, which then waited forever
    for work, holding the terminal's pipes open.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: the workers end when their queue closes
        pass


def exit_status(exc: BaseException) -> int:
    """128 + the signal number of an :class:`Interrupted` (130 for a plain KeyboardInterrupt)."""
    return getattr(exc, "exit_status", 130)
