"""Selectors ``topr``, ``mistakes`` and ``mistakes-ptr``: the swap-level mechanisms of Prastakos, Behdin & Mazumder.

One plugin with three selectors, since they share one preparation (the best support S1 and the
swap levels around it, :data:`dpbench.api.toplist`) and ``mistakes-ptr`` is propose-test-release
around the other two:

* :mod:`.topr` -- the top-R truncated exponential mechanism (docs/methods/topr.md);
* :mod:`.mistakes` -- the exponential mechanism grouped by mistakes (docs/methods/mistakes.md);
* :mod:`.mistakes_ptr` -- ``mistakes`` behind a stability test, ``topr`` as its fallback.
"""

from dpbench.api import hookimpl

from .mistakes import Mistakes
from .mistakes_ptr import MistakesPTR
from .topr import TopR


@hookimpl
def dpbench_selectors():
    return [TopR, Mistakes, MistakesPTR]
