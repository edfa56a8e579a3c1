"""The one trial constructor and the one set of privacy defaults (issue 14, item 1)."""

import inspect

import numpy as np
import pytest

from dpbench import UserInputError
from dpbench.sklearn import DPSubsetSelector, select
from dpbench.core.privacy.sensitivity import sensitivity
from dpbench.core.problem import Problem
from dpbench.bench.config import COMPARE_DEFAULTS
from dpbench.bench.trial import PrivacySetup, Trial
from dpbench.bench.registry import PluginInstances


def _problem(seed=0, n=30, p=6, s=2):
    rng = np.random.default_rng(seed)
    X = 2 * rng.standard_normal((n, p))
    y = X[:, :s].sum(axis=1) + rng.standard_normal(n)
    return Problem(X, y, s, true_support=np.arange(s))


def test_from_problem_clips_as_declared_and_hides_the_true_support():
    prob = _problem()
    setup = PrivacySetup(b_x=0.5, b_y=0.25, r=2.0, lam=3.0, sensitivity_bound="paper", delta=1e-6)
    clipped = Trial.from_problem(prob, setup, preprocessing="clip", instances=PluginInstances())
    assert clipped.problem.true_support is None
    assert np.abs(clipped.problem.X).max() == 0.5 and np.abs(clipped.problem.y).max() == 0.25
    np.testing.assert_array_equal(clipped.problem.X, np.clip(prob.X, -0.5, 0.5))
    assert clipped.sensitivity == sensitivity(2, 0.5, 0.25, 2.0, "paper")
    assert (clipped.lam, clipped.r, clipped.delta) == (3.0, 2.0, 1e-6)
    raw = Trial.from_problem(prob, setup, preprocessing="none", instances=PluginInstances())
    assert raw.problem.true_support is None
    np.testing.assert_array_equal(raw.problem.X, prob.X)
    assert prob.true_support is not None  # the runner's copy keeps it for evaluation
    with pytest.raises(UserInputError, match="preprocessing 'scale'"):
        Trial.from_problem(prob, setup, preprocessing="scale", instances=PluginInstances())


def test_privacy_defaults_are_written_once():
    d = PrivacySetup()
    assert (COMPARE_DEFAULTS["b_x"], COMPARE_DEFAULTS["b_y"], COMPARE_DEFAULTS["r"], COMPARE_DEFAULTS["lam"],
            COMPARE_DEFAULTS["sensitivity"], COMPARE_DEFAULTS["delta"]) == (
        d.b_x, d.b_y, d.r, d.lam, d.sensitivity_bound, d.delta)
    sig = inspect.signature(select).parameters
    assert (sig["b_x"].default, sig["b_y"].default, sig["r"].default, sig["lam"].default,
            sig["sensitivity_bound"].default, sig["delta"].default) == (d.b_x, d.b_y, d.r, d.lam, d.sensitivity_bound, d.delta)
    est = DPSubsetSelector()
    assert (est.b_x, est.b_y, est.r, est.lam, est.sensitivity_bound) == (d.b_x, d.b_y, d.r, d.lam, d.sensitivity_bound)
    t = Trial(_problem(), instances=PluginInstances())
    assert (t.b_x, t.b_y, t.r, t.lam, t.sensitivity_bound, t.delta) == (
        d.b_x, d.b_y, d.r, d.lam, d.sensitivity_bound, d.delta)


def test_select_reports_the_guarantee_and_uses_the_declared_preprocessing():
    prob = _problem(1, n=80, p=6)
    res = select("exhaustive", prob.X, prob.y, s=2, epsilon=1.0, random_state=0)
    assert res.guarantee == "pure ε=1"
    res = select("bss", prob.X, prob.y, s=2, epsilon=1.0, random_state=0, solver="enumerate")
    assert res.guarantee == "none: not private"


@pytest.mark.parametrize("method, key, value, shown", [
    ("dpsis", "gamma", "1.5", "[0, 1]"),
    ("mcmc", "iterations", "-1", "[0, inf)"),
    ("mcmc", "l1_bound", "0", "(0, inf)"),
    ("mcmc", "l1_bound", "inf", "(0, inf)"),
    ("mistakes-ptr", "ptr_fraction", "1", "(0, 1)"),
    ("sampagg", "alpha", "nan", "(0, inf)"),
])
def test_plugin_parameters_declare_their_range(method, key, value, shown):
    from dpbench.bench.registry import registry

    cls = registry().selector(method)
    with pytest.raises(UserInputError, match=rf"{method}\.{key}='{value}' must lie in {shown}".replace("[", r"\[")
                       .replace("(", r"\(").replace(")", r"\)")):
        cls(**{key: value})
    cls(**{key: cls.params[key].default})  # the default is in range
