"""The conformance checks of losses and estimation stages have power: each broken variant of a
built-in (a sensitivity or constant declared too small, noise that ignores the rng, an objective
in other units) fails the check of the property it breaks, and the built-ins pass (tests/api/
test_conformance.py runs them over every registered plugin)."""

import dataclasses

import numpy as np
import pytest

from dpbench.bench.registry import registry
from dpbench.testing import (ESTIMATOR_CHECKS, LOSS_CHECKS, check_estimator_estimates, check_estimator_gradient_range,
                             check_estimator_objective, check_loss_score, check_loss_sensitivity,
                             parametrize_with_checks, plugin_checks)

REG = registry()
LeastSquares, Hinge = REG.loss("least-squares"), REG.loss("hinge")
ObjPert = REG.estimator("objpert")


def _scaled_sensitivity(base, factor):
    class Scaled(base):
        name = f"{base.name}-scaled"

        def sensitivity(self, s, n, b_x, b_y, r, kind="tight"):
            return factor * super().sensitivity(s, n, b_x, b_y, r, kind)

    return Scaled


@pytest.mark.parametrize("base", [LeastSquares, Hinge], ids=lambda c: c.name)
def test_a_loss_declaring_half_its_sensitivity_fails(base):
    check_loss_sensitivity(base)
    with pytest.raises(AssertionError, match=r"above the declared sensitivity\('tight'\) = .* not private"):
        check_loss_sensitivity(_scaled_sensitivity(base, 0.5))


def test_a_score_above_its_declared_bound_fails():
    class LowBound(LeastSquares):
        name = "low-bound"

        def score_bound(self, n, b_y):
            return 1e-3

    with pytest.raises(AssertionError, match=r"expected a finite value in \[0, score_bound = 0.001\]"):
        check_loss_score(LowBound)


class _NoNoise(ObjPert):
    name = "no-noise"

    def estimate(self, trial, supports, epsilon, rng):
        return super().estimate(trial, supports, epsilon, np.random.default_rng(0))


class _HalfGradient(ObjPert):
    name = "half-gradient"

    def calibration(self, trial, epsilon):
        cal = super().calibration(trial, epsilon)
        return dataclasses.replace(cal, gradient_range=cal.gradient_range / 2)


class _OtherUnits(ObjPert):
    name = "other-units"

    def objective(self, trial, supports, coef):
        return super().objective(trial, supports, coef) * trial.n


@pytest.mark.parametrize("cls, check, message", [
    (_NoNoise, check_estimator_estimates, r"different rng seeds give identical estimates"),
    (_HalfGradient, check_estimator_gradient_range, r"gradient_range = .* apart: the noise is calibrated below"),
    (_OtherUnits, check_estimator_objective, r"objective at the exact minimiser of \[\d, \d\] is .* but optimum_value"),
], ids=["no-noise", "half-gradient-range", "objective-in-other-units"])
def test_a_broken_estimation_stage_fails_the_check_of_its_fault(cls, check, message):
    check(ObjPert)
    with pytest.raises(AssertionError, match=message):
        check(cls)


def test_checks_by_kind_and_their_ids():
    assert [c.__name__ for c in plugin_checks(LeastSquares)] == [c.__name__ for c in LOSS_CHECKS]
    assert [c.__name__ for c in plugin_checks((ObjPert, {"jacobian_share": 0.3}))] == [c.__name__ for c in
                                                                                          ESTIMATOR_CHECKS]
    mark = parametrize_with_checks([Hinge, (ObjPert, {"jacobian_share": 0.3})])
    names, cases = mark.args
    assert names == "plugin, check"
    assert [c.id for c in cases] == ([f"Hinge-{c.__name__}" for c in LOSS_CHECKS]
                                     + [f"ObjectivePerturbation-{c.__name__}" for c in ESTIMATOR_CHECKS])
    # the parameters reach the class: a share outside (0, 1) is refused by the stage itself
    bad = plugin_checks((ObjPert, {"jacobian_share": 2.0}))[1]
    with pytest.raises(Exception, match="jacobian_share"):
        bad(ObjPert)
    with pytest.raises(TypeError, match="subclasses none of"):
        plugin_checks(int)
