"""One pytest test per (plugin, conformance check), as scikit-learn's ``parametrize_with_checks``."""

from __future__ import annotations

import functools

from dpbench.core.contracts.data import Generator
from dpbench.core.contracts.oracle import Solver
from dpbench.core.contracts.selector import Selector
from dpbench.core.contracts.estimation import PrivateEstimator
from dpbench.core.contracts.loss import Loss
from dpbench.testing.checks import SELECTOR_CHECKS, check_generator, check_solver
from dpbench.testing.estimation import ESTIMATOR_CHECKS
from dpbench.testing.losses import LOSS_CHECKS

#: The checks of each plugin kind, by the contract class a plugin subclasses (first match wins).
CHECKS_BY_CONTRACT = (
    (Selector, SELECTOR_CHECKS),
    (Solver, (check_solver,)),
    (Generator, (check_generator,)),
    (Loss, LOSS_CHECKS),
    (PrivateEstimator, ESTIMATOR_CHECKS),
)


def plugin_checks(plugin) -> list:
    """The conformance checks of one plugin class, each bound to the plugin's parameters.

    Parameters
    ----------
    plugin : type or (type, dict)
        A plugin class, or a class with the keyword parameters its checks pass to ``cls(**params)``.

    Returns
    -------
    list of callable
        Each takes the class and raises :class:`AssertionError` on a violation; its
        ``__name__`` is the check's name (``check_selector_log_prob``, ...).

    Raises
    ------
    TypeError
        When the class subclasses none of the contracts (selector, solver, generator, loss,
        estimation stage): data sets have no conformance check yet.
    """
    cls, params = plugin if isinstance(plugin, tuple) else (plugin, {})
    for contract, checks in CHECKS_BY_CONTRACT:
        if isinstance(cls, type) and issubclass(cls, contract):
            out = []
            for check in checks:
                bound = functools.partial(check, **params)
                functools.update_wrapper(bound, check)
                out.append(bound)
            return out
    raise TypeError(f"{cls!r} subclasses none of Selector, Solver, Generator, Loss, PrivateEstimator: no checks apply")


def _plugin_id(cls) -> str:
    return getattr(cls, "__name__", repr(cls))


def parametrize_with_checks(plugins):
    """A ``pytest.mark.parametrize`` over every (plugin, conformance check) pair, one test id each.

    The test receives ``plugin`` (the class) and ``check`` (call it with the class); its id is
    ``<class name>-<check name>``, so a failing property is named in the test report::

        from dpbench.testing import parametrize_with_checks
        from my_package.dpbench_plugin import MySelector

        @parametrize_with_checks([MySelector, (MyOtherSelector, {"iterations": 50})])
        def test_my_plugins_conform(plugin, check):
            check(plugin)

    gives ``test_my_plugins_conform[MySelector-check_selector_draws]``,
    ``test_my_plugins_conform[MySelector-check_selector_log_prob]``, and so on. The checks
    are those of the plugin's kind: the parts of :func:`dpbench.testing.check_selector`,
    :func:`~dpbench.testing.check_solver`, :func:`~dpbench.testing.check_generator`, the loss
    checks (:func:`~dpbench.testing.check_loss_sensitivity`, ...) and the estimation-stage
    checks (:func:`~dpbench.testing.check_estimator_estimates`, ...).

    Parameters
    ----------
    plugins : iterable of type or (type, dict)
        Plugin classes, each optionally with the keyword parameters of ``cls(**params)``.

    Returns
    -------
    pytest.MarkDecorator
        ``pytest.mark.parametrize("plugin, check", ...)``.

    Raises
    ------
    TypeError
        For a class that subclasses none of the plugin contracts.
    """
    import pytest  # only a test needs pytest; importing dpbench.testing does not

    cases = []
    for plugin in plugins:
        cls = plugin[0] if isinstance(plugin, tuple) else plugin
        for check in plugin_checks(plugin):
            cases.append(pytest.param(cls, check, id=f"{_plugin_id(cls)}-{check.__name__}"))
    return pytest.mark.parametrize("plugin, check", cases)
