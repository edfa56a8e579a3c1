"""The hooks a dpbench plugin implements (pluggy project name ``"dpbench"``).

A plugin is a module registered under the ``dpbench`` entry-point group, built-in or
third-party alike::

    # pyproject.toml of a third-party package
    [project.entry-points.dpbench]
    myselector = "my_package.dpbench_plugin"

and in that module::

    from dpbench.api import Selector, hookimpl

    class MySelector(Selector):
        name = "mine"
        dp_type = "pure"
        ...

    @hookimpl
    def dpbench_selectors():
        return [MySelector]

A misspelled hook (``dpbench_selector``) is not silently ignored: the plugin manager runs
pluggy's ``check_pending`` and warns once, naming the plugin's distribution, and skips
that plugin; the other plugins still load.
"""

import pluggy

hookspec = pluggy.HookspecMarker("dpbench")
hookimpl = pluggy.HookimplMarker("dpbench")


@hookspec
def dpbench_selectors():
    """Return the :class:`dpbench.api.Selector` subclasses this plugin provides.

    Called once per process, when the plugin registry is first built (``dpbench list``,
    ``dpbench compare``, :func:`dpbench.bench.registry.registry`); the classes are
    instantiated later, once per run, with the user's ``--param`` values.

    Returns
    -------
    list of type
        Classes, not instances. Each must subclass :class:`dpbench.api.Selector`, have a
        non-empty ``name`` unique among all installed selectors, declare ``dp_type`` (one
        of :data:`dpbench.api.DP_TYPES`) and ``neighbouring``, and declare ``params`` as
        a dict of :class:`dpbench.api.Param`. A class failing these checks is skipped
        with one warning naming the plugin's distribution; the others still load.

    Examples
    --------
    ::

        from dpbench.api import Draws, Selector, hookimpl
        from dpbench.core.supports import uniform_supports

        class Uniform(Selector):
            name = "uniform"
            summary = "uniformly random support"
            dp_type = "pure"

            def draw(self, trial, prepared, epsilon, n_draws, rng):
                return Draws(uniform_supports(rng, trial.p, trial.s, n_draws))

        @hookimpl
        def dpbench_selectors():
            return [Uniform]

    Check the class with :func:`dpbench.testing.check_selector` in the plugin's tests.
    """


@hookspec
def dpbench_generators():
    """Return the :class:`dpbench.api.Generator` subclasses (simulation designs) provided.

    Called once per process when the registry is built. Each class has a unique
    non-empty ``name`` and declares as ``params`` every quantity its distribution depends
    on (n, p, s, ...); see :func:`dpbench.testing.check_generator`.

    Returns
    -------
    list of type

    Examples
    --------
    ::

        @hookimpl
        def dpbench_generators():
            return [MyDesign]   # dpbench compare --generator my-design --p 50
    """


@hookspec
def dpbench_solvers():
    """Return the :class:`dpbench.api.Solver` subclasses (best-subset oracles) provided.

    Called once per process when the registry is built. A backend whose software is not
    installed should still be returned: its :meth:`~dpbench.api.Solver.session` raises
    :class:`dpbench.core.errors.SolverLimitError` naming what is missing, so ``dpbench list``
    shows it. See :func:`dpbench.testing.check_solver`.

    Returns
    -------
    list of type

    Examples
    --------
    ::

        @hookimpl
        def dpbench_solvers():
            return [MyMIPBackend]   # dpbench compare --solver my-mip
    """


@hookspec
def dpbench_datasets():
    """Return the :class:`dpbench.api.Dataset` subclasses (real data with provenance) provided.

    Called once per process when the registry is built; :meth:`~dpbench.api.Dataset.load`
    runs only when a run names the data set, so returning a class must not read its file.

    Returns
    -------
    list of type

    Examples
    --------
    ::

        @hookimpl
        def dpbench_datasets():
            return [MyExpressionData]   # dpbench compare --dataset my-expression --s 5
    """


@hookspec
def dpbench_losses():
    """Return a list of :class:`dpbench.core.contracts.loss.Loss` subclasses (best-subset scores).

    Each declares ``name``, its batched per-support score R(S, D) (``score``), its
    sensitivity Delta under replace-one after its preprocessing (``sensitivity``), an upper
    bound on the score (``score_bound``), the labels it needs (``response``) and what an
    oracle needs (``oracle``: ``"least-squares"`` or ``"generic"``; a solver lists the kinds
    it accepts in ``Solver.losses``). Selected with ``--loss NAME``.
    """


@hookspec
def dpbench_estimators():
    """Return the :class:`dpbench.core.contracts.estimation.PrivateEstimator` subclasses (private estimation after selection).

    Called once per process when the registry is built. An estimator fits coefficients on a
    support a selector released, under its own budget epsilon_2 (``--estimate NAME
    --estimate-fraction f``: the run's epsilon splits into (1 - f) epsilon for the selection
    and f epsilon for the estimate; the row's guarantee is their basic composition, see
    :func:`dpbench.core.contracts.estimation.composed_guarantee`, or, for a selection calibrated by an
    accountant, that accountant's composition when tighter,
    :func:`dpbench.core.privacy.accounting.compose_with_pure`).

    Returns
    -------
    list of type
        Classes, not instances. Each must subclass
        :class:`dpbench.core.contracts.estimation.PrivateEstimator`, have a non-empty ``name`` unique among
        the installed estimators, declare ``dp_type`` (one of
        :data:`dpbench.core.contracts.estimation.ESTIMATOR_DP_TYPES`), ``neighbouring`` and a
        non-empty tuple ``losses`` of the loss names its guarantee is proved for (``("*",)``:
        any), and implement ``estimate``, ``objective`` and ``optimum_value``. A class failing
        these checks is skipped with one warning naming the plugin's distribution.

    Examples
    --------
    ::

        from dpbench.api import hookimpl
        from dpbench.api import PrivateEstimator

        class MyOutputPerturbation(PrivateEstimator):
            name = "outpert"
            dp_type = "pure"
            losses = ("least-squares",)
            ...

        @hookimpl
        def dpbench_estimators():
            return [MyOutputPerturbation]   # dpbench compare --estimate outpert
    """
