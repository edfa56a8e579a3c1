"""A plugin author's own conformance test, as the README shows it: one test per (plugin, check).

The package next to this file (``dpbench_coinflip``) stands for a third party's: pytest puts this
folder on ``sys.path``, as it does for a plugin repository whose tests sit beside its package.
"""

from dpbench.testing import parametrize_with_checks
from dpbench_coinflip.plugin import CoinFlip
from dpbench_coinflip.random_example import RandomSupport


@parametrize_with_checks([CoinFlip, RandomSupport])
def test_plugin_conforms(plugin, check):
    check(plugin)
