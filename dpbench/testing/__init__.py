"""Conformance checks for dpbench plugins, and the brute-force references they use.

A plugin author runs these in their own tests, the way scikit-learn's
``check_estimator`` is run on an estimator, either one test per check::

    from dpbench.testing import parametrize_with_checks
    from my_package.dpbench_plugin import MySelector

    @parametrize_with_checks([MySelector])
    def test_my_plugin_conforms(plugin, check):
        check(plugin)

(test ids ``test_my_plugin_conforms[MySelector-check_selector_draws]``, ...), or all of a
plugin's checks in one call (``check_selector(MySelector, my_param=3)``).

Each check builds tiny problems (C(p, s) at most a few dozen supports), runs the plugin on
them and raises :class:`AssertionError` whose message names the plugin and exactly what is
wrong. dpbench's own test suite runs them over every registered plugin
(``tests/api/test_conformance.py``).

Modules: :mod:`~dpbench.testing.reference` (the brute-force helpers :func:`all_supports`,
:func:`brute_force_scores`, :func:`exponential_mechanism_log_probs`, :func:`chi_square_gof`,
which enumerate every support with :mod:`itertools` and score it with a fresh
:class:`dpbench.core.score.RidgeScore`, independently of the selectors' and oracles' own code
paths); :mod:`~dpbench.testing.checks` (selectors, solvers, generators);
:mod:`~dpbench.testing.losses` (losses and the sensitivity they declare);
:mod:`~dpbench.testing.estimation` (estimation stages); :mod:`~dpbench.testing.audit` (the
privacy audit of a selector class); :mod:`~dpbench.testing.parametrize`
(:func:`parametrize_with_checks`).
"""

from dpbench.testing.audit import audit_selector
from dpbench.testing.checks import (CHI2_ALPHA, CHI2_DRAWS, EPSILONS, LOG_TOL, PROBLEMS, SELECTOR_CHECKS,
                                    check_generator, check_selector, check_selector_declarations,
                                    check_selector_draws, check_selector_log_prob, check_selector_reproducible,
                                    check_selector_stored_preparation, check_solver)
from dpbench.testing.estimation import (ESTIMATOR_CHECKS, check_estimator_declarations, check_estimator_estimates,
                                        check_estimator_gradient_range, check_estimator_objective)
from dpbench.testing.losses import LOSS_CHECKS, check_loss_declarations, check_loss_score, check_loss_sensitivity
from dpbench.testing.parametrize import parametrize_with_checks, plugin_checks
from dpbench.testing.reference import (all_supports, brute_force_scores, chi_square_gof,
                                       exponential_mechanism_log_probs, tiny_problem, tiny_trial)

__all__ = ["check_selector", "check_solver", "check_generator", "audit_selector", "all_supports", "brute_force_scores",
           "exponential_mechanism_log_probs", "chi_square_gof", "tiny_trial", "tiny_problem",
           "parametrize_with_checks", "plugin_checks",
           "check_selector_declarations", "check_selector_draws", "check_selector_reproducible",
           "check_selector_stored_preparation", "check_selector_log_prob", "SELECTOR_CHECKS",
           "check_loss_declarations", "check_loss_score", "check_loss_sensitivity", "LOSS_CHECKS",
           "check_estimator_declarations", "check_estimator_estimates", "check_estimator_objective",
           "check_estimator_gradient_range", "ESTIMATOR_CHECKS",
           "CHI2_ALPHA", "CHI2_DRAWS", "EPSILONS", "LOG_TOL", "PROBLEMS"]
