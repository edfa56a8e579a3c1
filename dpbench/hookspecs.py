"""The hooks a dpbench plugin implements (pluggy project name ``"dpbench"``).

A plugin is a module registered under the ``dpbench`` entry-point group, built-in or
third-party alike::

    # pyproject.toml of a third-party package
    [project.entry-points.dpbench]
    myselector = "my_package.dpbench_plugin"

and in that module::

    from dpbench import hookimpl, Selector

    class MySelector(Selector):
        name = "mine"
        dp_type = "pure"
        ...

    @hookimpl
    def dpbench_selectors():
        return [MySelector]
"""

import pluggy

hookspec = pluggy.HookspecMarker("dpbench")
hookimpl = pluggy.HookimplMarker("dpbench")


@hookspec
def dpbench_selectors():
    """Return a list of :class:`dpbench.base.Selector` subclasses this plugin provides.

    Each declares ``name``, ``dp_type`` ("pure", "approximate" or "none"),
    ``neighbouring`` and its ``params``.
    """


@hookspec
def dpbench_generators():
    """Return a list of :class:`dpbench.base.Generator` subclasses (simulation designs)."""


@hookspec
def dpbench_solvers():
    """Return a list of :class:`dpbench.base.Solver` subclasses (best-subset oracles)."""


@hookspec
def dpbench_datasets():
    """Return a list of :class:`dpbench.base.Dataset` subclasses (real data with provenance)."""
