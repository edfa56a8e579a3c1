"""The one output channel for machine-readable output (``--json`` on stdout, ``export -o -``).

What a program reads from ``dpbench ... --json`` must be exactly the JSON,
whatever a solver library prints: HiGHS 1.16 prints a banner from C++ on file descriptor 1 when it
is created (issue 24), which ``sys.stdout`` cannot intercept.
"""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def machine_stdout():
    """The one channel of machine-readable output (``--json``, ``export -o -``): yield a binary stream on the
    real standard output while file descriptor 1 points at stderr.

    Solver libraries print on file descriptor 1 from C/C++ (HiGHS 1.16 prints a banner when it is
    created, whatever its options), which Python's ``sys.stdout`` cannot intercept: the JSON no longer
    parsed. During the block everything else written on stdout (C stdio, Python prints, rich) goes to
    stderr, and only what the caller writes to the yielded stream reaches the real stdout. C's stdio
    buffers are flushed before fd 1 is restored, so nothing printed inside arrives after the JSON.
    """
    sys.stdout.flush()
    try:
        real = os.path.sameopenfile(sys.stdout.fileno(), 1)
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
        real = False
    if not real:  # sys.stdout is a Python object (a test's capture, a notebook): the output goes there
        yield _BytesToText(sys.stdout)
        return
    fd = 1  # the descriptor C libraries write to, whatever object sys.stdout is
    saved = os.dup(fd)
    os.dup2(2, fd)
    out = os.fdopen(os.dup(saved), "wb")
    try:
        yield out
    finally:
        try:
            sys.stdout.flush()
            _flush_c_stdio()
            out.flush()  # ENOSPC and EPIPE surface here, inside main()'s handlers
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            try:
                out.close()
            except OSError:
                pass


class _BytesToText:
    """A binary ``write`` onto a text stream."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, data: bytes) -> int:
        buffer = getattr(self.stream, "buffer", None)
        if buffer is not None:  # binary output (Parquet) as it is
            self.stream.flush()
            return buffer.write(data)
        return self.stream.write(data.decode("utf-8", errors="replace"))

    def flush(self) -> None:
        self.stream.flush()


def _flush_c_stdio() -> None:
    """fflush(NULL): C libraries' buffered stdout, written to the fd it had when it was printed."""
    import ctypes

    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to speak of (not POSIX)
        pass


def stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail (and print) again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured in tests)
        pass
