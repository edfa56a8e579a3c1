"""The mathematics of dpbench: core types, plugin contracts, the score, privacy mechanisms, the certified oracle and the top-R list.

Nothing in :mod:`dpbench.core` imports the benchmark machinery (:mod:`dpbench.bench`), the command line or a plugin.
"""
