"""One BLAS thread for the branch and bound's small products.

A node's products are small (a working set of about a hundred columns, one O(n p) product), and
on the 2-core machine the hand-offs of a multithreaded BLAS cost more than the arithmetic.
:func:`one_blas_thread` limits BLAS (numpy's and scipy's, which the compiled kernels call) to
one thread for the duration of a search or a relaxation.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

_CONTROLLER = []
_NESTED = threading.local()


@contextmanager
def one_blas_thread():
    """A context limiting BLAS to one thread, from one cached controller (node relaxations and
    branch-and-bound searches: their products are small, and on the 2-core machine the thread
    hand-offs of a multithreaded BLAS cost more than the arithmetic).

    ``threadpool_limits`` rescans the loaded libraries (``/proc/self/maps``) on every call:
    15 ms each, 7 s of 120 s of node relaxations at n = 200, p = 10 000 (478 calls). Inside an
    active context of the same thread (every node relaxation of a branch and bound) nothing is
    set again: the controller's own limit and restore cost about 30 microseconds a node.
    """
    if getattr(_NESTED, "depth", 0):
        _NESTED.depth += 1
        try:
            yield
        finally:
            _NESTED.depth -= 1
        return
    if not _CONTROLLER:
        # scipy's own BLAS/LAPACK is what the compiled kernels call (numba binds scipy's LAPACK):
        # load it first, or the controller would not know it and its threads would stay unlimited
        # (measured: the working-set kernel 1.6 ms per call instead of 0.7 at n = 200, p = 10 000)
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    with _CONTROLLER[0].limit(limits=1, user_api="blas"):
        _NESTED.depth = 1
        try:
            yield
        finally:
            _NESTED.depth = 0
